// SuffixDecoding's proposer (arXiv 2411.04975): where the history's ending recurred (the prompt and
// the output so far, the open documents, the completions accepted in this session), what followed
// every occurrence, merged into one tree weighted by frequency: a token that followed 7 of 8
// occurrences is likelier than one that followed 1. Each node is scored by its chance of lying on the
// target's path (its share of the occurrences times the rates learned per match length:
// speculation/suffixAcceptance.ts); the best nodes a verify batch holds are offered as a tree, its
// likeliest path as the chain (verified wherever trees are not). Unlike the n-gram proposer it
// proposes after a match of a single token: the weak guesses are scored as weak, and the policy
// verifies them only as far as they pay.
import type { SuffixMatches } from '../ngram/suffixMatches';
import type { Token } from '../shared/decoding';
import type { AcceptanceModel, LookupProposer, Proposer } from './proposer';
import { SuffixAcceptance, type SuffixOffer, SuffixRates } from './suffixAcceptance';
import { addContinuations, ScoredTrie } from './tokenTree';

export type { SuffixOffer } from './suffixAcceptance';

/** The candidates after a history: its longest matched ending and what followed each occurrence (ngram/suffixMatches.ts). */
export type SuffixLookup = (history: readonly Token[], maxLen: number) => SuffixMatches | null;

/** A chain token scored below this is past what a non-adaptive policy verifies (SuffixDecoding's min_token_prob). */
export const MIN_SCHEDULED_SCORE = 0.1;

export interface SuffixProposerOptions {
  /**
   * Offers whose first token scores below this are not made (asked each step: it may follow a measured
   * rate): beside a source that is usually better (a draft model, after it in the mode's order) a
   * weak guess would be chosen for paying at all, in its place.
   */
  floor?: number | (() => number);
}

export class SuffixProposer implements LookupProposer<SuffixOffer> {
  readonly id = 'suffix';
  readonly asks = 'lookup';

  constructor(
    private readonly lookup: SuffixLookup,
    /** The rates its scores use: the policy's (suffixProposerFor), so what one request learns the next one scores with. */
    readonly rates: SuffixRates = new SuffixRates(),
    private readonly options: SuffixProposerOptions = {},
  ) {}

  /** Every candidate after `history` in one scored trie (continuations of up to maxLen tokens), with the match and the rates' chance per depth; null: none. */
  candidates(history: readonly Token[], maxLen: number): { trie: ScoredTrie; matchLength: number; reach: number[] } | null {
    if (maxLen <= 0) return null;
    const matches = this.lookup(history, maxLen);
    if (!matches) return null;
    const reach = this.rates.reach(matches.matchLength, maxLen);
    const trie = new ScoredTrie();
    addContinuations(
      trie,
      matches.continuations.map((tokens) => ({ tokens, weight: 1 })),
      { reach },
    );
    return { trie, matchLength: matches.matchLength, reach };
  }

  offer(history: readonly Token[], maxLen: number): SuffixOffer | null {
    const found = this.candidates(history, maxLen);
    if (!found) return null;
    const { trie, reach } = found;
    const path = likeliestPath(trie, maxLen);
    if (path.length === 0) return null;
    const scores = path.map((node) => trie.scores[node]!);
    const floor = this.options.floor;
    if (floor !== undefined && scores[0]! < (typeof floor === 'number' ? floor : floor())) return null;
    // A node's share of the occurrences is its score without the rates; each token's share of its parent's.
    const shares = path.map((node, j) => {
      const share = trie.scores[node]! / reach[j + 1]!;
      return j === 0 ? share : share / (trie.scores[path[j - 1]!]! / reach[j]!);
    });
    const scheduled = scores.filter((s) => s >= MIN_SCHEDULED_SCORE).length;
    return {
      kind: 'tree',
      tree: trie.best(maxLen).tree,
      chain: path.map((node) => trie.tokens[node]!),
      scheduled,
      matchLength: found.matchLength,
      shares,
      scores,
    };
  }

  acceptanceModel(): AcceptanceModel<SuffixOffer> {
    return new SuffixAcceptance(this.rates);
  }

  record(): void {}
}

/** The trie's nodes from the root, each its parent's best-scored child (the older of equals), at most `depth`. */
export function likeliestPath(trie: ScoredTrie, depth: number): number[] {
  // Best child by parent + 1 (index 0: the root's).
  const best = new Int32Array(trie.size + 1).fill(-1);
  for (let i = 0; i < trie.size; i++) {
    const slot = trie.parents[i]! + 1;
    const current = best[slot]!;
    if (current < 0 || trie.scores[i]! > trie.scores[current]!) best[slot] = i;
  }
  const path: number[] = [];
  for (let at = best[0]!; at >= 0 && path.length < depth; at = best[at + 1]!) path.push(at);
  return path;
}

/** What the suffix proposer needs of the policy it is verified under: the rates that policy keeps for it. */
export interface SourceRegistry {
  register(proposer: Proposer): void;
  model(source: string): AcceptanceModel | undefined;
}

/**
 * A suffix proposer scored with the rates `policy` keeps for the source (learned over the requests it
 * verified, as the policy keeps every source's estimates), registering the source on first use.
 */
export function suffixProposerFor(policy: SourceRegistry, lookup: SuffixLookup, options: SuffixProposerOptions = {}): SuffixProposer {
  const fresh = new SuffixProposer(lookup, new SuffixRates(), options);
  policy.register(fresh);
  const model = policy.model(fresh.id);
  return model instanceof SuffixAcceptance ? new SuffixProposer(lookup, model.rates, options) : fresh;
}
