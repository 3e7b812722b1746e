import type { Token } from '../shared/decoding';
import type { RankedNext } from './greedyEvaluator';

/** Where alternatives branch off a greedy completion, and the tokens they start with there. */
export interface BranchPoint {
  /** Index in the greedy completion's tokens: alternatives keep greedy[0..tokenIndex) and replace the token there. */
  tokenIndex: number;
  /** Top-1 minus top-2 logit there: the smallest among the positions considered. */
  margin: number;
  /** The tokens that replace greedy[tokenIndex], most likely first (never the greedy token itself). */
  candidates: Token[];
}

export interface BranchRules {
  /** End-of-generation tokens: an alternative starting with one would only be a shorter greedy completion. */
  isEndToken(token: Token): boolean;
  /**
   * Whether `token` may replace the greedy token at `position` (e.g. not one that rewrites the
   * blank the user already typed); all allowed when absent.
   */
  allows?(position: number, token: Token): boolean;
}

/**
 * The branch point of a greedy completion `greedy` (the tokens its stop rules kept), from `ranked`:
 * the top tokens at each of its positions (ranked[j] predicts greedy[j]). It is the position where
 * the target was least certain (smallest top-two margin; the earliest of equals) among those that
 * offer at least one usable other token. Only positions inside the completion count: after its last
 * kept token the stop rules had already ended it. Null when no position offers another token (an
 * empty completion, a vocabulary of one token, every other candidate an end token).
 */
export function chooseBranchPoint(greedy: readonly Token[], ranked: readonly RankedNext[], rules: BranchRules): BranchPoint | null {
  if (ranked.length < greedy.length) throw new Error(`${ranked.length} ranked positions for ${greedy.length} greedy tokens`);
  let best: BranchPoint | null = null;
  for (let position = 0; position < greedy.length; position++) {
    const { margin, tokens } = ranked[position];
    if (best && !(margin < best.margin)) continue;
    // The greedy token is excluded by identity, not by rank: where batched numerics flipped a
    // near-tie, the ranked list may put another token first (its margin is then tiny: a fine branch).
    const candidates = tokens.filter((t) => t !== greedy[position] && !rules.isEndToken(t) && (rules.allows?.(position, t) ?? true));
    if (candidates.length > 0) best = { tokenIndex: position, margin, candidates };
  }
  return best;
}
