/**
 * How far the window's copy stays right before the output's first edit, by where a token lies from the
 * cursor: an edit rarely comes before the cursor and often right after it, then less often the farther
 * the copy goes. One survival curve over the token's distance from the cursor (index 0 = the cursor's
 * own token, those before it pooled at their own rate), learned from every verified proposal of a
 * window not yet edited. A proposal's position in it decides its length: the copy up to the cursor in
 * one step where nothing was ever edited before the cursor, short steps where edits are likely.
 */
import { expectedTokensFromSurvival, SurvivalCounts } from './survivalCounts';

export const CURSOR_HORIZON = 256;

export class CursorAcceptance {
  /** Tokens before the cursor, pooled at one index. */
  private readonly before = new SurvivalCounts(1, 8, () => 0.002);
  /** Index d: tokens d past the cursor (the last index: that far or farther). */
  private readonly after: SurvivalCounts;

  constructor(private readonly decay = 0.98) {
    // Prior: an edit within the first few tokens past the cursor at ~10% each, then ~2% a token, worth a few windows.
    this.after = new SurvivalCounts(CURSOR_HORIZON, 4, (d) => (d < 4 ? 0.1 : 0.02));
  }

  /** Probability that the token at `distance` from the cursor is right, the copy right up to it. */
  rate(distance: number): number {
    return distance < 0 ? this.before.rate(0) : this.after.rate(distance);
  }

  /** Expected tokens of a step proposing k tokens starting `distance` from the cursor, for k = 0..limit at index k. */
  expectedTokensUpTo(limit: number, distance: number): Float64Array {
    return expectedTokensFromSurvival(limit, (k) => this.rate(distance + k - 1));
  }

  /** A verified proposal that started `distance` from the cursor: `proposed` tokens verified, `accepted` kept. */
  record(distance: number, proposed: number, accepted: number): void {
    if (proposed <= 0) return;
    this.before.fade(this.decay);
    this.after.fade(this.decay);
    const reached = Math.min(proposed, accepted + 1);
    for (let i = 0; i < reached; i++) {
      const at = distance + i;
      if (at < 0) this.before.count(0, i === accepted);
      else this.after.count(at, i === accepted);
    }
  }
}
