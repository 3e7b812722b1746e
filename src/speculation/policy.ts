import type { PolicySnapshot } from '../shared/generationStats';
import type { ProposalSource } from '../shared/decoding';
import type { SpeculationSettings } from '../shared/settings';
import { CostModel } from './costModel';
import { FIXED_SHAPE_SIZES, FIXED_SHAPE_TRIAL_STEPS } from './verifyShape';
import { AcceptanceTracker, expectedTokensPerStep } from './acceptanceTracker';
import { COPY_MAX_PROPOSAL, CopyAcceptance } from './copyAcceptance';
import { RetrySchedule } from './retrySchedule';

export { AcceptanceTracker, expectedTokensPerStep } from './acceptanceTracker';
export { COPY_MAX_PROPOSAL, CopyAcceptance, type CopyPhase, copyPhase } from './copyAcceptance';

/** How near the best expected rate an untimed longer copy proposal must come to be tried (SpeculationPolicy.copyLength). */
const COPY_TRY_LONGER = 0.8;

export type StepPlan = { source: ProposalSource; maxLen: number } | null;

/** Which sources a generation can propose from: what a fixed shape's expected yield is estimated from. */
export interface ShapeOffers {
  ngram: boolean;
  draft: boolean;
  lookahead: boolean;
  copy: boolean;
}

/**
 * Extra cost of a token in a verify batch, as a share of one step, assumed for fixed shapes until
 * measured: on a graph backend a small model's batch is memory-bound, so the first fixed shape is tried
 * rather than written off by the CPU's prior; measured, its own cost decides.
 */
const FIXED_SHAPE_PRIOR_SLOPE = 0.05;
/** Generations between tries of fixed-shape verification after the policy wrote it off (doubles up to the max). */
export const SHAPE_EXPLORE_FIRST_INTERVAL = 4;
export const SHAPE_EXPLORE_MAX_INTERVAL = 64;
/** Weight of an older fixed-shape step against the latest (as AcceptanceTracker's decay). */
const SHAPE_DECAY = 0.98;

export interface PlanOptions {
  ngramAvailable: number;
  ngramMatchLength: number;
  draftAvailable: boolean;
  remaining: number;
  lookaheadAvailable?: number;
  /** Tokens the window copy proposer offers (its copy ahead, within the window and its offer length). */
  copyAvailable?: number;
  /** How many of them its own schedule proposes (short after a divergence, doubling in a run): what a non-adaptive policy takes. */
  copyScheduled?: number;
  /** Whether that proposal continues a fully accepted one (a copy run) or follows a divergence. */
  copyInRun?: boolean;
  /** Output tokens in a row that agree with where the copy resumes (Proposal.agreement). */
  copyAgreement?: number;
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
  private readonly exploration: Record<ProposalSource, RetrySchedule> = {
    ngram: new RetrySchedule(EXPLORE_FIRST_INTERVAL, EXPLORE_MAX_INTERVAL),
    draft: new RetrySchedule(EXPLORE_FIRST_INTERVAL, EXPLORE_MAX_INTERVAL),
    lookahead: new RetrySchedule(EXPLORE_FIRST_INTERVAL, EXPLORE_MAX_INTERVAL),
    copy: new RetrySchedule(EXPLORE_FIRST_INTERVAL, EXPLORE_MAX_INTERVAL),
  };
  private speculativeInARow = 0;
  /**
   * Per-token acceptance of fixed-shape steps (their proposal and padding together), counted as
   * AcceptanceTracker counts a source; undefined until the first such step (the sources' rates stand in).
   */
  private shapeCounts: { accepted: number; rejected: number } | undefined;
  private readonly shapeExploration = new RetrySchedule(SHAPE_EXPLORE_FIRST_INTERVAL, SHAPE_EXPLORE_MAX_INTERVAL);
  /** The shape the latest generation chose (Show Stats): 0 variable, 1 plain, else the fixed size. */
  private lastShape = 0;

