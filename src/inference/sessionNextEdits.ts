// A next-edit request in the worker, from the loaded models to the answer: which model
// serves it (the next-edit model's slot, inference/nextEditModelSlot.ts: the target when none is
// configured or it is the target's file, else the next-edit model loaded on first use), the prompt
// built by the request's format (nextEdit/generation.ts formatFor), tokenized with its control tokens,
// decoded on the window's own KV sequence (`window N · next edit`, inference/promptStates.ts) by
// nextEdit/generation.ts, its final edits streamed as they become final, and the model's window
// reduced to edits. Every native call goes through the context gate (inference/contextGate.ts): a
// completion that arrives takes the context between two of them, and the next edit resumes after it
// on its own sequence. InferenceSession holds a SessionNextEdits; its own file stays about completions.
import type { NgramIndex } from '../ngram';
import { formatFor, generateNextEdit, StreamedEdits } from '../nextEdit/generation';
import { noNextEdit } from '../nextEdit/noSuggestion';
import type { NextEditPrompt, NextEditRequest, NextEditResult, TextReplacement } from '../nextEdit/types';
import type { Token } from '../shared/decoding';
import type { SpeculationSettings } from '../shared/settings';
import { DraftModelProposer } from '../speculation/draftModelProposer';
import type { GreedyEvaluator } from '../speculation/greedyEvaluator';
import type { SpeculationPolicy } from '../speculation/policy';
import { type ContextGate, ParkedAbort } from './contextGate';
import { textProposers } from './documentNgrams';
import type { SequenceEvaluator } from '../llama/sequenceEvaluator';
import type { LlamaToken } from '../llama/llamaTypes';
import type { NextEditModelSlot } from './nextEditModelSlot';
import { DEFAULT_OWNER, type SequenceEvaluators } from './promptStates';

/** What a next-edit request of the session is run with beyond the request. */
export interface NextEditOptions {
  owner?: string;
  speculation: SpeculationSettings;
  policy: SpeculationPolicy;
  /**
   * The next-edit model's local file (draftline.nextEdit.model, resolved by the host): '' or
   * absent, the target serves; the target's own file, the target on its own KV sequences; another
   * file, that model, loaded by the first request that names it.
   */
  model?: string;
  /** Told the file just before llama.cpp reads it, when this request loads the next-edit model (a native abort then is that file's). */
  onNativeLoad?(file: string): void;
  /** A final edit, as soon as it is final; `ms` from the request's start (once its model is loaded). */
  onEdit?(edit: TextReplacement, ms: number): void;
  /** The next edit parks for a completion / resumes (the worker's count of running generations). */
  onPark?(): void;
  onResume?(): void;
}

/** A completion took the next edit's KV sequence while it parked (every sequence was in use). */
export class SequenceTaken extends Error {
  constructor(owner: string) {
    super(`a completion took the KV sequence of ${owner} while it waited (all sequences were in use)`);
  }
}

/**
 * An evaluator whose native calls wait for the context gate: between two of them a completion may
 * take the context; after such a wait the sequence must still be the owner's (else SequenceTaken).
 */
function gated(evaluator: GreedyEvaluator, gate: ContextGate, signal: AbortSignal | undefined, hooks: { onPark?(): void; onResume?(): void; check(): void }): GreedyEvaluator {
  return {
    get tokens() {
      return evaluator.tokens;
    },
    get capacity() {
      return evaluator.capacity;
    },
    append: (input, outputs, withConfidence, expected) => gate.evaluate(() => evaluator.append(input, outputs, withConfidence, expected), signal, hooks),
    truncate: (length) => gate.evaluate(() => evaluator.truncate(length), signal, hooks),
    ...(evaluator.removeRange ? { removeRange: (start: number, end: number) => gate.evaluate(() => evaluator.removeRange!(start, end), signal, hooks) } : {}),
    ...(evaluator.appendRanked
      ? {
          appendRanked: (input: readonly Token[], outputs: number, top: number, withProbabilities?: boolean) =>
            gate.evaluate(() => evaluator.appendRanked!(input, outputs, top, withProbabilities), signal, hooks),
        }
      : {}),
  };
}

/**
 * The next edits of one InferenceSession: its next-edit model (the slot: the target until next edits
 * name a file of their own, loaded then) and its requests, one at a time, on the session's context
 * gate and n-gram index. Nothing queues here: the worker's scheduler starts one at a time, and a
 * second one while one runs throws (a scheduling bug).
 */
export class SessionNextEdits {
  /** The request running, or null. */
  private running: Promise<unknown> | null = null;

  constructor(
    readonly models: NextEditModelSlot,
    private readonly session: { gate: ContextGate; documents: NgramIndex },
    /** The session's speculation settings and policy, for a request that brings none. */
    private readonly defaults: () => Pick<NextEditOptions, 'speculation' | 'policy'>,
  ) {}

