import type { Token } from '../shared/decoding';
import type { SpeculationSettings } from '../shared/settings';
import { type AcceptanceModel, type ChainOffer, chainOffer, type LookupProposer } from './proposer';

/** An n-gram offer: how many tokens of the history's end it matched. */
export interface NgramOffer extends ChainOffer {
  readonly matchLength: number;
}

/** The longest n-gram match of the history's end and the tokens that followed it there, at most maxLen; null when none. */
export type NgramLookup = (history: readonly Token[], maxLen: number) => { tokens: readonly Token[]; matchLength: number } | null;

/**
 * What followed the history's last tokens where they occurred before: in the prompt and the output,
 * the open documents, earlier completions (inference/documentNgrams.ts does the lookup). Free to look
 * up. A match shorter than ngramMinMatch is not proposed: a short match is often a coincidence.
 */
export class NgramProposer implements LookupProposer<NgramOffer> {
  readonly id = 'ngram';
  readonly asks = 'lookup';

  constructor(private readonly lookup: NgramLookup) {}

  offer(history: readonly Token[], maxLen: number): NgramOffer | null {
    const match = this.lookup(history, maxLen);
    return match ? chainOffer(match.tokens, { matchLength: match.matchLength }) : null;
  }

  acceptanceModel(): AcceptanceModel<NgramOffer> {
    return { prior: 0.6, usable: (offer: NgramOffer, settings: SpeculationSettings) => offer.matchLength >= settings.ngramMinMatch };
  }

  record(): void {}
}