  constructor(
    private readonly settings: SpeculationSettings,
    readonly cost = new CostModel(),
    readonly acceptance = new AcceptanceTracker(),
    /** How copy proposals fare, by phase (CopyAcceptance); `acceptance` keeps the source's overall rate (Show Stats). */
    readonly copyAcceptance = new CopyAcceptance(),
  ) {}

  /** Best proposal length for a source, or 0 when plain decoding is expected to be faster. */
  bestLength(source: ProposalSource, limit: number, a = this.acceptance.rate(source)): number {
    const perToken = source === 'draft' ? this.cost.draftCost() : 0;
    return this.fastest(limit, (k) => expectedTokensPerStep(a, k), perToken).k;
  }

  /**
   * The proposal length up to `limit` with the most expected tokens (`expected(k)`) per estimated ms of
   * its step (the verify batch of k + 1, and `perToken` ms to propose each), and that rate; k = 0 (plain
   * decoding) unless some length beats it.
   */
  private fastest(limit: number, expected: (k: number) => number, perToken = 0): { k: number; rate: number } {
    let best = { k: 0, rate: 1 / this.cost.verifyCost(1) };
    for (let k = 1; k <= limit; k++) {
      const rate = expected(k) / (this.cost.verifyCost(k + 1) + k * perToken);
      if (rate > best.rate) best = { k, rate };
    }
    return best;
  }

  /** Longest copy proposal: copyMaxProposal, or COPY_MAX_PROPOSAL. */
  get copyMaxProposal(): number {
    return this.settings.copyMaxProposal ?? COPY_MAX_PROPOSAL;
  }

  /** Records a verified copy proposal in the source's overall rate and in its phase's. */
  recordCopy(inRun: boolean, proposed: number, accepted: number, agreement?: number): void {
    this.acceptance.record('copy', proposed, accepted);
    this.copyAcceptance.record(inRun, proposed, accepted, agreement);
  }

