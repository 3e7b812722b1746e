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
}
