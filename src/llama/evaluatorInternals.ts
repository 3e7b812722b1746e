import type { LlamaContextSequence, LlamaModel } from './llamaTypes';
import type { Token } from '../shared/decoding';

/**
 * The few node-llama-cpp internals the direct, native and device paths use (the same in 3.21.1 and
 * 3.22.1). They are checked once when the evaluator is made (`directInternals`); anything missing
 * selects the library path instead.
 */
export interface NativeContext {
  /**
   * 3.21: (index, sampler, probabilities, confidence) → token, or [token, probabilities, confidence]
   * when a flag is given; 3.22 adds `logits` and `totalLogitWeight` ([3], [4]). An argument a version
   * does not know is ignored, and its result slot stays empty.
   */
  sampleToken(
    batchLogitIndex: number,
    sampler: NativeSampler,
    probabilities?: boolean,
    confidence?: boolean,
    logits?: boolean,
    totalLogitWeight?: boolean,
  ): Promise<number | [number, unknown, number | undefined, unknown, number | undefined]>;
}
export interface NativeSampler {
  applyConfig(config: object): void;
  dispose(): void;
}
export interface SequenceInternals {
  _decodeTokens(
    tokens: Token[],
    logits: boolean[],
    priority: number,
    tokenMeter: unknown,
    contextShift: unknown,
    mapper: (batchLogitIndex: number, tokenIndex: number) => unknown,
    afterBatch?: unknown,
  ): Promise<unknown>;
  /** Checkpoints for models whose cache cannot be cut back freely (SWA, recurrent), as controlledEvaluate takes them. */
  _takeIntervalCheckpointIfNeededAfterBatch?: unknown;
  _resolveSamplerConfig(options: { temperature: number }): object;
  _tokenMeter: unknown;
  _contextShift: unknown;
  _context: { _ctx: NativeContext };
  /** The llama.cpp sequence id (the device path attaches its sampler to it). */
  _sequenceId?: number;
}
export interface ModelInternals {
  _model: unknown;
  _llama: { _bindings: { AddonSampler: new (model: unknown) => NativeSampler } };
}

export interface LlamaInternals {
  seq: SequenceInternals;
  model: ModelInternals;
}

/** The token of a native sampleToken answer (a bare token, or [token, …] when options were given). */
export function sampledToken(result: Awaited<ReturnType<NativeContext['sampleToken']>>): number {
  return Array.isArray(result) ? result[0] : result;
}

/** The library's default evaluation priority (only one sequence per context here: it never competes). */
const EVALUATION_PRIORITY = 5;

/** The internals of `sequence` and `model`, or null when this node-llama-cpp version lacks any of them. */
export function directInternals(sequence: LlamaContextSequence, model: LlamaModel | undefined): LlamaInternals | null {
  const seq = sequence as unknown as Partial<SequenceInternals>;
  const m = model as unknown as Partial<ModelInternals> | undefined;
  const ok =
    typeof seq._decodeTokens === 'function' &&
    typeof seq._resolveSamplerConfig === 'function' &&
    typeof seq._context?._ctx?.sampleToken === 'function' &&
    seq._contextShift !== undefined &&
    m?._model !== undefined &&
    typeof m._llama?._bindings?.AddonSampler === 'function';
  return ok ? { seq: seq as SequenceInternals, model: m as ModelInternals } : null;
}

/** A native greedy sampler (temperature 0, no penalties or grammar) for `internals`' model. */
export function createGreedySampler(internals: LlamaInternals): NativeSampler {
  const { model, seq } = internals;
  const sampler = new model._llama._bindings.AddonSampler(model._model);
  sampler.applyConfig(seq._resolveSamplerConfig({ temperature: 0 }));
  return sampler;
}

/** Outputs are read after the whole call: they must all come from its last batch. */
export function checkOutputsFit(batchSize: number, inputLength: number, outputs: number): void {
  if (outputs > 1 && inputLength > batchSize) throw new Error(`${inputLength} tokens with ${outputs} outputs exceed one batch of ${batchSize}`);
}

/**
 * Decodes `input` in one call through the library's decoder, with outputs at positions
 * `firstOutput`.. of it, writing the batch output index of each into `batchIndexes` (at least
 * input.length - firstOutput long). The caller checks that the outputs fit one batch (checkOutputsFit).
 */
export async function decodeWithOutputs(seq: SequenceInternals, input: readonly Token[], firstOutput: number, batchIndexes: Int32Array): Promise<void> {
  const count = input.length - firstOutput;
  batchIndexes.fill(-1, 0, count);
  await seq._decodeTokens(
    input.slice(),
    input.map((_, i) => i >= firstOutput),
    EVALUATION_PRIORITY,
    seq._tokenMeter,
    seq._contextShift,
    (batchLogitIndex, tokenIndex) => {
      batchIndexes[tokenIndex - firstOutput] = batchLogitIndex;
      // Not a promise: the library would chain the positions one after another, each a native call.
      return 0;
    },
    seq._takeIntervalCheckpointIfNeededAfterBatch,
  );
  const missing = count > 0 ? batchIndexes.subarray(0, count).indexOf(-1) : -1;
  if (missing >= 0) throw new Error(`no output for input position ${firstOutput + missing}`);
}
