// Where the end of a history recurs, every place at once (SuffixDecoding, arXiv 2411.04975): in the
// request's own tokens (the prompt and the output so far) and in the index of open documents and
// accepted completions. A suffix proposer merges what followed all of them into a tree weighted by
// frequency; the n-gram lookup keeps only the best one. Every search is bounded (occurrences looked
// at and kept), so a step costs the same on a frequent token as on a rare one.
import { hashNgram } from './hashNgram';
import type { NgramIndex } from './ngramIndex';
import { type TokenRun, tokensAfter, tokensBefore } from './tokenRun';

/** Occurrences of the history's last token looked at in the history itself (the newest first). */
export const HISTORY_INSPECTED = 512;
/** Occurrences of the hashed n-gram looked at in each run of the index (as its lookup looks at). */
const INSPECTED_PER_RUN = 32;
/** Occurrences looked at in the whole index: a frequent n-gram in many documents stays bounded. */
export const INDEX_INSPECTED = 2048;
/**
 * Runs (chunks of ~32 lines, accepted completions) looked at in the index, in its order (the edited
 * document first, then the most recently used): each is a hash lookup in a table of its own, ~0.1 µs
 * a run on a CPU, so a full index of 4 M characters (~4,000 runs) would cost ~0.4 ms a step.
 */
export const INDEX_RUNS = 1024;

/**
 * The request's own tokens, indexed as they grow (the decoder's history only ever grows): for each
 * token its positions, the newest first (hash chains keyed by the token itself: one Map entry a
 * distinct token, 4 bytes a position). Found by the last token alone, so matches of any length from
 * one token up are seen.
 */
export class HistoryIndex {
  private tokens: number[] = [];
  private readonly newestEnd = new Map<number, number>();
  private previousEnd = new Int32Array(256);
  /** The array last followed. */
  private followed: readonly number[] | null = null;

  /**
   * Indexes what `history` added since the last call; all of it, afresh, if it does not continue what
   * was indexed. The decoder's history is one array that only grows: another array is compared whole.
   */
  follow(history: readonly number[]): void {
    const known = this.tokens.length;
    if (history !== this.followed || history.length < known) {
      let same = history.length >= known;
      for (let i = 0; same && i < known; i++) same = history[i] === this.tokens[i];
      if (!same) this.reset();
      this.followed = history;
    }
    for (let i = this.tokens.length; i < history.length; i++) this.push(history[i]!);
  }

  get length(): number {
    return this.tokens.length;
  }

  /**
   * The longest match (at most maxN tokens) of the history's ending elsewhere in it, and where each
   * occurrence of that length ends (the newest first, at most `limit`); an occurrence must be
   * followed by at least one token. Null when the last token never occurred before.
   */
  longestMatches(maxN: number, limit: number): { n: number; ends: number[] } | null {
    const tokens = this.tokens;
    const length = tokens.length;
    if (length < 2) return null;
    let bestN = 0;
    let ends: number[] = [];
    let end = this.previousEnd[length]!;
    for (let inspected = 0; end > 0 && inspected < HISTORY_INSPECTED; inspected++, end = this.previousEnd[end]!) {
      const cap = Math.min(maxN, end);
      let n = 1;
      while (n < cap && tokens[end - 1 - n] === tokens[length - 1 - n]) n++;
      if (n > bestN) {
        bestN = n;
        ends = [];
      }
      if (n === bestN && ends.length < limit) ends.push(end);
    }
    return bestN > 0 ? { n: bestN, ends } : null;
  }

  /** The history's tokens [from, to), clamped to it. */
  slice(from: number, to: number): number[] {
    return this.tokens.slice(Math.max(0, from), Math.min(to, this.tokens.length));
  }

  private push(token: number): void {
    const end = this.tokens.length + 1;
    this.tokens.push(token);
    if (end >= this.previousEnd.length) {
      const grown = new Int32Array(this.previousEnd.length * 2);
      grown.set(this.previousEnd);
      this.previousEnd = grown;
    }
    this.previousEnd[end] = this.newestEnd.get(token) ?? -1;
    this.newestEnd.set(token, end);
  }

  private reset(): void {
    this.tokens = [];
    this.newestEnd.clear();
    this.previousEnd = new Int32Array(256);
  }
}

/** An occurrence found in the index: the tokens around it, read on demand. */
export interface IndexOccurrence {
  /** The document or sequence's key. */
  source: string;
  after(count: number): number[];
  before(count: number): number[];
}

/**
 * Every occurrence in the index of the context's longest matched ending of at least `atLeast` tokens
 * (and at least the index's minN: its chains are keyed by that n-gram), the sources in the lookup's
 * order (`preferKey` first, then the most recently touched), each one's runs from the last back, at
 * most `limit` of that length kept, within INDEX_RUNS runs and INDEX_INSPECTED occurrences looked
 * at. Null when none matches that far.
 */
