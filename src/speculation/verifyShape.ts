import type { Token } from '../shared/decoding';

/**
 * How verify batches are shaped.
 * - `variable`: each step evaluates [pending, ...proposal] of whatever length the policy chose. On a
 *   CPU a token of a batch costs about what it computes, so a shorter batch is cheaper.
 * - `fixed`: every step of a generation evaluates exactly B tokens, all of them outputs (the proposal
 *   padded to B). Backends that capture and replay a compute graph (llama.cpp's CUDA backend) replay
 *   one only after consecutive calls with identical node shapes; a batch whose size changes every
 *   step re-captures every step and pays the kernel launches of hundreds of nodes, which costs more
 *   than the arithmetic of a small batch. Plain steps between speculative ones break the graph too,
 *   so once a generation speculates, every step has the shape B.
 */
export type VerifyShapeMode = 'fixed' | 'variable';

/** The sizes a fixed shape is chosen among. */
export const FIXED_SHAPE_SIZES: readonly number[] = [4, 8, 16, 32, 64];

/**
 * Evaluations of one shape in a row after which the next of that shape is warm: ggml-cuda replays a
 * graph from the third call whose node properties equal the previous call's.
 */
export const WARM_AFTER = 2;

/** Fixed-shape steps a generation gives the shape before it may fall back to plain decoding. */
export const FIXED_SHAPE_TRIAL_STEPS = 3;

/**
 * The batch of a fixed-shape step: [pending, ...proposal], then `filler` tokens, then repeats of the
 * last token, up to `size`. Padding tokens are verified like proposed ones (a padding token equal to
 * the target's greedy choice is a correct token like any other), and the KV cells of those rejected
 * are erased with the rejected guesses.
 */
export function padToShape(pending: Token, proposal: readonly Token[], size: number, filler: readonly Token[] = []): Token[] {
  const batch = [pending, ...proposal.slice(0, Math.max(0, size - 1))];
  for (let i = 0; batch.length < size && i < filler.length; i++) batch.push(filler[i]!);
  while (batch.length < size) batch.push(batch[batch.length - 1]!);
  return batch;
}

/**
 * The shapes a generation's target evaluations had: how many distinct batch sizes after its first
 * decode step (1 in fixed-shape mode: the proxy, on a machine without a graph backend, for whether a
 * graph could stay warm), and whether the latest evaluation was warm (WARM_AFTER of the same size
 * before it).
 */
export class ShapeHistory {
  private readonly sizes = new Set<number>();
  private last = 0;
  private run = 0;

  /** Records one evaluation of `size` tokens; returns whether it was warm. */
  record(size: number): boolean {
    const warm = size === this.last && this.run >= WARM_AFTER;
    this.run = size === this.last ? this.run + 1 : 1;
    this.last = size;
    this.sizes.add(size);
    return warm;
  }

  /** Distinct batch sizes recorded. */
  get distinct(): number {
    return this.sizes.size;
  }
}
