import type { LlamaContextSequence, LlamaModel } from './llamaTypes';
import { type NativeAddon, nativeAddonFor } from './nativeAddon';
import type { Token } from '../shared/types';
import type { EvaluatedNext, GreedyEvaluator, RankedNext } from '../speculation/greedyEvaluator';

/**
 * How the greedy token after each output position is read:
 * - `native`: node-llama-cpp's batch decoder, then Draftline's native greedy reader
 *   (src/native/draftlineNative.cpp) reads every needed position in one synchronous call — one native
 *   round trip a step (the decode) instead of one more per position;
 * - `direct`: the same decoder and one native greedy sampler created once per evaluator, one
 *   `sampleToken` round trip per position read (bench/PROFILE.md: the library's `controlledEvaluate`
 *   sets up a sampler per call and per position, and chains the positions' sampling one after
 *   another: 0.26-0.81 ms a step outside the forward pass on the tiny target, about a fifth of its step);
 * - `library`: `controlledEvaluate`, the public API, when the internals `direct` needs are missing
 *   (another node-llama-cpp version) — slower, same tokens.
 * The best available is chosen; all three give the same tokens (test/unit/sequenceEvaluator.test.ts).
 */
export type EvaluatorPath = 'native' | 'direct' | 'library';

/**
 * Where the `confidence` of a drafted token (the greedy token's probability, p(top)) comes from:
 * - `native reader`: 1 / Σ exp(logit − max), summed by Draftline's native reader in token order;
 * - `totalLogitWeight`: 1 / the library's `totalLogitWeight` (node-llama-cpp 3.22+), the same sum,
 *   the same number, one pass over the vocabulary;
 * - `confidence`: the library's `confidence` (node-llama-cpp 3.21, which has no totalLogitWeight):
 *   the same probability, exp(0) / Σ exp(logit − max) in float, but the library sorts the whole
 *   vocabulary before summing (in that order: equal to the others up to float rounding).
 * Which of the last two a version offers is found on the first read that asks (`confidenceSource`
 * says), not from its version number.
 */
export type ConfidenceSource = 'native reader' | 'totalLogitWeight' | 'confidence';

/**
 * The few node-llama-cpp internals the direct path uses (the same in 3.21.1 and 3.22.1). They are
 * checked once when the evaluator is made (`directInternals`); anything missing selects the library
 * path instead.
 */
