/**
 * How far the window's copy stays right before the output's first edit, by where a token lies from the
 * cursor: an edit rarely comes before the cursor and often right after it, then less often the farther
 * the copy goes. One survival curve over the token's distance from the cursor (index 0 = the cursor's
 * own token, those before it pooled at their own rate), learned from every verified proposal of a
 * window not yet edited. A proposal's position in it decides its length: the copy up to the cursor in
 * one step where nothing was ever edited before the cursor, short steps where edits are likely.
 *
 * Past the first few tokens the distances are pooled in bins that widen with the distance: first
 * edits are spread thin out there, and a curve with a count per distance would read one edit 89
 * tokens past the cursor as a spike, and cut every later window's copy short at 89.
 */
import { expectedTokensFromSurvival, SurvivalCounts, type SurvivalPooling } from './survivalCounts';

export const CURSOR_HORIZON = 256;

/** Distances 0-3 apart (where a quarter of first edits come), then bins each ~1.5x as far out: 4-5, 6-8, 9-12, 13-18, ... */
export const CURSOR_POOLING: SurvivalPooling = { from: 4, growth: 1.5 };

export class CursorAcceptance {
  /** Tokens before the cursor, pooled at one index. */
  private readonly before = new SurvivalCounts(1, 8, () => 0.002);
  /** Index d: tokens d past the cursor (the last index: that far or farther). */
  private readonly after: SurvivalCounts;

  constructor(private readonly decay = 0.98) {
    // Prior: an edit within the first few tokens past the cursor at ~10% each, then ~2% a token, worth a few windows.
    this.after = new SurvivalCounts(CURSOR_HORIZON, 4, (d) => (d < 4 ? 0.1 : 0.02), CURSOR_POOLING);
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
