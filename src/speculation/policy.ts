import type { PolicySnapshot, ProposalSource, SpeculationSettings } from '../shared/types';
import { CostModel } from './costModel';

/** Expected tokens per verification when each guess is accepted with probability a: (1-a^(k+1))/(1-a). */
export function expectedTokensPerStep(a: number, k: number): number {
  if (a >= 1) return k + 1;
  return (1 - a ** (k + 1)) / (1 - a);
}

/**
 * Acceptance assumed before any observation (worth a few of them). The window copy: most of a
 * next-edit window is the current window unchanged (issue #39: a perfect model fed by it needs one
 * evaluation per 4 tokens at k = 4).
 */
const DEFAULT_PRIORS: Record<ProposalSource, number> = { ngram: 0.6, draft: 0.5, lookahead: 0.4, copy: 0.75 };

/** The window copy proposer's longest proposal when SpeculationSettings.copyMaxProposal is not set. */
export const COPY_MAX_PROPOSAL = 32;

/**
 * Acceptance of a copy proposal that continues a fully accepted one (inside a copy run), assumed before
 * any observation: a run that was right so far mostly stays right until the edit.
 */
const COPY_RUN_PRIOR = 0.95;

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
    this.counts = { ngram: count(p.ngram), draft: count(p.draft), lookahead: count(p.lookahead), copy: count(p.copy) };
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

export interface PlanOptions {
  ngramAvailable: number;
  ngramMatchLength: number;
  draftAvailable: boolean;
  remaining: number;
  lookaheadAvailable?: number;
  /** Tokens the window copy proposer offers (the length its schedule wants, within the window). */
  copyAvailable?: number;
  /** Whether that proposal continues a fully accepted one (a copy run) or follows a divergence. */
  copyInRun?: boolean;
}

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
 * Picks per step: the window copy when it offers a proposal (next edits), then a long n-gram match,
 * the target's lookahead, the draft otherwise, nothing when the measured
 * acceptance and verify cost say speculation would cost more than it saves.
 */
export class SpeculationPolicy {
  private readonly exploration: Record<ProposalSource, { interval: number; since: number }> = {
    ngram: { interval: EXPLORE_FIRST_INTERVAL, since: 0 },
    draft: { interval: EXPLORE_FIRST_INTERVAL, since: 0 },
    lookahead: { interval: EXPLORE_FIRST_INTERVAL, since: 0 },
    copy: { interval: EXPLORE_FIRST_INTERVAL, since: 0 },
  };
  private speculativeInARow = 0;
  /**
   * The copy source's acceptance by phase: a proposal right after a divergence (re-synchronised by the
   * output's last tokens) is a guess; one continuing a fully accepted proposal is a copy run, accepted
   * whole far more often. One geometric rate for both would cap a run's length at what a guess pays.
   * `acceptance` keeps the source's overall rate (Show Stats).
   */
  readonly copyPhases = { fresh: new AcceptanceTracker({ copy: DEFAULT_PRIORS.copy }), run: new AcceptanceTracker({ copy: COPY_RUN_PRIOR }) };

  constructor(
    private readonly settings: SpeculationSettings,
    readonly cost = new CostModel(),
    readonly acceptance = new AcceptanceTracker(),
  ) {}

  /** Best proposal length for a source, or 0 when plain decoding is expected to be faster. */
  bestLength(source: ProposalSource, limit: number, a = this.acceptance.rate(source)): number {
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

  /** Longest copy proposal: copyMaxProposal, or COPY_MAX_PROPOSAL. */
  get copyMaxProposal(): number {
    return this.settings.copyMaxProposal ?? COPY_MAX_PROPOSAL;
  }

  /** Records a verified copy proposal in the source's overall rate and in its phase's. */
  recordCopy(inRun: boolean, proposed: number, accepted: number): void {
    this.acceptance.record('copy', proposed, accepted);
    (inRun ? this.copyPhases.run : this.copyPhases.fresh).record('copy', proposed, accepted);
  }

  /**
   * How many of the copy proposer's `wanted` tokens to verify: all of them when, at the phase's measured
   * acceptance and the measured verify cost, that beats plain decoding; else the best shorter length;
   * 0 when no length pays (plain decoding is faster). The proposer's own schedule (short after a
   * divergence, doubling in a run) decides the length; the measurements only bound it.
   */
  copyLength(wanted: number, inRun: boolean): number {
    if (wanted <= 0) return 0;
    const a = (inRun ? this.copyPhases.run : this.copyPhases.fresh).rate('copy');
    const rate = expectedTokensPerStep(a, wanted) / this.cost.verifyCost(wanted + 1);
    if (rate > 1 / this.cost.verifyCost(1)) return wanted;
    return this.bestLength('copy', wanted - 1, a);
  }

  plan(options: PlanOptions): StepPlan {
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

  private choose(options: PlanOptions): StepPlan {
    // The window copy first when it has a proposal: it is free to look up and, in a copy run, the
    // likeliest source; its own cap may exceed maxProposal.
    const copy = Math.min(options.copyAvailable ?? 0, this.copyMaxProposal, Math.max(0, options.remaining - 1));
    if (copy > 0) {
      if (!this.settings.adaptive) return { source: 'copy', maxLen: copy };
      const k = this.copyLength(copy, options.copyInRun ?? false);
      if (k > 0) return this.pays('copy', k);
      if (this.exploreDue('copy')) return { source: 'copy', maxLen: Math.min(2, copy) };
    }
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
    const sources: ProposalSource[] = ['ngram', 'draft', 'lookahead', 'copy'];
    const per = <T>(f: (s: ProposalSource) => T) => Object.fromEntries(sources.map((s) => [s, f(s)])) as Record<ProposalSource, T>;
    return {
      ...this.cost.snapshot(),
      acceptance: per((s) => this.acceptance.rate(s)),
      bestLength: per((s) => (s === 'copy' ? this.copyLength(this.copyMaxProposal, true) : this.bestLength(s, this.settings.maxProposal))),
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