  /**
   * How many of the `available` copied tokens to verify: the length with the most expected tokens per
   * measured ms of its batch (CopyAcceptance's expectation over CostModel's verify cost), or 0 when no
   * length beats plain decoding. On a CPU where small batches cost nearly a step a token, that is a long
   * proposal or none; on a GPU, where a batch of 33 costs ~3 steps, nearly always the whole offer.
   */
  copyLength(available: number, inRun: boolean, agreement?: number): number {
    if (available <= 0) return 0;
    const expected = this.copyAcceptance.expectedTokensUpTo(available, inRun, agreement);
    const best = this.fastest(available, (k) => expected[k]!);
    // A size never timed is estimated from those that were, at the slope between the largest two: on
    // a CPU, where a token costs less the larger the batch, that overstates larger batches, and a
    // policy that never tries one never learns otherwise. In a copy run, the whole offer is tried once
    // when its estimate comes near the best; timed, it competes on its own measurement after that.
    const whole = expected[available]! / this.cost.verifyCost(available + 1);
    if (inRun && best.k > 0 && available > best.k && !this.cost.measured(available + 1) && whole >= COPY_TRY_LONGER * best.rate) return available;
    return best.k;
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
      // Not adaptive: the proposer's own schedule decides.
      if (!this.settings.adaptive) return { source: 'copy', maxLen: Math.max(1, Math.min(options.copyScheduled ?? copy, copy)) };
      const k = this.copyLength(copy, options.copyInRun ?? false, options.copyAgreement);
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

  get verifyShapeMode(): 'fixed' | 'variable' {
    const asked = this.settings.verifyShape ?? 'auto';
    return asked === 'fixed' || (asked === 'auto' && this.settings.graphReplay === true) ? 'fixed' : 'variable';
  }

  /**
   * A generation's verify shape in fixed-shape mode: the size with the most expected tokens per
   * measured ms of its (warm) batch, or 1 (plain decoding, every step one token) when none beats a warm
   * plain step, or when no warm plain step was measured yet (nothing to compare with). 0 in variable
   * mode. A written-off fixed shape is tried again now and then (the acceptance it was judged by is not
   * updated while nothing is proposed).
   */
  chooseShape(offers: ShapeOffers): number {
    this.lastShape = this.pickShape(offers);
    return this.lastShape;
  }

  private pickShape(offers: ShapeOffers): number {
    if (this.verifyShapeMode !== 'fixed') return 0;
    if (!offers.ngram && !offers.draft && !offers.lookahead && !offers.copy) return 1;
    if (this.settings.fixedShapeSize) return this.settings.fixedShapeSize;
    // Not adaptive: the proposal length asked for, every step.
    if (!this.settings.adaptive) return this.settings.maxProposal + 1;
    if (!this.cost.measured(1)) return 1;
    const plainRate = 1 / this.cost.verifyCost(1);
    let best = { size: 1, rate: plainRate };
    for (const size of FIXED_SHAPE_SIZES) {
      const rate = this.expectedShapeYield(size, offers) / this.cost.verifyCost(size, FIXED_SHAPE_PRIOR_SLOPE);
      if (rate > best.rate) best = { size, rate };
    }
    if (best.size > 1) {
      this.shapeExploration.reset();
      return best.size;
    }
    return this.shapeExploration.due() ? FIXED_SHAPE_SIZES[0]! : 1;
  }

  /**
   * Expected tokens of one fixed-shape step of `size`: from the acceptance fixed-shape steps measured
   * (one geometric rate, whatever size measured it), else from the sources' own rates.
   */
  private expectedShapeYield(size: number, offers: ShapeOffers): number {
    const c = this.shapeCounts;
    if (c) return expectedTokensPerStep(c.accepted / (c.accepted + c.rejected), size - 1);
    let best = 1;
    if (offers.copy) best = Math.max(best, this.copyAcceptance.expectedTokens(size - 1, true));
    for (const source of ['ngram', 'lookahead', 'draft'] as const) {
      if (offers[source]) best = Math.max(best, expectedTokensPerStep(this.acceptance.rate(source), size - 1));
    }
    return best;
  }

  /** Records what a fixed-shape step of `size` tokens yielded (the target's token included). */
  recordShapeStep(size: number, tokens: number): void {
    const c = (this.shapeCounts ??= { accepted: 0, rejected: 0 });
    c.accepted = c.accepted * SHAPE_DECAY + (tokens - 1);
    c.rejected = c.rejected * SHAPE_DECAY + (tokens < size ? 1 : 0);
  }

  /**
   * Whether a generation keeps its fixed shape after `steps` steps that yielded `tokens`: once it had
   * FIXED_SHAPE_TRIAL_STEPS, not when its tokens per measured ms of the batch fall below a warm plain
   * step's. Then the rest of the generation decodes plainly (one shape change, not one a step).
   */
  keepShape(size: number, steps: number, tokens: number): boolean {
    if (!this.settings.adaptive || steps < FIXED_SHAPE_TRIAL_STEPS) return true;
    if (!this.cost.measured(1) || !this.cost.measured(size)) return true;
    return tokens / steps / this.cost.verifyCost(size) >= 1 / this.cost.verifyCost(1);
  }

  snapshot(): PolicySnapshot {
    const sources: ProposalSource[] = ['ngram', 'draft', 'lookahead', 'copy'];
    const per = <T>(f: (s: ProposalSource) => T) => Object.fromEntries(sources.map((s) => [s, f(s)])) as Record<ProposalSource, T>;
    return {
      ...this.cost.snapshot(),
      acceptance: per((s) => this.acceptance.rate(s)),
      bestLength: per((s) => (s === 'copy' ? this.copyLength(this.copyMaxProposal, true) : this.bestLength(s, this.settings.maxProposal))),
      retryInterval: per((s) => this.exploreInterval(s)),
      verifyShape: { mode: this.verifyShapeMode, size: this.lastShape },
    };
  }

  /** Steps until the next try of a written-off source (for Show Stats and tests). */
  exploreInterval(source: ProposalSource): number {
    return this.exploration[source].interval;
  }

  private pays(source: ProposalSource, k: number): StepPlan {
    this.exploration[source].reset();
    return { source, maxLen: k };
  }

  /** Now and then try a source the estimates have written off, so they can recover. */
  private exploreDue(source: ProposalSource): boolean {
    return this.exploration[source].due();
  }
}