export function indexOccurrences(
  index: NgramIndex,
  context: readonly number[],
  options: { atLeast: number; limit: number; preferKey?: string; maxN?: number },
): { n: number; found: IndexOccurrence[] } | null {
  const { minN, maxN: indexMaxN } = index.sizes;
  const maxN = Math.min(options.maxN ?? indexMaxN, indexMaxN, context.length);
  const atLeast = Math.max(options.atLeast, minN);
  if (context.length < minN || maxN < atLeast || options.limit <= 0) return null;
  const tailHash = hashNgram(context, context.length, minN);
  let bestN = 0;
  let found: IndexOccurrence[] = [];
  let budget = INDEX_INSPECTED;
  let runsLeft = INDEX_RUNS;
  const matches = { ends: [] as number[], lengths: [] as number[] };
  for (const source of index.sourcesByPreference({ preferKey: options.preferKey })) {
    const runs = source.runs();
    let hasLaterTokens = false;
    for (let runIndex = runs.length - 1; runIndex >= 0 && budget > 0 && runsLeft > 0; runIndex--, runsLeft--) {
      const run = runs[runIndex]!;
      const first = matches.ends.length;
      budget -= run.collectMatches(context, tailHash, maxN, Math.max(atLeast, bestN), hasLaterTokens, Math.min(INSPECTED_PER_RUN, budget), matches);
      hasLaterTokens ||= run.length > 0;
      for (let i = first; i < matches.ends.length; i++) {
        const n = matches.lengths[i]!;
        if (n > bestN) {
          bestN = n;
          found = [];
        }
        if (n === bestN && found.length < options.limit) found.push(occurrenceIn(source.key, runs, runIndex, matches.ends[i]!));
      }
      // Nothing longer can come, and no more of this length is wanted.
      if (bestN === maxN && found.length >= options.limit) return { n: bestN, found };
    }
    if (budget <= 0 || runsLeft <= 0) break;
  }
  return bestN > 0 ? { n: bestN, found } : null;
}

function occurrenceIn(source: string, runs: readonly TokenRun[], runIndex: number, end: number): IndexOccurrence {
  return { source, after: (count) => tokensAfter(runs, runIndex, end, count), before: (count) => tokensBefore(runs, runIndex, end, count) };
}

/** What a suffix proposer merges: the longest matched ending's length, and what followed each of its occurrences. */
export interface SuffixMatches {
  matchLength: number;
  continuations: number[][];
}

export interface SuffixMatchOptions {
  /** Longest match looked for (the index's maxN at most where the index is searched). */
  maxN: number;
  /** Tokens of each continuation. */
  maxLen: number;
  /** Occurrences kept: the history's newest first, then the index's in its order. */
  limit: number;
  /** The document being edited: its occurrences come first among the index's. */
  preferKey?: string;
}

/**
 * Every occurrence of the history's longest matched ending (one token or more) in the history itself
 * and in the index, and the tokens that followed each. Occurrences whose surroundings are the same
 * tokens (the same text seen twice: in the prompt and in the open document it was cut from) count
 * once. Shorter than the index's minN, only the history is searched (the index's chains start there).
 * Null when nothing matches.
 */
export function suffixMatches(history: HistoryIndex, index: NgramIndex | null, context: readonly number[], options: SuffixMatchOptions): SuffixMatches | null {
  history.follow(context);
  const local = history.longestMatches(options.maxN, options.limit);
  const global = index ? indexOccurrences(index, context, { atLeast: local?.n ?? 1, limit: options.limit, preferKey: options.preferKey, maxN: options.maxN }) : null;
  const matchLength = Math.max(local?.n ?? 0, global?.n ?? 0);
  if (matchLength === 0) return null;
  const around = 2 * options.maxN;
  const seen = new Set<number>();
  const continuations: number[][] = [];
  const add = (before: readonly number[], after: number[]) => {
    if (after.length === 0 || continuations.length >= options.limit) return;
    const key = surroundingsKey(before, after);
    if (seen.has(key)) return;
    seen.add(key);
    continuations.push(after);
  };
  if (local && local.n === matchLength) for (const end of local.ends) add(history.slice(end - around, end), history.slice(end, end + options.maxLen));
  if (global && global.n === matchLength) for (const o of global.found) add(o.before(around), o.after(options.maxLen));
  return continuations.length ? { matchLength, continuations } : null;
}

/** A hash of an occurrence's surroundings (collisions only merge two occurrences' counts). */
function surroundingsKey(before: readonly number[], after: readonly number[]): number {
  let hash = 0x811c9dc5 ^ before.length;
  for (const t of before) hash = Math.imul(hash ^ t, 0x01000193);
  hash = Math.imul(hash ^ 0x5bd1e995, 0x01000193);
  for (const t of after) hash = Math.imul(hash ^ t, 0x01000193);
  return hash >>> 0;
}
