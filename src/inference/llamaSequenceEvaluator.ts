import type { LlamaContextSequence, LlamaModel } from './llamaTypes';
import type { Token } from '../shared/types';
import type { EvaluatedNext, GreedyEvaluator } from '../speculation/greedyEvaluator';

/**
 * How the greedy token after each output position is read:
 * - `direct`: node-llama-cpp's batch decoder and one native greedy sampler created once per evaluator
 *   (bench/PROFILE.md: the library's `controlledEvaluate` sets up a sampler per call and per
 *   position, and chains the positions' sampling one after another: 0.26-0.81 ms a step outside the
 *   forward pass on the tiny target, about a fifth of its step);
 * - `library`: `controlledEvaluate`, the public API, when the internals `direct` needs are missing
 *   (another node-llama-cpp version) — slower, same tokens.
 */
export type EvaluatorPath = 'direct' | 'library';

/**
 * The few node-llama-cpp 3.22.1 internals the direct path uses. They are checked once when the
 * evaluator is made (`directInternals`); anything missing selects the library path instead.
 */
interface NativeContext {
  sampleToken(
    batchLogitIndex: number,
    sampler: NativeSampler,
    probabilities?: boolean,
    confidence?: boolean,
    logits?: boolean,
    totalLogitWeight?: boolean,
  ): Promise<number | [number, unknown, unknown, unknown, number | undefined]>;
}
interface NativeSampler {
  applyConfig(config: object): void;
  dispose(): void;
}
interface SequenceInternals {
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
}
interface ModelInternals {
  _model: unknown;
  _llama: { _bindings: { AddonSampler: new (model: unknown) => NativeSampler } };
}

/** The library's default evaluation priority (only one sequence per context here: it never competes). */
const EVALUATION_PRIORITY = 5;

