import type { PolicySnapshot, ProposalSource, SpeculationSettings } from '../shared/types';
import { CostModel } from './costModel';

/** Expected tokens per verification when each guess is accepted with probability a: (1-a^(k+1))/(1-a). */
export function expectedTokensPerStep(a: number, k: number): number {
  if (a >= 1) return k + 1;
  return (1 - a ** (k + 1)) / (1 - a);
}

/** Acceptance assumed before any observation (worth a few of them). */
const DEFAULT_PRIORS: Record<ProposalSource, number> = { ngram: 0.6, draft: 0.5, lookahead: 0.4 };

/**
 * Per-source acceptance learned as a geometric rate: accepted / (accepted + rejections), starting
 * from a prior worth a few observations so early luck does not decide everything.
 */
export class AcceptanceTracker {
  private readonly counts: Record<ProposalSource, { accepted: number; rejected: number }>;

  constructor(
    priors: Partial<Record<ProposalSource, number>> = {},
    priorWeight = 4,
    private readonly decay = 0.98,
  ) {
    const p = { ...DEFAULT_PRIORS, ...priors };
    const count = (prior: number) => ({ accepted: prior * priorWeight, rejected: (1 - prior) * priorWeight });
    this.counts = { ngram: count(p.ngram), draft: count(p.draft), lookahead: count(p.lookahead) };
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

/** Steps between tries of a source the estimates have written off: doubles after each try that
 * does not win it back (a try of the draft costs a catch-up of its cache), reset once it pays. */
export const EXPLORE_FIRST_INTERVAL = 16;
export const EXPLORE_MAX_INTERVAL = 512;
/**
 * Speculative steps in a row after which one plain step is taken: the cost model weighs larger steps
 * against a one-token step measured just before them, so that step must stay fresh (~1% of the gain
 * at high acceptance).
 */
export const PLAIN_REFRESH_INTERVAL = 32;

/**
 * Picks per step: a long n-gram match first, the draft otherwise, nothing when the measured
 * acceptance and verify cost say speculation would cost more than it saves.
 */
export class SpeculationPolicy {
  private readonly exploration: Record<ProposalSource, { interval: number; since: number }> = {
    ngram: { interval: EXPLORE_FIRST_INTERVAL, since: 0 },
    draft: { interval: EXPLORE_FIRST_INTERVAL, since: 0 },
    lookahead: { interval: EXPLORE_FIRST_INTERVAL, since: 0 },
  };
  private speculativeInARow = 0;

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

  plan(options: { ngramAvailable: number; ngramMatchLength: number; draftAvailable: boolean; remaining: number; lookaheadAvailable?: number }): StepPlan {
    const plan = this.choose(options);
    if (!this.settings.adaptive || !plan) {
      this.speculativeInARow = 0;
      return plan;
    }
    if (++this.speculativeInARow > PLAIN_REFRESH_INTERVAL) {
      this.speculativeInARow = 0;
      return null;
    }
    return plan;
  }

  private choose(options: { ngramAvailable: number; ngramMatchLength: number; draftAvailable: boolean; remaining: number; lookaheadAvailable?: number }): StepPlan {
    const limit = Math.min(this.settings.maxProposal, Math.max(0, options.remaining - 1));
    if (limit <= 0) return null;
    const longMatch = options.ngramAvailable > 0 && options.ngramMatchLength >= this.settings.ngramMinMatch;
    const lookahead = options.lookaheadAvailable ?? 0;
    if (!this.settings.adaptive) {
      if (longMatch) return { source: 'ngram', maxLen: Math.min(limit, options.ngramAvailable) };
      if (lookahead > 0) return { source: 'lookahead', maxLen: Math.min(limit, lookahead) };
      return options.draftAvailable ? { source: 'draft', maxLen: limit } : null;
    }
    if (longMatch) {
      const k = this.bestLength('ngram', Math.min(limit, options.ngramAvailable));
      if (k > 0) return this.pays('ngram', k);
      if (this.exploreDue('ngram')) return { source: 'ngram', maxLen: Math.min(2, options.ngramAvailable, limit) };
    }
    // The target's own continuations: free to look up, so before the draft, which costs per token.
    if (lookahead > 0) {
      const k = this.bestLength('lookahead', Math.min(limit, lookahead));
      if (k > 0) return this.pays('lookahead', k);
      if (this.exploreDue('lookahead')) return { source: 'lookahead', maxLen: Math.min(2, lookahead, limit) };
    }
    if (options.draftAvailable) {
      const k = this.bestLength('draft', limit);
      if (k > 0) return this.pays('draft', k);
      if (this.exploreDue('draft')) return { source: 'draft', maxLen: Math.min(2, limit) };
    }
    return null;
  }

  snapshot(): PolicySnapshot {
    const sources: ProposalSource[] = ['ngram', 'draft', 'lookahead'];
    const per = <T>(f: (s: ProposalSource) => T) => Object.fromEntries(sources.map((s) => [s, f(s)])) as Record<ProposalSource, T>;
    return {
      ...this.cost.snapshot(),
      acceptance: per((s) => this.acceptance.rate(s)),
      bestLength: per((s) => this.bestLength(s, this.settings.maxProposal)),
      retryInterval: per((s) => this.exploreInterval(s)),
    };
  }

  /** Steps until the next try of a written-off source (for Show Stats and tests). */
  exploreInterval(source: ProposalSource): number {
    return this.exploration[source].interval;
  }

  private pays(source: ProposalSource, k: number): StepPlan {
    const e = this.exploration[source];
    e.interval = EXPLORE_FIRST_INTERVAL;
    e.since = 0;
    return { source, maxLen: k };
  }

  /** Now and then try a source the estimates have written off, so they can recover. */
  private exploreDue(source: ProposalSource): boolean {
    const e = this.exploration[source];
    if (++e.since < e.interval) return false;
    e.since = 0;
    e.interval = Math.min(e.interval * 2, EXPLORE_MAX_INTERVAL);
    return true;
  }
}
