import { hashNgram } from './hashNgram';

/** Where in a run the context's tail was found, and how many tokens of it matched. */
export type RunMatch = { end: number; n: number };

/** How many occurrences of one minN-gram a search inspects per run: frequent n-grams ("});") stay cheap. */
const MAX_CANDIDATES_PER_RUN = 32;

/**
 * A token sequence indexed by hash chains of its minN-grams (the zlib layout): `newestEnd` maps a
 * hash to the latest position where such an n-gram ends, `previousEnd` links each position to the
 * one before it. Longer matches (up to maxN) are found by comparing tokens backwards from there,
 * so one Map entry a distinct n-gram and 4 bytes a token cover every n.
 */
export class TokenRun {
  readonly tokens: Int32Array;
  private readonly newestEnd = new Map<number, number>();
  private readonly previousEnd: Int32Array;

  constructor(
    tokens: ArrayLike<number>,
    private readonly minN: number,
  ) {
    this.tokens = Int32Array.from(tokens);
    this.previousEnd = new Int32Array(this.tokens.length + 1).fill(-1);
    for (let end = minN; end <= this.tokens.length; end++) {
      const hash = hashNgram(this.tokens, end, minN);
      const newer = this.newestEnd.get(hash);
      if (newer !== undefined) this.previousEnd[end] = newer;
      this.newestEnd.set(hash, end);
    }
  }

  get length(): number {
    return this.tokens.length;
  }

  /**
   * Longest match (at most maxN, at least minN tokens) of the context's tail inside this run,
   * the latest one among equally long matches. `tailHash` is hashNgram of the context's last
   * minN tokens. A match ending at the run's very end is only useful if `allowEndAtTail`
   * (the caller can continue the proposal in a following run).
   */
  findLongestMatch(context: readonly number[], tailHash: number, maxN: number, allowEndAtTail: boolean): RunMatch | null {
    const tokens = this.tokens;
    const contextEnd = context.length;
    let best: RunMatch | null = null;
    let end = this.newestEnd.get(tailHash) ?? -1;
    for (let inspected = 0; end >= 0 && inspected < MAX_CANDIDATES_PER_RUN; inspected++, end = this.previousEnd[end]!) {
      if (end === tokens.length && !allowEndAtTail) continue;
      const cap = Math.min(maxN, end, contextEnd);
      let n = 0;
      while (n < cap && tokens[end - 1 - n] === context[contextEnd - 1 - n]) n++;
      if (n < this.minN || (best !== null && n <= best.n)) continue;
      best = { end, n };
      if (n === maxN) break;
    }
    return best;
  }

  /**
   * Every occurrence of the context's tail in this run that matches at least `atLeast` tokens (at
   * most maxN), newest first, appended to `out` (its end and match length); at most `inspect`
   * occurrences of the minN-gram are looked at. `allowEndAtTail` as in findLongestMatch. Returns how
   * many were looked at.
   */
  collectMatches(context: readonly number[], tailHash: number, maxN: number, atLeast: number, allowEndAtTail: boolean, inspect: number, out: { ends: number[]; lengths: number[] }): number {
    const tokens = this.tokens;
    const contextEnd = context.length;
    const shortest = Math.max(atLeast, this.minN);
    let inspected = 0;
    for (let end = this.newestEnd.get(tailHash) ?? -1; end >= 0 && inspected < inspect; inspected++, end = this.previousEnd[end]!) {
      if (end === tokens.length && !allowEndAtTail) continue;
      const cap = Math.min(maxN, end, contextEnd);
      let n = 0;
      while (n < cap && tokens[end - 1 - n] === context[contextEnd - 1 - n]) n++;
      if (n >= shortest) {
        out.ends.push(end);
        out.lengths.push(n);
      }
    }
    return inspected;
  }
}

/** Up to maxLen tokens from `end` in runs[runIndex], continuing into the following runs. */
export function tokensAfter(runs: readonly TokenRun[], runIndex: number, end: number, maxLen: number): number[] {
  const out: number[] = [];
  for (let i = runIndex, from = end; i < runs.length && out.length < maxLen; i++, from = 0) {
    const run = runs[i]!.tokens;
    for (let t = from; t < run.length && out.length < maxLen; t++) out.push(run[t]!);
  }
  return out;
}

/** Up to `count` tokens before `end` in runs[runIndex], reaching back into the runs before it; in order. */
export function tokensBefore(runs: readonly TokenRun[], runIndex: number, end: number, count: number): number[] {
  const out: number[] = [];
  for (let i = runIndex, to = end; i >= 0 && out.length < count; i--, to = i >= 0 ? runs[i]!.length : 0) {
    const run = runs[i]!.tokens;
    for (let t = to - 1; t >= 0 && out.length < count; t--) out.push(run[t]!);
  }
  return out.reverse();
}
