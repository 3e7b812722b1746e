// Evicted, not lost: when a prompt state's KV sequence is taken for another owner (every sequence
// was in use), its cells are saved to a file first, and loaded back when that owner's prompt comes
// again, where that beats evaluating it (loading a long prompt's state costs a small fraction of
// evaluating it: npm run bench:sequences). llama-server does the same with its RAM prompt
// cache (--cache-ram: prompt_save / prompt_load). Files live in a private temporary folder, at most
// a byte budget of them (the least recently saved go first), removed with the session.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Token } from '../shared/decoding';
import { commonPrefixLength } from '../speculation/greedyEvaluator';
import { describeOwner } from './promptStates';

/** Shorter prompts are evaluated again: a state file costs more than they do. */
export const MIN_SAVED_TOKENS = 64;
/** A saved state is loaded only when it holds at least this many more of the prompt than the sequence does. */
export const MIN_RESTORE_GAIN = 32;

/** What saving and loading needs of a sequence (LlamaSequenceEvaluator). */
export interface StatefulSequence {
  readonly tokens: readonly Token[];
  saveState(file: string): Promise<number>;
  loadState(file: string): Promise<void>;
}

interface SavedState {
  file: string;
  tokens: readonly Token[];
  bytes: number;
}

export class SavedPromptStates {
  private dir: string | null = null;
  /** By owner, the least recently saved first. */
  private readonly saved = new Map<string, SavedState>();
  private nextFile = 0;
  /** Loads that replaced evaluating the prompt, and the prompt tokens they saved evaluating. */
  restored = 0;
  restoredTokens = 0;

  constructor(
    /** Bytes of state files kept at most. */
    private readonly maxBytes: number,
    private readonly log: (message: string) => void = () => undefined,
  ) {}

  get bytes(): number {
    let total = 0;
    for (const s of this.saved.values()) total += s.bytes;
    return total;
  }

  get count(): number {
    return this.saved.size;
  }

  /** Saves `owner`'s sequence before another owner takes it; failures are logged, never thrown. */
  async save(owner: string, sequence: StatefulSequence): Promise<void> {
    if (sequence.tokens.length < MIN_SAVED_TOKENS || this.maxBytes <= 0) return;
    try {
      this.dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-kv-'));
      const file = path.join(this.dir, `${this.nextFile++}.state`);
      const bytes = await sequence.saveState(file);
      this.forget(owner);
      this.saved.set(owner, { file, tokens: [...sequence.tokens], bytes });
      // The oldest go first, never the one just saved.
      for (const [other] of this.saved) {
        if (this.bytes <= this.maxBytes || other === owner) break;
        this.forget(other);
      }
      if (this.bytes > this.maxBytes) this.forget(owner);
    } catch (error) {
      this.log(`saving the KV state of ${describeOwner(owner)} failed (${(error as Error).message}); its prompt is evaluated again when it comes back`);
    }
  }

  /**
   * Loads `owner`'s saved state into `sequence` when it holds more of `prompt` than the sequence's
   * cache does now (by MIN_RESTORE_GAIN); returns whether it did. A failed load leaves the sequence
   * empty (the prompt is then evaluated), and is logged.
   */
  async restore(owner: string, prompt: readonly Token[], sequence: StatefulSequence): Promise<boolean> {
    const state = this.saved.get(owner);
    if (!state) return false;
    const gain = commonPrefixLength(state.tokens, prompt) - commonPrefixLength(sequence.tokens, prompt);
    if (gain < MIN_RESTORE_GAIN) return false;
    try {
      await sequence.loadState(state.file);
      this.restored++;
      this.restoredTokens += gain;
      return true;
    } catch (error) {
      this.forget(owner);
      this.log(`loading the saved KV state of ${describeOwner(owner)} failed (${(error as Error).message}); its prompt is evaluated again`);
      return false;
    }
  }

  /** Drops the saved states of owners `matches` accepts (a window that went away). */
  release(matches: (owner: string) => boolean): void {
    for (const owner of [...this.saved.keys()]) if (matches(owner)) this.forget(owner);
  }

  dispose(): void {
    this.saved.clear();
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
    this.dir = null;
  }

  private forget(owner: string): void {
    const state = this.saved.get(owner);
    if (!state) return;
    this.saved.delete(owner);
    fs.rmSync(state.file, { force: true });
  }
}
