import type { Token } from '../shared/decoding';
import type { EvaluatedNext, RankedNext } from '../speculation/greedyEvaluator';
import type { DeviceGreedyAttachment } from './deviceGreedyAttachment';
import type { NativeAddon, NativeTarget } from './nativeAddon';

/**
 * The reads of a decoded batch that go through Draftline's native addon, with the arrays they reuse
 * from step to step (no allocation per step): the native reader's greedy tokens (and confidences),
 * the device sampler's tokens, and the few best tokens of each position (alternatives, the draft's leaves).
 * LlamaSequenceEvaluator keeps the counts of what each read took.
 */
export class NativeReads {
  batchIndexes = new Int32Array(16);
  private expectedTokens = new Int32Array(16);
  private readTokens = new Int32Array(16);
  private readWeights = new Float32Array(16);
  private topTokens = new Int32Array(64);
  private topLogits = new Float32Array(64);

  /** Grows the reused arrays to hold `count` output positions. */
  reserve(count: number): void {
    if (count <= this.batchIndexes.length) return;
    const size = Math.max(count, this.batchIndexes.length * 2);
    this.batchIndexes = new Int32Array(size);
    this.expectedTokens = new Int32Array(size);
    this.readTokens = new Int32Array(size);
    this.readWeights = new Float32Array(size);
  }

  /** The expected tokens into the reused array; how many (-1: none, read every position). */
  private expect(expected: readonly Token[] | undefined, count: number): number {
    const expectedCount = expected ? Math.min(expected.length, count) : -1;
    for (let j = 0; j < expectedCount; j++) this.expectedTokens[j] = expected![j];
    return expectedCount;
  }

  /** The native reader's greedy tokens, in order, up to the first that is not `expected`'s. */
  greedy(reader: NativeAddon, nativeContext: NativeTarget, sequenceId: number, batchIndexes: Int32Array, count: number, withConfidence: boolean, expected?: readonly Token[]): EvaluatedNext[] {
    const expectedCount = this.expect(expected, count);
    const read = reader.readGreedy(nativeContext, batchIndexes, count, this.expectedTokens, expectedCount, withConfidence, this.readTokens, this.readWeights, sequenceId);
    const out: EvaluatedNext[] = [];
    for (let j = 0; j < read; j++) {
      const weight = this.readWeights[j];
      out.push(withConfidence && weight > 0 ? { token: this.readTokens[j], confidence: 1 / weight } : { token: this.readTokens[j] });
    }
    return out;
  }

  /** The device sampler's tokens (same order and stops), and the bytes llama.cpp shipped for them. */
  sampled(device: DeviceGreedyAttachment, batchIndexes: Int32Array, count: number, expected?: readonly Token[]): { out: EvaluatedNext[]; shippedBytes: number } {
    const expectedCount = this.expect(expected, count);
    const { read, shippedBytes } = device.read(batchIndexes, count, this.expectedTokens, expectedCount, this.readTokens);
    const out: EvaluatedNext[] = [];
    for (let j = 0; j < read; j++) out.push({ token: this.readTokens[j] });
    return { out, shippedBytes };
  }

  /**
   * The `top` best tokens of each of `count` positions and the top-two logit margin (the native
   * reader's readTop); with `withProbabilities`, each token's probability too: exp(logit − the best
   * logit) over the normaliser Σ exp(logit − the best) that readGreedy computes (one more pass over each row).
   */
  ranked(reader: NativeAddon, nativeContext: NativeTarget, sequenceId: number, batchIndexes: Int32Array, count: number, top: number, withProbabilities = false): RankedNext[] {
    this.reserve(count);
    if (this.topTokens.length < count * top) {
      this.topTokens = new Int32Array(count * top * 2);
      this.topLogits = new Float32Array(count * top * 2);
    }
    const { topTokens: tokens, topLogits: logits } = this;
    reader.readTop(nativeContext, batchIndexes, count, top, tokens, logits, sequenceId);
    if (withProbabilities) reader.readGreedy(nativeContext, batchIndexes, count, this.expectedTokens, -1, true, this.readTokens, this.readWeights, sequenceId);
    const out: RankedNext[] = [];
    for (let j = 0; j < count; j++) {
      const ranked: Token[] = [];
      for (let r = 0; r < top && tokens[j * top + r] >= 0; r++) ranked.push(tokens[j * top + r]);
      const next: RankedNext = { tokens: ranked, margin: ranked.length > 1 ? logits[j * top] - logits[j * top + 1] : Number.POSITIVE_INFINITY };
      // A row the normaliser could not be computed for (non-finite logits) gets no probabilities.
      const normaliser = this.readWeights[j]!;
      if (withProbabilities && Number.isFinite(normaliser) && normaliser > 0) next.probabilities = ranked.map((_, r) => Math.exp(logits[j * top + r] - logits[j * top]) / normaliser);
      out.push(next);
    }
    return out;
  }
}
