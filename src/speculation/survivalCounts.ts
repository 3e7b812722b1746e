/**
 * How far guesses stay right, counted as Kaplan-Meier counts them: at each index, the guesses that
 * reached it (every one before it right) and those wrong there; a guess cut short counts only as far
 * as it went. Every count fades by a factor as each new guess is counted, so that the estimate follows
 * a session. The copy's acceptance models learn from these: by a copied token's age in its copy
 * (copyAcceptance.ts) and by its distance from the cursor (cursorAcceptance.ts).
 *
 * Indices may be pooled (`SurvivalPooling`): from an index on, neighbours share one count, in bins
 * that widen with the index. Where guesses reach the far indices rarely, a count of its own at each
 * makes a single failure a spike in the curve, and a policy reading it then cuts its steps short at
 * that very index in every later window; pooled, that failure weighs on a stretch as a rate.
 */
export class SurvivalCounts {
  private readonly reached: Float64Array;
  private readonly wrong: Float64Array;
  /** Each index's count (the identity where nothing is pooled). */
  private readonly bins: Int32Array;

  /**
   * `length` indices; each count (an index's, or a bin's where pooled) starts as `priorReached`
   * guesses, of which the mean of `priorWrong` over its indices went wrong there.
   */
  constructor(length: number, priorReached: number, priorWrong: (index: number) => number, pooling?: SurvivalPooling) {
    this.bins = pooledBins(length, pooling);
    const counts = this.bins[length - 1]! + 1;
    const width = new Float64Array(counts);
    for (const bin of this.bins) width[bin]! += 1;
    this.reached = new Float64Array(counts).fill(priorReached);
    this.wrong = new Float64Array(counts);
    for (let i = 0; i < length; i++) this.wrong[this.bins[i]!]! += (priorReached * priorWrong(i)) / width[this.bins[i]!]!;
  }

  /** Every count multiplied by `decay`: done once per guess, before it is counted. */
  fade(decay: number): void {
    for (let i = 0; i < this.reached.length; i++) {
      this.reached[i]! *= decay;
      this.wrong[i]! *= decay;
    }
  }

  /** A guess reached `index` (past the last: the last), and was wrong there or not. */
  count(index: number, wrong: boolean): void {
    const i = this.bins[Math.min(index, this.bins.length - 1)]!;
    this.reached[i]! += 1;
    if (wrong) this.wrong[i]! += 1;
  }

  /** Probability that a guess that reached `index` (past the last: the last) is right there. */
  rate(index: number): number {
    const i = this.bins[Math.min(index, this.bins.length - 1)]!;
    return 1 - this.wrong[i]! / this.reached[i]!;
  }
}

/** Which indices share a count: each below `from` its own; from there on, bins each about `growth` times as far out as the last began, at least one index wide. */
export interface SurvivalPooling {
  from: number;
  growth: number;
}

/** The count of each of `length` indices under `pooling` (none: each its own). */
export function pooledBins(length: number, pooling?: SurvivalPooling): Int32Array {
  const bins = new Int32Array(length);
  let bin = 0;
  let start = 0;
  for (let i = 0; i < length; i++) {
    if (!pooling || i < pooling.from) {
      bins[i] = bin++;
      start = i + 1;
      continue;
    }
    if (i >= start + Math.max(1, Math.floor(start * (pooling.growth - 1)))) {
      bin++;
      start = i;
    }
    bins[i] = bin;
  }
  return bins;
}

/**
 * Expected tokens of a step verifying k guesses, for k = 0..limit at index k: the target's own token,
 * and each guess weighed by the chance that it and every one before it are right, `rate(i)` the
 * chance of the i-th (i ≥ 1) given those before it, all times `first` (where the first guess is
 * weighed apart: its rate(1) is then 1).
 */
export function expectedTokensFromSurvival(limit: number, rate: (i: number) => number, first = 1): Float64Array {
  const out = new Float64Array(limit + 1);
  out[0] = 1;
  let survive = 1;
  let run = 0;
  for (let k = 1; k <= limit; k++) {
    survive *= rate(k);
    run += survive;
    out[k] = 1 + first * run;
  }
  return out;
}
