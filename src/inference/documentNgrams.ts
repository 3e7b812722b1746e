// The n-gram proposer of a request: the prompt and the generation so far first (most local), then
// the open documents of the session's index (their tokens are the target's: a model of another
// vocabulary, a next-edit model of its own, gets the local part only).
import type { NgramIndex } from '../ngram';
import { findInSequence } from '../ngram';
import type { SpeculationSettings } from '../shared/settings';
import { NgramProposer } from '../speculation/ngramProposer';

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
