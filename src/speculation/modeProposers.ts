import type { DecodeMode, SourceId } from '../shared/decoding';
import type { Proposer } from './proposer';

/**
 * The sources each decode mode proposes from, in the order the policy prefers them when several pay:
 * the next-edit window copy first (free, and in a copy run the likeliest), a long n-gram match, the
 * suffix proposer's frequency-weighted guesses (also after shorter matches), the target's lookahead
 * (free), then the draft (it costs its evaluations).
 */
const MODE_SOURCES: Readonly<Record<DecodeMode, readonly SourceId[]>> = {
  plain: [],
  ngram: ['ngram', 'suffix', 'lookahead'],
  draft: ['draft'],
  hybrid: ['copy', 'ngram', 'suffix', 'lookahead', 'draft'],
  copy: ['copy'],
};

/** The proposers a request of `mode` decodes with, of those at hand (absent ones left out), in the mode's order. */
export function proposersFor(mode: DecodeMode, available: readonly (Proposer | undefined)[]): Proposer[] {
  return MODE_SOURCES[mode].flatMap((id) => available.filter((p): p is Proposer => p?.id === id));
}
