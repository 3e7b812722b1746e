/**
 * How far the window's copy stays right before the output's first edit, by where a token lies from the
 * cursor: an edit rarely comes before the cursor and often right after it, then less often the farther
 * the copy goes. One survival curve over the token's distance from the cursor (index 0 = the cursor's
 * own token, those before it pooled at their own rate), learned from every verified proposal of a
 * window not yet edited. A proposal's position in it decides its length: the copy up to the cursor in
 * one step where nothing was ever edited before the cursor, short steps where edits are likely.
 */
export const CURSOR_HORIZON = 256;

export class CursorAcceptance {
  /** Tokens before the cursor: reached, and wrong there. */
  private before = { reached: 8, wrong: 8 * 0.002 };
  /** Index d: tokens d past the cursor reached (those before them right), and those wrong there. */
  private readonly reached: Float64Array;
  private readonly wrong: Float64Array;

  constructor(private readonly decay = 0.98) {
    // Prior: an edit within the first few tokens past the cursor at ~10% each, then ~2% a token, worth a few windows.
    this.reached = new Float64Array(CURSOR_HORIZON).fill(4);
    this.wrong = new Float64Array(CURSOR_HORIZON).map((_, d) => 4 * (d < 4 ? 0.1 : 0.02));
  }

  /** Probability that the token at `distance` from the cursor is right, the copy right up to it. */
  rate(distance: number): number {
    if (distance < 0) return 1 - this.before.wrong / this.before.reached;
    const d = Math.min(distance, CURSOR_HORIZON - 1);
    return 1 - this.wrong[d]! / this.reached[d]!;
  }

  /** Expected tokens of a step proposing k tokens starting `distance` from the cursor, for k = 0..limit at index k. */
  expectedTokensUpTo(limit: number, distance: number): Float64Array {
    const out = new Float64Array(limit + 1);
    out[0] = 1;
    let survive = 1;
    let run = 0;
    for (let k = 1; k <= limit; k++) {
      survive *= this.rate(distance + k - 1);
      run += survive;
      out[k] = 1 + run;
    }
    return out;
  }

  /** A verified proposal that started `distance` from the cursor: `proposed` tokens verified, `accepted` kept. */
  record(distance: number, proposed: number, accepted: number): void {
    if (proposed <= 0) return;
    this.before.reached *= this.decay;
    this.before.wrong *= this.decay;
    for (let d = 0; d < CURSOR_HORIZON; d++) {
      this.reached[d]! *= this.decay;
      this.wrong[d]! *= this.decay;
    }
    const seen = Math.min(proposed, accepted + 1);
    for (let i = 0; i < seen; i++) {
      const at = distance + i;
      const wrong = i === accepted ? 1 : 0;
      if (at < 0) {
        this.before.reached += 1;
        this.before.wrong += wrong;
      } else {
        const d = Math.min(at, CURSOR_HORIZON - 1);
        this.reached[d]! += 1;
        this.wrong[d]! += wrong;
      }
    }
  }
}