  /**
   * A next-edit request on `owner`'s own KV sequence (the worker names it `window N · next edit`) of
   * the next-edit model (`options.model`: loaded by the first request that names it; the target
   * when none), its final edits to `onEdit` as they become final. Completions come first: one that
   * arrives takes the context between two of its evaluations, and it resumes after. Never throws for
   * a cancel, a taken sequence or a next-edit file that cannot be loaded (the result says why there
   * is no suggestion).
   */
  async run(request: NextEditRequest, signal?: AbortSignal, overrides: Partial<NextEditOptions> = {}): Promise<NextEditResult> {
    const defaults = this.defaults();
    const options: NextEditOptions = { ...overrides, speculation: overrides.speculation ?? defaults.speculation, policy: overrides.policy ?? defaults.policy };
    if (this.running) throw new Error('SessionNextEdits: a next-edit request started while another was running (a scheduling bug)');
    let finished!: () => void;
    const running = new Promise<void>((resolve) => (finished = resolve));
    this.running = running;
    try {
      // The model that serves it: loaded first when this is the first request to name its file.
      const serving = await this.models.serving(options.model, options);
      if ('problem' in serving) return noNextEdit(request, 'error', serving.problem);
      const { gate, documents } = this.session;
      const { owner = DEFAULT_OWNER, speculation } = options;
      const { model, info, evaluator } = serving.model;
      const tokenize = (text: string, specials: boolean) => model.tokenize(text, specials) as Token[];
      const started = performance.now();
      // A prompt built already is decoded as it is; its format reads the output. The model's GGUF identity chooses the format.
      const format = formatFor(request.prompt ? { ...request, format: request.prompt.format } : request, { ...info, basename: model.fileInfo.metadata?.general?.basename ?? null });
      if ('none' in format) return noNextEdit(request, 'noFormat', format.none);
      let prompt: NextEditPrompt;
      try {
        prompt = request.prompt ?? format.buildPrompt(request);
      } catch (error) {
        return noNextEdit(request, 'error', `the ${format.id} prompt could not be built: ${(error as Error).message}`, { format: format.id });
      }
      const base = { format: format.id, region: prompt.region };
      // Control tokens parsed (`<|file_sep|>` as one token); BOS first when the model wants one.
      const promptTokens = [...(info.addBos && info.bos !== null ? [info.bos] : []), ...tokenize(prompt.prompt, true)];
      // The window's tokens may all be rewritten: room for the prompt, the output and a proposal.
      if (promptTokens.length + prompt.maxTokens + 8 > evaluator.capacity) {
        return noNextEdit(request, 'error', `the ${format.id} prompt (${promptTokens.length} tokens) and ${prompt.maxTokens} new tokens do not fit a KV sequence of ${evaluator.capacity}`, base);
      }
      if (signal?.aborted) return noNextEdit(request, 'cancelled', 'cancelled before it started', base);
      let parks = 0;
      const onPark = () => {
        parks++;
        options.onPark?.();
      };
      const hooks = {
        onPark,
        onResume: options.onResume,
        check: () => {
          if (!serving.holds(owner, state.target)) throw new SequenceTaken(owner);
        },
      };
      let state!: SequenceEvaluators<SequenceEvaluator>;
      try {
        // Taking (or loading back) the sequence is native work too: it waits for completions like a step.
        state = await gate.evaluate(() => serving.sequenceFor(owner, promptTokens), signal, { onPark, onResume: options.onResume });
        const streamed = new StreamedEdits(format, prompt, request);
        const generation = await generateNextEdit({
          target: gated(state.target, gate, signal, hooks),
          tokenize,
          detokenize: (tokens) => model.detokenize(tokens as readonly LlamaToken[], false),
          // llama.cpp's end-of-generation tokens only: the format's stop texts end the window (not the FIM template's stops).
          isEndToken: (token) => model.isEogToken(token as LlamaToken),
          prompt,
          promptTokens,
          mode: request.mode,
          policy: options.policy,
          proposers: [
            state.draft ? new DraftModelProposer(gated(state.draft, gate, signal, hooks), speculation.draftMinConfidence) : undefined,
            // The open documents' tokens are the target's: another vocabulary's model gets the local n-grams only.
            ...textProposers(serving.targetVocabulary ? documents : null, request.documentKey, speculation, options.policy, {}),
          ],
          signal,
          finalEdits: (text) => streamed.finalSoFar(text),
          onEdit: (edit) => options.onEdit?.(edit, performance.now() - started),
        });
        const result: NextEditResult = {
          ...base,
          output: generation.text,
          ...streamed.finish(generation.text),
          ...(generation.timeToFirstEditMs !== undefined ? { timeToFirstEditMs: generation.timeToFirstEditMs } : {}),
          stats: generation.stats,
          ...(parks > 0 ? { yieldedToCompletions: parks } : {}),
        };
        if (signal?.aborted) return { ...result, edits: [], noSuggestion: { reason: 'cancelled', detail: 'cancelled while decoding' } };
        return result;
      } catch (error) {
        if (error instanceof ParkedAbort || (signal?.aborted && !(error instanceof SequenceTaken))) return noNextEdit(request, 'cancelled', 'cancelled while waiting for a completion', base);
        if (error instanceof SequenceTaken) return noNextEdit(request, 'cancelled', error.message, base);
        // The library's state is unknown after a failed evaluation: start the sequence afresh (the gate: no completion runs meanwhile).
        if (state) await gate.evaluate(() => state.target.reset()).catch(() => undefined);
        throw error;
      }
    } finally {
      if (this.running === running) this.running = null;
      finished();
    }
  }

  /** Once the request running ends (aborted, it ends at its next step): the next-edit model goes. */
  async dispose(): Promise<void> {
    await this.running;
    await this.models.dispose();
  }
}
