/**
 * Verifying an offer in several steps instead of one. Choosing a length by the most expected tokens
 * per cost of one step (SpeculationPolicy.bestLength) treats each step as the last word on the offer:
 * where a batch costs little more than a token, a long offer pays whenever a few of its guesses would
 * run far, even if most go wrong at once. But a shorter first step that comes back right whole is
 * followed by another, so the long stretch is reached at the price of one more step, while a wrong
 * guess wastes only the short batch. A window copy re-synchronised after an edit is that case: it is
 * wrong at once or within a few tokens, or right to the window's end.
 *
 * So for a length, the cheapest way to verify it in steps: each step verifies the next part, and the
 * next step comes only if every token before it was right (the chance that the first j tokens are all
 * right is the growth of the expected tokens at j). The policy compares the length one step would
 * take with the whole offer, each split at its cheapest, by expected tokens per expected cost, and
 * verifies the first step of the faster.
 */

/** Expected tokens of one step verifying k tokens, for k = 0..end at index k (AcceptanceModel.expectedTokensUpTo). */
type ExpectedTokens = ArrayLike<number>;

/**
 * The cheapest split of an offer's first `end` tokens into steps: the expected cost (`stepCost[b]`: a
 * verify batch of b, the step's own token included) and the first step's length.
 */
export function cheapestSplit(end: number, expected: ExpectedTokens, stepCost: ArrayLike<number>): { cost: number; first: number } {
  // allRight[j]: the chance that the first j tokens are all right.
  const allRight = new Float64Array(end + 1);
  allRight[0] = 1;
  for (let j = 1; j <= end; j++) allRight[j] = Math.min(allRight[j - 1]!, Math.max(0, expected[j]! - expected[j - 1]!));
  // cost[j]: the least expected cost of verifying tokens j + 1..end once the first j are right; first[j]: that step's end.
  const cost = new Float64Array(end + 1);
  const first = new Int32Array(end + 1).fill(end);
  // weighted[m]: cost[m] times the chance of reaching m (divided by the chance of reaching j below).
  const weighted = new Float64Array(end + 1);
  for (let j = end - 1; j >= 0; j--) {
    const from = allRight[j]! > 0 ? 1 / allRight[j]! : 0;
    let best = Number.POSITIVE_INFINITY;
    for (let m = j + 1; m <= end; m++) {
      const c = stepCost[m - j + 1]! + weighted[m]! * from;
      if (c < best) {
        best = c;
        first[j] = m;
      }
    }
    cost[j] = best;
    weighted[j] = allRight[j]! * best;
  }
  return { cost: cost[0]!, first: first[0]! };
}

/**
 * The first step's length for an offer of `limit` tokens, given `k`, the length one step would verify
 * (0: plain decoding): of k and the whole offer, each split at its cheapest, the one with the more
 * expected tokens per expected cost.
 */
export function firstStepLength(k: number, limit: number, expected: ExpectedTokens, stepCost: ArrayLike<number>): number {
  if (k <= 0) return 0;
  let best = { rate: -1, first: k };
  for (const end of k < limit ? [k, limit] : [k]) {
    const split = cheapestSplit(end, expected, stepCost);
    const rate = expected[end]! / split.cost;
    if (rate > best.rate) best = { rate, first: split.first };
  }
  return best.first;
}
