// The KV sequences the session's prompts decode on: one per prompt state (a window's completions, its
// next edits…: inference/promptStates.ts), and on disk the cells of prompts whose sequence another
// owner took, loaded back when that owner returns (inference/savedPromptStates.ts).
import type { SequenceEvaluator } from '../llama/sequenceEvaluator';
import type { KvSequencesReport } from '../shared/backendInfo';
import type { Token } from '../shared/decoding';
import type { RuntimeLog } from './llamaRuntime';
import type { LoadedPair } from './loadedPair';
import { describeOwner, PromptStates, type SequenceEvaluators, type SequenceReport } from './promptStates';
import { SavedPromptStates } from './savedPromptStates';
import { kvBytesPerToken } from './sequenceBudget';

/** Evicted prompts' KV states kept on disk: at most this many sequences' worth, and at most SAVED_STATES_MAX_BYTES. */
const SAVED_STATES_PER_SEQUENCE = 4;
const SAVED_STATES_MAX_BYTES = 512 * 2 ** 20;

export class PromptSequences {
  /** The KV sequences, one per prompt state (window and task). */
  readonly states: PromptStates<SequenceEvaluator>;
  /** The KV states of prompts whose sequence another owner took, to load back when they return. */
  private readonly saved: SavedPromptStates;

  constructor(
    pair: Pick<LoadedPair, 'target' | 'draft' | 'sequences'>,
    private readonly log: RuntimeLog,
  ) {
    this.states = new PromptStates(pair.target.sequences, pair.draft?.sequences ?? null, kvBytesPerToken(pair.target.info), (message) => log('info', message));
    // Room for a few evicted prompts' states on disk (each a sequence's cells at most), 512 MiB at most.
    const sequenceBytes = pair.sequences.bytesPerSequence;
    this.saved = new SavedPromptStates(Math.max(sequenceBytes, Math.min(SAVED_STATES_MAX_BYTES, SAVED_STATES_PER_SEQUENCE * sequenceBytes)), (message) => log('warn', message));
  }

  /**
   * The KV sequence `owner`'s prompt decodes on. When it takes one from another owner, that owner's
   * cells are saved first; when the owner's own saved state holds more of the prompt than the
   * sequence it got, it is loaded back.
   */
  async for(owner: string, prompt: readonly Token[]): Promise<SequenceEvaluators<SequenceEvaluator>> {
    const state = this.states.acquire(owner, prompt);
    if (state.evicted !== null) await this.saved.save(state.evicted, state.target);
    if (state.taken && (await this.saved.restore(owner, prompt, state.target))) {
      this.log('info', `KV state of ${describeOwner(owner)} loaded back (${state.target.tokens.length} tokens) instead of evaluating its prompt again`);
    }
    return state;
  }

  /** The live KV sequences: whose prompt each holds, its tokens and their bytes (Show Stats); the saved states. */
  report(): KvSequencesReport & { sequences: SequenceReport[]; saved: NonNullable<KvSequencesReport['saved']> } {
    return { sequences: this.states.report(), evictions: this.states.evictions, saved: { count: this.saved.count, bytes: this.saved.bytes, restored: this.saved.restored } };
  }

  /** Frees the sequences and saved states of owners `matches` accepts: others may take them. */
  release(matches: (owner: string) => boolean): void {
    this.states.release(matches);
    this.saved.release(matches);
  }

  /** Removes the saved states' files (the sequences belong to the pair). */
  dispose(): void {
    this.saved.dispose();
  }
}
