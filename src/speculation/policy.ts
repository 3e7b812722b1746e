import type { ProposalSource, SpeculationSettings } from '../engine/types';
import { CostModel } from './costModel';

/** Expected tokens per verification when each guess is accepted with probability a: (1-a^(k+1))/(1-a). */
export function expectedTokensPerStep(a: number, k: number): number {
  if (a >= 1) return k + 1;
  return (1 - Math.pow(a, k + 1)) / (1 - a);
}

/**
 * Per-source acceptance learned as a geometric rate: accepted / (accepted + rejections), starting
 * from a prior worth a few observations so early luck does not decide everything.
 */
export class AcceptanceTracker {
  private readonly counts: Record<ProposalSource, { accepted: number; rejected: number }>;

  constructor(priors: Record<ProposalSource, number> = { ngram: 0.6, draft: 0.5 }, priorWeight = 4, private readonly decay = 0.98) {
    this.counts = {
      ngram: { accepted: priors.ngram * priorWeight, rejected: (1 - priors.ngram) * priorWeight },
      draft: { accepted: priors.draft * priorWeight, rejected: (1 - priors.draft) * priorWeight },
    };
  }

  record(source: ProposalSource, proposed: number, accepted: number): void {
    const c = this.counts[source];
    // Decay keeps the estimate following the text at hand.
    c.accepted = c.accepted * this.decay + accepted;
    c.rejected = c.rejected * this.decay + (accepted < proposed ? 1 : 0);
  }

  rate(source: ProposalSource): number {
    const c = this.counts[source];
    return c.accepted / (c.accepted + c.rejected);
  }
}

export type StepPlan = { source: ProposalSource; maxLen: number } | null;

/**
 * Picks per step: a long n-gram match first, the draft otherwise, nothing when the measured
 * acceptance and verify cost say speculation would cost more than it saves.
 */
export class SpeculationPolicy {
  private stepsSinceExplore = 0;

  constructor(
    private readonly settings: SpeculationSettings,
    readonly cost = new CostModel(),
    readonly acceptance = new AcceptanceTracker(),
  ) {}

  /** Best proposal length for a source, or 0 when plain decoding is expected to be faster. */
  bestLength(source: ProposalSource, limit: number): number {
    const a = this.acceptance.rate(source);
    const perToken = source === 'draft' ? this.cost.draftCost() : 0;
    const plainRate = 1 / this.cost.verifyCost(1);
    let bestK = 0;
    let bestRate = plainRate;
    for (let k = 1; k <= limit; k++) {
      const rate = expectedTokensPerStep(a, k) / (this.cost.verifyCost(k + 1) + k * perToken);
      if (rate > bestRate) {
        bestRate = rate;
        bestK = k;
      }
    }
    return bestK;
  }

  plan(options: { ngramAvailable: number; ngramMatchLength: number; draftAvailable: boolean; remaining: number }): StepPlan {
    const limit = Math.min(this.settings.maxProposal, Math.max(0, options.remaining - 1));
    if (limit <= 0) return null;
    const longMatch = options.ngramAvailable > 0 && options.ngramMatchLength >= this.settings.ngramMinMatch;
    if (!this.settings.adaptive) {
      if (longMatch) return { source: 'ngram', maxLen: Math.min(limit, options.ngramAvailable) };
      return options.draftAvailable ? { source: 'draft', maxLen: limit } : null;
    }
    // Now and then try a source the estimates have written off, so they can recover.
    const explore = ++this.stepsSinceExplore >= 16;
    if (longMatch) {
      const k = this.bestLength('ngram', Math.min(limit, options.ngramAvailable));
      if (k > 0) return { source: 'ngram', maxLen: k };
      if (explore) {
        this.stepsSinceExplore = 0;
        return { source: 'ngram', maxLen: Math.min(2, options.ngramAvailable, limit) };
      }
    }
    if (options.draftAvailable) {
      const k = this.bestLength('draft', limit);
      if (k > 0) return { source: 'draft', maxLen: k };
      if (explore) {
        this.stepsSinceExplore = 0;
        return { source: 'draft', maxLen: Math.min(2, limit) };
      }
    }
    return null;
  }
}
