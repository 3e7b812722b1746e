// The proposers of a request that read text: the n-gram proposer (the prompt and the generation so
// far first, the most local, then the open documents of the session's index) and the suffix proposer
// (every occurrence of the history's ending in the same places, merged by frequency). The index's
// tokens are the target's: a model of another vocabulary, a next-edit model of its own, gets the
// local part only.
import { findInSequence, HistoryIndex, type NgramIndex, suffixMatches } from '../ngram';
import type { SpeculationSettings } from '../shared/settings';
import { NgramProposer } from '../speculation/ngramProposer';
import { type SourceRegistry, type SuffixProposer, type SuffixProposerOptions, suffixProposerFor } from '../speculation/suffixProposer';

export function documentNgramProposer(documents: NgramIndex | null, documentKey: string | undefined, speculation: SpeculationSettings): NgramProposer {
  const { ngramMinMatch: minN, ngramMaxMatch: maxN } = speculation;
  return new NgramProposer((history, maxLen) => {
    const local = findInSequence(history, { minN, maxN, maxLen });
    const global = documents?.lookup(history, maxLen, { preferKey: documentKey }) ?? null;
    const best = !local ? global : !global ? local : global.n > local.n ? global : local;
    if (!best || best.n < 1) return null;
    return { tokens: best.tokens, matchLength: best.n };
  });
}

/** Occurrences merged at most (the history's newest first, then the index's): a one-token match recurs hundreds of times. */
export const SUFFIX_MAX_OCCURRENCES = 32;

/**
 * The suffix proposer of one request, over its own history (indexed as it grows) and the index,
 * scored with the rates `policy` keeps for it. Matches up to ngramMaxMatch tokens.
 */
export function documentSuffixProposer(
  documents: NgramIndex | null,
  documentKey: string | undefined,
  speculation: SpeculationSettings,
  policy: SourceRegistry,
  options: SuffixProposerOptions = {},
): SuffixProposer {
  const history = new HistoryIndex();
  const maxN = speculation.ngramMaxMatch;
  return suffixProposerFor(policy, (context, maxLen) => suffixMatches(history, documents, context, { maxN, maxLen, limit: SUFFIX_MAX_OCCURRENCES, preferKey: documentKey }), options);
}

/** Which text proposers a request gets, whatever the settings say (the benchmark's side-by-side modes). */
export interface TextSources {
  ngram?: boolean;
  suffix?: boolean;
}

/**
 * The text proposers of a request: the n-gram one, and the suffix one beside it (after it in the
 * modes' order) where `sources` or the settings ask for it (speculation.suffix, off by default).
 * Beside, not in its place: before a draft the n-gram one's rule (a match of 3+ tokens first) keeps
 * more tokens than the suffix one's scores against the draft's rate (docs/BENCHMARK.md, "The suffix
 * proposer").
 */
export function textProposers(
  documents: NgramIndex | null,
  documentKey: string | undefined,
  speculation: SpeculationSettings,
  policy: SourceRegistry,
  sources: TextSources,
  options: SuffixProposerOptions = {},
): (NgramProposer | SuffixProposer)[] {
  return [
    ...((sources.ngram ?? true) ? [documentNgramProposer(documents, documentKey, speculation)] : []),
    ...((sources.suffix ?? speculation.suffix ?? false) ? [documentSuffixProposer(documents, documentKey, speculation, policy, options)] : []),
  ];
}
