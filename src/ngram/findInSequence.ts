import { assertValidSizes, type NgramMatch } from './types';

export type SequenceSearchOptions = {
  minN: number;
  maxN: number;
  /** Most tokens to propose. */
  maxLen: number;
  /**
   * Occurrences must end (exclusive index of their last token + 1) at or before this index.
   * Default and upper bound: `haystack.length - 1`, which rules out the tail matching itself.
   */
  searchEnd?: number;
  /** Reported as `NgramMatch.source`. */
  source?: string;
};

/**
 * Prompt lookup over one token sequence (prompt + generated so far): find the most recent
 * earlier occurrence of the sequence's last n tokens, n from maxN down to minN, and propose the
 * tokens that followed it. One backward pass; each position usually costs one comparison.
 */
export function findInSequence(haystack: readonly number[], opts: SequenceSearchOptions): NgramMatch | null {
  assertValidSizes(opts);
  const { minN, maxLen } = opts;
  const length = haystack.length;
  const lastEnd = Math.min(opts.searchEnd ?? length - 1, length - 1);
  // A match can be no longer than the tail itself nor than the text before the occurrence's end.
  const maxN = Math.min(opts.maxN, length - 1);
  if (maxLen <= 0 || maxN < minN) return null;

  let bestN = 0;
  let bestEnd = -1;
  for (let end = lastEnd; end >= minN; end--) {
    const cap = Math.min(maxN, end);
    let n = 0;
    while (n < cap && haystack[end - 1 - n] === haystack[length - 1 - n]) n++;
    // Strictly longer only: scanning backwards, the first hit of a length is the most recent.
    if (n >= minN && n > bestN) {
      bestN = n;
      bestEnd = end;
      if (n === maxN) break;
    }
  }
  if (bestEnd < 0) return null;
  return { tokens: haystack.slice(bestEnd, bestEnd + maxLen), n: bestN, source: opts.source ?? 'context' };
}