function directInternals(sequence: LlamaContextSequence, model: LlamaModel | undefined): { seq: SequenceInternals; model: ModelInternals } | null {
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

/**
 * GreedyEvaluator on one long-lived node-llama-cpp context sequence. Argmax is llama.cpp's own greedy
 * sampler, the same code path for a batch of 1 and a batch of k, on either path.
 */
export class LlamaSequenceEvaluator implements GreedyEvaluator {
  private cached: Token[] = [];
  /** Tokens evaluated by this sequence since creation (prompt and decode). */
  evaluatedTokens = 0;
  evaluations = 0;
  private currentPath: EvaluatorPath;
  private readonly internals: { seq: SequenceInternals; model: ModelInternals } | null;
  private sampler: NativeSampler | undefined;

  /** `model` enables the direct path; `forcePath` is for tests and the profile. */
  constructor(
    private readonly sequence: LlamaContextSequence,
    model?: LlamaModel,
    forcePath?: EvaluatorPath,
  ) {
    this.internals = forcePath === 'library' ? null : directInternals(sequence, model);
    if (forcePath === 'direct' && !this.internals) throw new Error('the direct evaluation path needs node-llama-cpp internals this version lacks');
    this.currentPath = this.internals ? 'direct' : 'library';
  }

  get path(): EvaluatorPath {
    return this.currentPath;
  }

  /** Switches paths between evaluations (the profile compares them on one sequence). */
  usePath(path: EvaluatorPath): void {
    if (path === 'direct' && !this.internals) throw new Error('the direct evaluation path needs node-llama-cpp internals this version lacks');
    this.currentPath = path;
  }

  get tokens(): readonly Token[] {
    return this.cached;
  }

  get capacity(): number {
    return this.sequence.contextSize;
  }

  async append(input: readonly Token[], outputs: number, withConfidence = false, expected?: readonly Token[]): Promise<EvaluatedNext[]> {
    if (input.length === 0) return [];
    if (this.cached.length + input.length > this.capacity) {
      throw new Error(`context full: ${this.cached.length} + ${input.length} tokens > ${this.capacity}`);
    }
    // Fail loudly if the library ever disagrees with our mirror of the cache.
    if (this.sequence.nextTokenIndex !== this.cached.length) {
      throw new Error(`sequence out of sync: ${this.sequence.nextTokenIndex} cached vs ${this.cached.length} expected`);
    }
    const firstOutput = input.length - Math.min(outputs, input.length);
    const out =
      this.internals && this.currentPath === 'direct'
        ? await this.appendDirect(this.internals, input, firstOutput, withConfidence, expected)
        : await this.appendLibrary(input, firstOutput, withConfidence);
    this.cached.push(...input);
    this.evaluatedTokens += input.length;
    this.evaluations++;
    return out;
  }

  /**
   * One batch through the library's decoder, then the greedy token of each output position read
   * by one reused native sampler: in order, and only up to the first position whose token differs
   * from `expected` (a verify step needs nothing after its first rejection: at low acceptance most
   * positions are never read). Confidence is 1 / Σ exp(logit - max): the argmax's own probability,
   * computed without the full-vocabulary sort the library's confidence option does (18 ms per
   * position with a 152k vocabulary).
   */
  private async appendDirect(
    internals: { seq: SequenceInternals; model: ModelInternals },
    input: readonly Token[],
    firstOutput: number,
    withConfidence: boolean,
    expected?: readonly Token[],
  ): Promise<EvaluatedNext[]> {
    const { seq } = internals;
    const logits = input.map((_, i) => i >= firstOutput);
    const batchIndexOf: number[] = [];
    await seq._decodeTokens(
      input.slice(),
      logits,
      EVALUATION_PRIORITY,
      seq._tokenMeter,
      seq._contextShift,
      (batchLogitIndex, tokenIndex) => {
        batchIndexOf[tokenIndex] = batchLogitIndex;
        // Not a promise: the library would chain the positions one after another, each a native call.
        return 0;
      },
      seq._takeIntervalCheckpointIfNeededAfterBatch,
    );
    const native = seq._context._ctx;
    if (firstOutput >= input.length) return [];
    // In order, one native call each. Reading the next position while the current one is checked
    // (two samplers) measured no faster: the library copies a position's logits into the sampler's
    // candidates under a lock shared by all reads of the context (bench/PROFILE.md).
    const sampler = this.greedySampler(internals);
    const out: EvaluatedNext[] = [];
    for (let i = firstOutput; i < input.length; i++) {
      const batchLogitIndex = batchIndexOf[i];
      if (batchLogitIndex === undefined) throw new Error(`no output for input position ${i}`);
      const result = withConfidence ? await native.sampleToken(batchLogitIndex, sampler, false, false, false, true) : await native.sampleToken(batchLogitIndex, sampler);
      const token = Array.isArray(result) ? result[0] : result;
      if (token == null || token < 0) throw new Error(`no next token at input position ${i}`);
      const weight = Array.isArray(result) ? result[4] : undefined;
      out.push(withConfidence && weight !== undefined && weight > 0 ? { token, confidence: 1 / weight } : { token });
      // A verify step needs nothing after the first position that disagrees with the proposal.
      const j = i - firstOutput;
      if (expected && (j >= expected.length || expected[j] !== token)) break;
    }
    return out;
  }

  private async appendLibrary(input: readonly Token[], firstOutput: number, withConfidence: boolean): Promise<EvaluatedNext[]> {
    // totalLogitWeight, not confidence: the same number for a greedy token, without a sort (see appendDirect).
    const generateNext = { token: true, totalLogitWeight: withConfidence, options: { temperature: 0 } };
    const items = input.map((token, i) => (i >= firstOutput ? ([token, { generateNext }] as const) : token));
    const results = await this.sequence.controlledEvaluate(items as never);
    const out: EvaluatedNext[] = [];
    for (let i = firstOutput; i < input.length; i++) {
      const next = results[i]?.next;
      if (next?.token == null) throw new Error(`no next token at input position ${i}`);
      const weight = next.totalLogitWeight;
      out.push(withConfidence && weight !== undefined && weight > 0 ? { token: next.token, confidence: 1 / weight } : { token: next.token });
    }
    return out;
  }

  /** The native greedy sampler, made once for the evaluator's life (the library makes one per call). */
  private greedySampler(internals: { seq: SequenceInternals; model: ModelInternals }): NativeSampler {
    if (!this.sampler) {
      const { model, seq } = internals;
      this.sampler = new model._llama._bindings.AddonSampler(model._model);
      this.sampler.applyConfig(seq._resolveSamplerConfig({ temperature: 0 }));
    }
    return this.sampler;
  }

  async truncate(length: number): Promise<void> {
    if (length >= this.cached.length) return;
    await this.sequence.eraseContextTokenRanges([{ start: length, end: this.sequence.nextTokenIndex }]);
    this.cached.length = length;
  }

  /** Forget everything (e.g. after an error left the library's state unknown). */
  async reset(): Promise<void> {
    await this.sequence.clearHistory();
    this.cached = [];
  }

  /** Frees the native sampler (the context and its sequence belong to the caller). */
  async dispose(): Promise<void> {
    this.sampler?.dispose();
    this.sampler = undefined;
  }
}
