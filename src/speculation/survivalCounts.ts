/**
 * How far guesses stay right, counted as Kaplan-Meier counts them: at each index, the guesses that
 * reached it (every one before it right) and those wrong there; a guess cut short counts only as far
 * as it went. Every count fades by a factor as each new guess is counted, so that the estimate follows
 * a session. The copy's acceptance models learn from these: by a copied token's age in its copy
 * (copyAcceptance.ts) and by its distance from the cursor (cursorAcceptance.ts).
 */
export class SurvivalCounts {
  private readonly reached: Float64Array;
  private readonly wrong: Float64Array;

  /** `length` indices, each starting as `priorReached` guesses of which the share `priorWrong(index)` went wrong there. */
  constructor(length: number, priorReached: number, priorWrong: (index: number) => number) {
    this.reached = new Float64Array(length).fill(priorReached);
    this.wrong = new Float64Array(length).map((_, i) => priorReached * priorWrong(i));
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
    const i = Math.min(index, this.reached.length - 1);
    this.reached[i]! += 1;
    if (wrong) this.wrong[i]! += 1;
  }

  /** Probability that a guess that reached `index` (past the last: the last) is right there. */
  rate(index: number): number {
    const i = Math.min(index, this.reached.length - 1);
    return 1 - this.wrong[i]! / this.reached[i]!;
  }
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
