import type { Token } from '../shared/decoding';
import type { EvaluatedNext, RankedNext } from '../speculation/greedyEvaluator';
import { createGreedySampler, type LlamaInternals, type NativeContext, type NativeSampler, sampledToken } from './evaluatorInternals';
import type { TotalLogitWeightSupport } from './evaluatorPaths';
import { rankedFromProbabilities } from './libraryEvaluation';

/**
 * The direct path's reads (EvaluatorPath `direct`): after the library's decoder, one reused native
 * greedy sampler, one `sampleToken` call a position read. It is what runs when the native reader
 * cannot be loaded but the library's internals are there.
 */
export class DirectSamplerReads {
  private sampler: NativeSampler | undefined;

  constructor(
    private readonly internals: LlamaInternals,
    private readonly reports: TotalLogitWeightSupport,
  ) {}

  /**
   * The greedy token of each of `count` output positions, in order, and only up to the first whose
   * token differs from `expected` (a verify step needs nothing after its first rejection).
   */
  async readGreedy(batchIndexes: Int32Array, count: number, firstOutput: number, withConfidence: boolean, expected?: readonly Token[]): Promise<EvaluatedNext[]> {
    const native = this.internals.seq._context._ctx;
    const sampler = this.greedySampler();
    const out: EvaluatedNext[] = [];
    // In order, one native call each. Reading the next position while the current one is checked
    // (two samplers) is no faster: the library copies a position's logits into the sampler's
    // candidates under a lock shared by all reads of the context (bench/PROFILE.md).
    for (let j = 0; j < count; j++) {
      const batchLogitIndex = batchIndexes[j];
      const next = withConfidence ? await this.sampleWithConfidence(native, batchLogitIndex, sampler) : { token: sampledToken(await native.sampleToken(batchLogitIndex, sampler)) };
      const token = next.token;
      if (token == null || token < 0) throw new Error(`no next token at input position ${firstOutput + j}`);
      out.push(next.confidence !== undefined ? { token, confidence: next.confidence } : { token });
      if (expected && (j >= expected.length || expected[j] !== token)) break;
    }
    return out;
  }

  /** The `top` best tokens of each output position, from the library's probabilities (which sort the whole vocabulary). */
  async readRanked(batchIndexes: Int32Array, count: number, firstOutput: number, top: number, withProbabilities = false): Promise<RankedNext[]> {
    const native = this.internals.seq._context._ctx;
    const sampler = this.greedySampler();
    const out: RankedNext[] = [];
    for (let j = 0; j < count; j++) {
      const result = await native.sampleToken(batchIndexes[j], sampler, true, false);
      const flat = Array.isArray(result) ? (result[1] as ArrayLike<number> | undefined) : undefined;
      if (!flat) throw new Error(`no probabilities at input position ${firstOutput + j}`);
      const pairs: [Token, number][] = [];
      for (let i = 1; i < flat.length && pairs.length < top + 1; i += 2) pairs.push([flat[i - 1], flat[i]]);
      out.push(rankedFromProbabilities(sampledToken(result), pairs, top, withProbabilities));
    }
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
    if (this.reports.direct !== false) {
      const result = await native.sampleToken(batchLogitIndex, sampler, false, false, false, true);
      const token = sampledToken(result);
      const weight = Array.isArray(result) ? result[4] : undefined;
      if (weight !== undefined) {
        this.reports.direct = true;
        return weight > 0 ? { token, confidence: 1 / weight } : { token };
      }
      // No output at this position (the caller says so), or known to report it: nothing to learn.
      if (token < 0 || this.reports.direct) return { token };
      this.reports.direct = false;
    }
    const result = await native.sampleToken(batchLogitIndex, sampler, false, true);
    const confidence = Array.isArray(result) ? result[2] : undefined;
    return confidence !== undefined ? { token: sampledToken(result), confidence } : { token: sampledToken(result) };
  }

  /** The native greedy sampler, made once for the evaluator's life (the library makes one per call). */
  private greedySampler(): NativeSampler {
    this.sampler ??= createGreedySampler(this.internals);
    return this.sampler;
  }

  /** Frees the native sampler (made again if read after). */
  dispose(): void {
    this.sampler?.dispose();
    this.sampler = undefined;
  }
}
