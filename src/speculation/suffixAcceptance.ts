// How far a suffix proposer's guesses hold, learned from its verified chains. A guess after a match of
// ℓ tokens is right with a chance c(ℓ) × r, r the share of the matched occurrences that continued
// that way (frequency) and c(ℓ) what the target adds to it: how often it follows the majority of a
// match that long. The longer the match the likelier (one token matched is often a coincidence,
// eight seldom), and a guess deep in a chain extends the match: after j accepted tokens the match
// is ℓ + j long. c is learned per match length from every verified token: hits over the shares that
// predicted them (the estimate of a rate scaled per trial), from a prior that grows with the length.
import { expectedTokensPerStep } from './acceptanceTracker';
import type { AcceptanceModel, TreeOffer } from './proposer';

/** A suffix proposer's offer: a tree of its candidates, its likeliest path as the chain. */
export interface SuffixOffer extends TreeOffer {
  /** How many tokens of the history's ending the occurrences matched. */
  readonly matchLength: number;
  /** Per chain token: the share of the occurrences through its parent that continued with it (frequency). */
  readonly shares: readonly number[];
  /** Per chain token: the estimated chance that it and all before it are accepted. */
  readonly scores: readonly number[];
}

/** Match lengths learned apart; longer ones share the last rate. */
export const TRACKED_MATCH_LENGTHS = 16;
/** What a rate is worth before any observation, in trials. */
const PRIOR_WEIGHT = 2;
/** Weight of an older trial against the latest (as AcceptanceTracker's decay): the estimate follows the text at hand. */
const DECAY = 0.98;
/** A rate stays inside this range: no guess is ever certain, none worthless forever. */
const MIN_RATE = 0.02;
const MAX_RATE = 0.98;

/** The rate assumed for a match of ℓ tokens before any observation: from 0.3 (one token) up to 0.9. */
export function priorRate(matchLength: number): number {
  return Math.min(0.9, 0.3 + 0.075 * (matchLength - 1));
}

const bucket = (matchLength: number) => Math.max(1, Math.min(TRACKED_MATCH_LENGTHS, matchLength));

/** c(ℓ) per match length, learned; kept as long as a policy keeps its sources' estimates. */
export class SuffixRates {
  private readonly hits = new Float64Array(TRACKED_MATCH_LENGTHS + 1);
  private readonly mass = new Float64Array(TRACKED_MATCH_LENGTHS + 1);
  /** Per-token acceptance of whole chains, for a typical offer (geometric, as AcceptanceTracker counts a source). */
  private chain = { accepted: 0.5 * PRIOR_WEIGHT * 2, rejected: 0.5 * PRIOR_WEIGHT * 2 };

  /** c(ℓ): the chance the target follows a guess after a match of ℓ tokens, per unit of frequency share. */
  rate(matchLength: number): number {
    const b = bucket(matchLength);
    const c = (this.hits[b]! + PRIOR_WEIGHT * priorRate(b)) / (this.mass[b]! + PRIOR_WEIGHT);
    return Math.min(MAX_RATE, Math.max(MIN_RATE, c));
  }

  /**
   * reach[d] for d = 0..depth: the chance that a path holds d tokens deep, apart from its shares, after a
   * match of `matchLength` tokens (the product of c over the lengths the match grows through).
   */
  reach(matchLength: number, depth: number): number[] {
    const out = [1];
    for (let d = 1; d <= depth; d++) out.push(out[d - 1]! * this.rate(matchLength + d - 1));
    return out;
  }

  /** Per-token acceptance of chains as a whole (the policy's typical offer). */
  chainRate(): number {
    return this.chain.accepted / (this.chain.accepted + this.chain.rejected);
  }

  /** A verified chain: its first `proposed` tokens verified, `accepted` of them kept. */
  record(offer: Pick<SuffixOffer, 'matchLength' | 'shares'>, proposed: number, accepted: number): void {
    if (proposed <= 0) return;
    // The tokens tried: every accepted one and the first rejected (the rest were never on the target's path).
    const tried = Math.min(proposed, accepted + 1, offer.shares.length);
    for (let j = 0; j < tried; j++) {
      const b = bucket(offer.matchLength + j);
      this.hits[b] = this.hits[b]! * DECAY + (j < accepted ? 1 : 0);
      this.mass[b] = this.mass[b]! * DECAY + offer.shares[j]!;
    }
    this.chain.accepted = this.chain.accepted * DECAY + accepted;
    this.chain.rejected = this.chain.rejected * DECAY + (accepted < proposed ? 1 : 0);
  }
}

/**
 * The policy's view of a suffix proposer: an offer's expected tokens are its chain's scores (each
 * token's chance to be accepted with all before it: the frequency shares times the learned rates),
 * and every verified chain teaches the rates.
 */
export class SuffixAcceptance implements AcceptanceModel<SuffixOffer> {
  readonly prior = 0.5;

  constructor(readonly rates: SuffixRates) {}

  usable(offer: SuffixOffer): boolean {
    return offer.chain.length > 0;
  }

  expectedTokensUpTo(limit: number, offer?: SuffixOffer): Float64Array {
    const out = new Float64Array(limit + 1);
    if (!offer) {
      const a = this.rates.chainRate();
      for (let k = 0; k <= limit; k++) out[k] = expectedTokensPerStep(a, k);
      return out;
    }
    out[0] = 1;
    for (let k = 1; k <= limit; k++) out[k] = out[k - 1]! + (offer.scores[k - 1] ?? 0);
    return out;
  }

  record(offer: SuffixOffer, proposed: number, accepted: number): void {
    this.rates.record(offer, proposed, accepted);
  }
}