interface NativeContext {
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

/**
 * What the library path asks controlledEvaluate for, and what it reads back. `totalLogitWeight` is
 * node-llama-cpp 3.22+ only (3.21's types lack it and it ignores it), hence typed here, not imported.
 */
interface LibraryGenerateNext {
  token: true;
  totalLogitWeight?: true;
  confidence?: true;
  options: { temperature: number };
}
interface LibraryNext {
  token?: Token | null;
  confidence?: number;
  totalLogitWeight?: number;
}

/** The token of a native sampleToken answer (a bare token, or [token, …] when options were given). */
function sampledToken(result: Awaited<ReturnType<NativeContext['sampleToken']>>): number {
  return Array.isArray(result) ? result[0] : result;
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
  /**
   * Whether the library reports `totalLogitWeight`, per path (the direct path asks the native
   * binding, the library path controlledEvaluate): unknown until the first read with a confidence.
   */
  private readonly reportsTotalLogitWeight: { direct?: boolean; library?: boolean } = {};
  private readonly nativeReader: NativeAddon | undefined;
  /** Why the native reader is not used, when it is not (logged by the session, shown by the profile). */
  readonly nativeUnavailable: string | undefined;
  // Reused across steps: the native reader's arguments and results (no per-step allocation).
  private batchIndexes = new Int32Array(16);
  private expectedTokens = new Int32Array(16);
  private readTokens = new Int32Array(16);
  private readWeights = new Float32Array(16);

  /** `model` enables the native and direct paths; `forcePath` is for tests and the profile. */
  constructor(
    private readonly sequence: LlamaContextSequence,
    model?: LlamaModel,
    forcePath?: EvaluatorPath,
  ) {
    this.internals = forcePath === 'library' ? null : directInternals(sequence, model);
    if (forcePath && forcePath !== 'library' && !this.internals) throw new Error(`the ${forcePath} evaluation path needs node-llama-cpp internals this version lacks`);
    const native = this.internals ? nativeAddonFor(sequence.context) : { error: 'node-llama-cpp internals missing' };
    this.nativeReader = 'addon' in native ? native.addon : undefined;
    this.nativeUnavailable = 'error' in native ? native.error : undefined;
    if (forcePath === 'native' && !this.nativeReader) throw new Error(`the native greedy reader is unavailable: ${this.nativeUnavailable}`);
    this.currentPath = forcePath ?? (this.nativeReader ? 'native' : this.internals ? 'direct' : 'library');
  }

  get path(): EvaluatorPath {
    return this.currentPath;
  }

  /** Switches paths between evaluations (the profile compares them on one sequence). */
  usePath(path: EvaluatorPath): void {
    if (path !== 'library' && !this.internals) throw new Error(`the ${path} evaluation path needs node-llama-cpp internals this version lacks`);
    if (path === 'native' && !this.nativeReader) throw new Error(`the native greedy reader is unavailable: ${this.nativeUnavailable}`);
    this.currentPath = path;
  }

  /**
   * Where the current path's confidences come from; undefined while unknown (no confidence was read
   * yet on a path that asks the library).
   */
  get confidenceSource(): ConfidenceSource | undefined {
    if (this.currentPath === 'native') return 'native reader';
    const reports = this.reportsTotalLogitWeight[this.currentPath];
    return reports === undefined ? undefined : reports ? 'totalLogitWeight' : 'confidence';
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
      this.internals && this.currentPath !== 'library'
        ? await this.appendDirect(this.internals, input, firstOutput, withConfidence, expected)
        : await this.appendLibrary(input, firstOutput, withConfidence);
    this.cached.push(...input);
    this.evaluatedTokens += input.length;
    this.evaluations++;
    return out;
  }

  /**
   * One batch through the library's decoder, then the greedy token of each output position: in
   * order, and only up to the first position whose token differs from `expected` (a verify step
   * needs nothing after its first rejection: at low acceptance most positions are never read).
   * Read by the native reader in one call, or else by one reused native sampler, a call a position.
   * Confidence is 1 / Σ exp(logit - max): the argmax's own probability, computed without the
   * full-vocabulary sort the library's confidence option does (18 ms per position with a 152k
   * vocabulary) — by the native reader, or by the library where it offers totalLogitWeight (3.22+);
   * else (3.21) the direct path asks for the library's confidence, sort and all (ConfidenceSource).
   */
  private async appendDirect(
    internals: { seq: SequenceInternals; model: ModelInternals },
    input: readonly Token[],
    firstOutput: number,
    withConfidence: boolean,
    expected?: readonly Token[],
  ): Promise<EvaluatedNext[]> {
    const { seq } = internals;
    const count = input.length - firstOutput;
    const batchIndexes = await this.decodeBatch(internals, input, firstOutput);
    if (count <= 0) return [];
    const native = seq._context._ctx;
    const out: EvaluatedNext[] = [];
    if (this.currentPath === 'native' && this.nativeReader) {
      const expectedCount = expected ? Math.min(expected.length, count) : -1;
      for (let j = 0; j < expectedCount; j++) this.expectedTokens[j] = expected![j];
      const read = this.nativeReader.readGreedy(native, batchIndexes, count, this.expectedTokens, expectedCount, withConfidence, this.readTokens, this.readWeights);
      for (let j = 0; j < read; j++) {
        const weight = this.readWeights[j];
        out.push(withConfidence && weight > 0 ? { token: this.readTokens[j], confidence: 1 / weight } : { token: this.readTokens[j] });
      }
      return out;
    }
    // In order, one native call each. Reading the next position while the current one is checked
    // (two samplers) measured no faster: the library copies a position's logits into the sampler's
    // candidates under a lock shared by all reads of the context (bench/PROFILE.md).
    const sampler = this.greedySampler(internals);
    for (let j = 0; j < count; j++) {
      const batchLogitIndex = batchIndexes[j];
      const next = withConfidence ? await this.sampleWithConfidence(native, batchLogitIndex, sampler) : { token: sampledToken(await native.sampleToken(batchLogitIndex, sampler)) };
      const token = next.token;
      if (token == null || token < 0) throw new Error(`no next token at input position ${firstOutput + j}`);
      out.push(next.confidence !== undefined ? { token, confidence: next.confidence } : { token });
      // A verify step needs nothing after the first position that disagrees with the proposal.
      if (expected && (j >= expected.length || expected[j] !== token)) break;
    }
    return out;
  }

  /**
   * Decodes `input` in one call through the library's decoder, with outputs at positions
   * `firstOutput`.. of it; returns the batch output index of each (this.batchIndexes, reused).
   */
  private async decodeBatch(internals: { seq: SequenceInternals; model: ModelInternals }, input: readonly Token[], firstOutput: number): Promise<Int32Array> {
    const { seq } = internals;
    const count = input.length - firstOutput;
    // Outputs are read after the whole call: they must all come from its last batch.
    if (count > 1 && input.length > this.sequence.context.batchSize) {
      throw new Error(`${input.length} tokens with ${count} outputs exceed one batch of ${this.sequence.context.batchSize}`);
    }
    this.reserve(count);
    const batchIndexes = this.batchIndexes;
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
    return batchIndexes;
  }

  /**
   * GreedyEvaluator.appendRanked: one batch, then the `top` best tokens of each output position —
   * by the native reader (one pass over each row, no sort), else by the library's probabilities
   * (which sort the whole vocabulary at each position: the fallback, slower). From probabilities the
   * margin is ln(p1 / p2): the softmax's normaliser cancels, leaving logit1 − logit2 up to float
   * rounding. The library's sort is not stable, so there the greedy token is put first among equals.
   */
  async appendRanked(input: readonly Token[], outputs: number, top: number): Promise<RankedNext[]> {
    if (input.length === 0) return [];
    if (!(top >= 1)) throw new Error(`top must be at least 1, not ${top}`);
    if (this.cached.length + input.length > this.capacity) {
      throw new Error(`context full: ${this.cached.length} + ${input.length} tokens > ${this.capacity}`);
    }
    if (this.sequence.nextTokenIndex !== this.cached.length) {
      throw new Error(`sequence out of sync: ${this.sequence.nextTokenIndex} cached vs ${this.cached.length} expected`);
    }
    const firstOutput = input.length - Math.min(outputs, input.length);
    const count = input.length - firstOutput;
    const out: RankedNext[] = [];
    if (this.internals && this.currentPath !== 'library') {
      const batchIndexes = await this.decodeBatch(this.internals, input, firstOutput);
      const native = this.internals.seq._context._ctx;
      if (this.currentPath === 'native' && this.nativeReader && count > 0) {
        const tokens = new Int32Array(count * top);
        const logits = new Float32Array(count * top);
        this.nativeReader.readTop(native, batchIndexes, count, top, tokens, logits);
        for (let j = 0; j < count; j++) {
          const ranked: Token[] = [];
          for (let r = 0; r < top && tokens[j * top + r] >= 0; r++) ranked.push(tokens[j * top + r]);
          out.push({ tokens: ranked, margin: ranked.length > 1 ? logits[j * top] - logits[j * top + 1] : Number.POSITIVE_INFINITY });
        }
      } else {
        const sampler = this.greedySampler(this.internals);
        for (let j = 0; j < count; j++) {
          const result = await native.sampleToken(batchIndexes[j], sampler, true, false);
          const flat = Array.isArray(result) ? (result[1] as ArrayLike<number> | undefined) : undefined;
          if (!flat) throw new Error(`no probabilities at input position ${firstOutput + j}`);
          const pairs: [Token, number][] = [];
          for (let i = 1; i < flat.length && pairs.length < top + 1; i += 2) pairs.push([flat[i - 1], flat[i]]);
          out.push(rankedFromProbabilities(sampledToken(result), pairs, top));
        }
      }
    } else {
      const items = input.map((token, i) => (i >= firstOutput ? ([token, { generateNext: { token: true, probabilities: true, options: { temperature: 0 } } }] as const) : token));
      const results = await this.sequence.controlledEvaluate(items as never);
      for (let i = firstOutput; i < input.length; i++) {
        const next = results[i]?.next as { token?: Token | null; probabilities?: Map<Token, number> } | undefined;
        if (next?.token == null || !next.probabilities) throw new Error(`no next token at input position ${i}`);
        const pairs: [Token, number][] = [];
        for (const pair of next.probabilities) {
          if (pairs.length > top) break;
          pairs.push(pair);
        }
        out.push(rankedFromProbabilities(next.token, pairs, top));
      }
    }
    this.cached.push(...input);
    this.evaluatedTokens += input.length;
    this.evaluations++;
    return out;
  }

  /**
   * One position's greedy token and its probability through the native sampler: 1 / totalLogitWeight
   * where the library reports it (no sort), else the library's confidence (sorts the vocabulary). The
   * first read asks for totalLogitWeight; a version that ignores that argument answers without it, and
   * the same position is read again for its confidence (the logits stay until the next decode; the
   * greedy sampler, configured without penalties or grammar, keeps no state between reads): once per
   * evaluator, and never on a version that has it.
   */
  private async sampleWithConfidence(native: NativeContext, batchLogitIndex: number, sampler: NativeSampler): Promise<{ token: number; confidence?: number }> {
    if (this.reportsTotalLogitWeight.direct !== false) {
      const result = await native.sampleToken(batchLogitIndex, sampler, false, false, false, true);
      const token = sampledToken(result);
      const weight = Array.isArray(result) ? result[4] : undefined;
      if (weight !== undefined) {
        this.reportsTotalLogitWeight.direct = true;
        return weight > 0 ? { token, confidence: 1 / weight } : { token };
      }
      // No output at this position (the caller says so), or known to report it: nothing to learn.
      if (token < 0 || this.reportsTotalLogitWeight.direct) return { token };
      this.reportsTotalLogitWeight.direct = false;
    }
    const result = await native.sampleToken(batchLogitIndex, sampler, false, true);
    const confidence = Array.isArray(result) ? result[2] : undefined;
    return confidence !== undefined ? { token: sampledToken(result), confidence } : { token: sampledToken(result) };
  }

  /** Grows the reused arrays to hold `count` output positions. */
  private reserve(count: number): void {
    if (count <= this.batchIndexes.length) return;
    const size = Math.max(count, this.batchIndexes.length * 2);
    this.batchIndexes = new Int32Array(size);
    this.expectedTokens = new Int32Array(size);
    this.readTokens = new Int32Array(size);
    this.readWeights = new Float32Array(size);
  }

  private async appendLibrary(input: readonly Token[], firstOutput: number, withConfidence: boolean): Promise<EvaluatedNext[]> {
    // totalLogitWeight, not confidence: the same number for a greedy token, without a sort (see
    // appendDirect). Until it is known whether this version reports it, both are asked for (one sort,
    // once): a version without it answers with its confidence, one with it with both.
    const reports = this.reportsTotalLogitWeight.library;
    const generateNext: LibraryGenerateNext = {
      token: true,
      ...(withConfidence && reports !== false ? { totalLogitWeight: true } : {}),
      ...(withConfidence && reports !== true ? { confidence: true } : {}),
      options: { temperature: 0 },
    };
    const items = input.map((token, i) => (i >= firstOutput ? ([token, { generateNext }] as const) : token));
    const results = await this.sequence.controlledEvaluate(items as never);
    const out: EvaluatedNext[] = [];
    for (let i = firstOutput; i < input.length; i++) {
      const next = results[i]?.next as LibraryNext | undefined;
      if (next?.token == null) throw new Error(`no next token at input position ${i}`);
      const weight = next.totalLogitWeight;
      if (withConfidence && reports === undefined) this.reportsTotalLogitWeight.library = weight !== undefined;
      const confidence = weight !== undefined ? (weight > 0 ? 1 / weight : undefined) : next.confidence;
      out.push(withConfidence && confidence !== undefined ? { token: next.token, confidence } : { token: next.token });
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

  /** Saves the sequence's KV cells and tokens to `file` (a prompt state evicted for another); returns its size. */
  async saveState(file: string): Promise<number> {
    return (await this.sequence.saveStateToFile(file)).fileSize;
  }

  /**
   * Replaces the sequence's cache by a state saveState wrote from a sequence of the same model and
   * context size (the file is the session's own: see inference/savedPromptStates.ts).
   */
  async loadState(file: string): Promise<void> {
    await this.reset();
    try {
      await this.sequence.loadStateFromFile(file, { acceptRisk: true });
      this.cached = [...this.sequence.contextTokens];
    } catch (error) {
      await this.reset().catch(() => undefined);
      throw error;
    }
  }

  /** Frees the native sampler (the context and its sequence belong to the caller). */
  async dispose(): Promise<void> {
    this.sampler?.dispose();
    this.sampler = undefined;
  }
}

/**
 * RankedNext from the library's probabilities, most probable first (`pairs`: at least top + 1 of them
 * when the vocabulary has that many): the greedy token `selected` first whatever the (unstable) sort
 * put first among equals, and the margin ln(p1 / p2) = logit1 − logit2.
 */
export function rankedFromProbabilities(selected: Token, pairs: readonly (readonly [Token, number])[], top: number): RankedNext {
  const best = pairs.find(([token]) => token === selected);
  const ordered = best ? [best, ...pairs.filter(([token]) => token !== selected)] : [...pairs];
  const kept = ordered.slice(0, top);
  const [first, second] = ordered;
  const margin = first && second && second[1] > 0 ? Math.log(first[1]) - Math.log(second[1]) : Number.POSITIVE_INFINITY;
  return { tokens: kept.map(([token]) => token), margin: Math.max(0, margin) };
}
