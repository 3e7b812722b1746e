// The benchmark sees a task as the editor would: the engine's document view and the ghost text a
// raw completion becomes after the engine's post-processing.
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, type EngineDocument } from '../src/engine/completionEngine';
import { DEFAULT_SPECULATION, type InferenceSession } from '../src/inference/inferenceSession';
import { loadBenchSession } from './decodePath';
import type { CompletionRequest, LocalCompletionResult } from '../src/shared/completion';
import type { ModelSettings } from '../src/shared/settings';
import type { SourceId } from '../src/shared/decoding';
import { sourceStats } from '../src/shared/generationStats';
import { currentLineSuffix, defaultFilters, postprocess, type ShownCompletion } from '../src/postprocess';
import type { BenchTask } from './corpus';
import { scoreShown, type TimedCompletion } from './quality';

export function engineDocument(task: BenchTask): EngineDocument {
  return {
    uri: `bench:${task.file}`,
    languageId: /\.tsx?$/.test(task.file) ? 'typescript' : 'javascript',
    offset: task.offset,
    tabSize: 2,
    insertSpaces: true,
    length: task.text.length,
    slice: (s, e) => task.text.slice(s, e),
  };
}

/**
 * The ghost text a raw completion becomes: the same post-processing as CompletionEngine.complete,
 * with how many characters of the rest of the cursor's line it replaces (only before-auto-closed
 * tasks have any there: the others hide the rest of that line). Score it with scoreShown.
 */
export function shownText(raw: string, request: CompletionRequest, doc: EngineDocument, maxLines: number): ShownCompletion {
  const ctx = { prefix: request.prefix, suffix: request.suffix, languageId: doc.languageId, tabSize: doc.tabSize, insertSpaces: doc.insertSpaces };
  return postprocess(raw, ctx, defaultFilters(maxLines));
}

/** The benches' --flash-attention value: auto (Draftline's default, measured per CPU model at load), on or off. */
export function flashAttentionOption(value: string | undefined): NonNullable<ModelSettings['flashAttention']> {
  const v = value ?? 'auto';
  if (v !== 'auto' && v !== 'on' && v !== 'off') throw new Error(`--flash-attention ${v}: expected auto, on or off`);
  return v;
}

export interface BenchSessionOptions {
  threads: number;
  maxTokens: number;
  gpu: ModelSettings['gpu'];
  flashAttention?: ModelSettings['flashAttention'];
  log: (level: string, message: string) => void;
  /** Model settings beyond these (a regime that compares one of them). */
  models?: Partial<ModelSettings>;
}

/**
 * A session on a pair with a 2048 context, and an engine used only to build requests as the editor
 * would (the regimes call the session themselves, to time it).
 */
export async function benchSession(pair: { target: string; draft: string }, opts: BenchSessionOptions): Promise<{ session: InferenceSession; engine: CompletionEngine }> {
  const session = await loadBenchSession(
    { targetModel: pair.target, draftModel: pair.draft, gpu: opts.gpu, gpuLayers: 'auto', threads: opts.threads, contextSize: 2048, flashAttention: opts.flashAttention, ...opts.models },
    DEFAULT_SPECULATION,
    opts.log,
  );
  const engine = new CompletionEngine({ complete: () => Promise.reject(new Error('unused')) }, { ...DEFAULT_ENGINE_SETTINGS, maxTokens: opts.maxTokens, timeBudgetMs: 0 });
  return { session, engine };
}

/** Sums of decode runs of one mode, against plain decoding of the same requests. */
export interface DecodeTally {
  tasks: number;
  /** Tokens after the first (which the prompt's evaluation yields). */
  tokens: number;
  /** Target evaluations while decoding (the prompt's left out). */
  evaluations: number;
  decodeMs: number;
  /** Tokens the tallied source proposed, and of those the target kept. */
  proposed: number;
  accepted: number;
  /** Runs whose tokens equal plain decoding's. */
  identical: number;
}

export const emptyTally = (): DecodeTally => ({ tasks: 0, tokens: 0, evaluations: 0, decodeMs: 0, proposed: 0, accepted: 0, identical: 0 });

export function tallyDecode(tally: DecodeTally, result: LocalCompletionResult, plain: LocalCompletionResult, source: SourceId): void {
  const s = result.stats;
  tally.tasks++;
  tally.tokens += Math.max(0, s.generatedTokens - 1);
  tally.evaluations += s.speculation.targetEvaluations - 1;
  tally.decodeMs += s.totalMs - s.promptMs;
  tally.proposed += sourceStats(s.speculation, source).proposedTokens;
  tally.accepted += sourceStats(s.speculation, source).acceptedTokens;
  if (result.tokens.length === plain.tokens.length && result.tokens.every((t, i) => t === plain.tokens[i])) tally.identical++;
}

/** One completion timed end to end, scored as the ghost text it becomes against the task's truth. */
export async function timedCompletion(session: InferenceSession, request: CompletionRequest, doc: EngineDocument, task: BenchTask, maxLines: number): Promise<TimedCompletion> {
  const t0 = performance.now();
  const r = await session.complete(request);
  const latencyMs = performance.now() - t0;
  return {
    latencyMs,
    ttftMs: r.stats.timeToFirstTokenMs,
    promptTokens: r.stats.promptTokens,
    promptTokensEvaluated: r.stats.promptTokens - r.stats.reusedPromptTokens,
    quality: scoreShown(shownText(r.text, request, doc, maxLines), currentLineSuffix(request), task.truth),
  };
}
