import type { PolicySnapshot } from '../shared/generationStats';
import type { SourceId } from '../shared/decoding';
import type { SpeculationSettings } from '../shared/settings';
import { CostModel } from './costModel';
import { FIXED_SHAPE_SIZES, FIXED_SHAPE_TRIAL_STEPS } from './verifyShape';
import { AcceptanceTracker, expectedTokensPerStep, NEUTRAL_PRIOR } from './acceptanceTracker';
import { type AcceptanceModel, type Offer, offeredChain, type Proposer } from './proposer';
import { RetrySchedule } from './retrySchedule';
import { firstStepLength } from './stepSplit';
import { TreeChoice } from './treeChoice';

export { AcceptanceTracker, expectedTokensPerStep } from './acceptanceTracker';

/** How near the best expected rate an untimed whole offer must come to be tried (AcceptanceModel.triesWhole). */
const TRY_WHOLE_NEAR = 0.8;

export type StepPlan = { source: SourceId; maxLen: number } | null;

/** A source at a step, as the policy weighs it: a lookup's offer (null: nothing on offer); a model is asked only once chosen. */
export interface SourceOffer {
  proposer: Proposer;
  offer?: Offer | null;
}

/** What the policy keeps of a source across generations. */
interface SourceState {
  asks: Proposer['asks'];
  model: AcceptanceModel;
  exploration: RetrySchedule;
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

/** Steps between tries of a source the estimates have written off: doubles after each try that
 * does not win it back (a try of the draft costs a catch-up of its cache), reset once it pays. */
export const EXPLORE_FIRST_INTERVAL = 16;
export const EXPLORE_MAX_INTERVAL = 512;
/**
 * Speculative steps in a row after which one plain step is taken: the cost model weighs larger steps
 * against a one-token step measured just before them, so that step must stay fresh; it costs a small
 * share of the gain at high acceptance.
 */
export const PLAIN_REFRESH_INTERVAL = 32;

/**
 * Picks per step, among the sources' offers in the request's order (speculation/modeProposers.ts: the
 * window copy, a long n-gram match, the target's lookahead, the draft), the first whose measured
 * acceptance and verify cost say it pays, and its length; nothing when speculation would cost more
 * than it saves. Each source is weighed by its own acceptance model (Proposer.acceptanceModel), kept
 * per source id across generations.
 */
export class SpeculationPolicy {
  private readonly sources = new Map<SourceId, SourceState>();
  private speculativeInARow = 0;
  /**
   * Per-token acceptance of fixed-shape steps (their proposal and padding together), counted as
   * AcceptanceTracker counts a source; undefined until the first such step (the sources' rates stand in).
   */
  private shapeCounts: { accepted: number; rejected: number } | undefined;
  private readonly shapeExploration = new RetrySchedule(SHAPE_EXPLORE_FIRST_INTERVAL, SHAPE_EXPLORE_MAX_INTERVAL);
  /** The shape the latest generation chose (Show Stats): 0 variable, 1 plain, else the fixed size. */
  private lastShape = 0;
  /** Tree or chain per source on a fixed shape, from what tree steps measured (speculation/treeChoice.ts). */
  readonly trees = new TreeChoice();

  constructor(
    private readonly settings: SpeculationSettings,
    readonly cost = new CostModel(),
    /** Each source's overall per-token rate (Show Stats, and the estimate of sources without a model of their own). */
    readonly acceptance = new AcceptanceTracker(),
  ) {}

  /** Starts keeping a source's estimates (its proposer's acceptance model, its retry schedule) the first time its id is met. */
  register(proposer: Proposer): void {
    this.state(proposer);
  }

  private state(proposer: Proposer): SourceState {
    let state = this.sources.get(proposer.id);
    if (!state) {
      const model = proposer.acceptanceModel?.() ?? { prior: NEUTRAL_PRIOR };
      state = { asks: proposer.asks, model, exploration: new RetrySchedule(EXPLORE_FIRST_INTERVAL, EXPLORE_MAX_INTERVAL) };
      this.sources.set(proposer.id, state);
      this.acceptance.register(proposer.id, model.prior);
    }
    return state;
  }

  /** A source's acceptance model, once its id was met. */
  model(source: SourceId): AcceptanceModel | undefined {
    return this.sources.get(source)?.model;
  }

  /** The sources met so far, in the order they were met. */
  get sourceIds(): SourceId[] {
    return [...this.sources.keys()];
  }

  /** Longest proposal of a source: its model's, else the settings' maxProposal. */
  longest(source: SourceId): number {
    return this.sources.get(source)?.model.longest?.(this.settings) ?? this.settings.maxProposal;
  }

  /**
   * How many tokens of a source's offer (a typical one when absent) to verify, at most `limit`: the
   * length with the most expected tokens (its acceptance model's, else its geometric rate's) per
   * estimated ms of its step (the verify batch, and the source's own ms per token when it runs a
   * model), or 0 when no length beats plain decoding. On a CPU where small batches cost nearly a step
   * a token, a copy is long or none; on a GPU, where a large batch costs a few steps, nearly always whole.
   * A lookup weighed by its own model (the copy, the suffix proposer) then verifies the first step of
   * the cheapest split of that length or of the whole offer (stepSplit.ts): a short step first where
   * its guesses are likely wrong at once but, when right, run far.
   */
  bestLength(source: SourceId, limit: number, offer?: Offer): number {
    if (limit <= 0) return 0;
    const state = this.sources.get(source);
    const model = state?.model;
    const modelled = model?.expectedTokensUpTo?.(limit, offer);
    const rate = modelled ? 0 : this.acceptance.rate(source);
    const expected = modelled ? (k: number) => modelled[k]! : (k: number) => expectedTokensPerStep(rate, k);
    const perToken = this.proposalCost(source);
    const stepCost = this.stepCosts(limit);
    const best = this.fastest(limit, expected, stepCost, perToken);
    // A size never timed is estimated from those that were, at the slope between the largest two: on
    // a CPU, where a token costs less the larger the batch, that overstates larger batches, and a
    // policy that never tries one never learns otherwise. Where the model asks for it (a copy run),
    // the whole offer is tried once when its estimate comes near the best; timed, it competes on its
    // own measurement after that.
    if (model?.triesWhole?.(offer) && best.k > 0 && limit > best.k && !this.cost.measured(limit + 1)) {
      const whole = expected(limit) / (stepCost[limit + 1]! + limit * perToken);
      if (whole >= TRY_WHOLE_NEAR * best.rate) return limit;
    }
    // A lookup's offer weighed by its own model may be verified faster in several steps (stepSplit.ts).
    if (!modelled || perToken > 0) return best.k;
    return firstStepLength(best.k, limit, modelled, stepCost);
  }

  /** The estimated ms of a verify batch of b tokens at index b, for b = 1..limit + 1 (index 0 unused). */
  private stepCosts(limit: number): Float64Array {
    return Float64Array.from({ length: limit + 2 }, (_, b) => (b === 0 ? 0 : this.cost.verifyCost(b)));
  }

  /**
   * The proposal length up to `limit` with the most expected tokens (`expected(k)`) per estimated ms of
   * its step (the verify batch of k + 1 at `stepCost[k + 1]`, and `perToken` ms to propose each), and
   * that rate; k = 0 (plain decoding) unless some length beats it.
   */
  private fastest(limit: number, expected: (k: number) => number, stepCost: ArrayLike<number>, perToken = 0): { k: number; rate: number } {
    let best = { k: 0, rate: 1 / stepCost[1]! };
    for (let k = 1; k <= limit; k++) {
      const rate = expected(k) / (stepCost[k + 1]! + k * perToken);
      if (rate > best.rate) best = { k, rate };
    }
    return best;
  }

  /** ms a source spends per token it proposes: a model's measured time, nothing for a lookup. */
  private proposalCost(source: SourceId): number {
    return this.sources.get(source)?.asks === 'model' ? this.cost.proposalCost(source) : 0;
  }

  /**
   * How far apart tries of a written-off source are spaced, as a multiple of its retry schedule: a
   * try of `tryLength` tokens costs c extra steps, and the most it can win is g of a step per step (an
   * offer of up to `limit` tokens accepted whole, at the current cost estimates); spacing them by c / g
   * (at least 1) keeps what tries cost in proportion to what they can win. On a CPU, where a batch costs
   * about what it holds and a whole offer wins little, tries come much rarer; where batches cost little
   * more than a token, as scheduled. Null when even a whole offer would not beat plain decoding: a try
   * could not change the choice. A try whose batch size was never timed is made as scheduled: it times
   * that size, where the estimates would extrapolate (from a batch of 2, whose cost on a CPU is mostly
   * a kernel change, they overstate every larger one).
   */
  private trySpacing(proposer: Proposer, limit: number, tryLength: number): number | null {
    if (!this.cost.measured(tryLength + 1)) return 1;
    const perToken = this.proposalCost(proposer.id);
    const plainMs = this.cost.verifyCost(1);
    const perfect = this.fastest(limit, (k) => k + 1, this.stepCosts(limit), perToken);
    if (perfect.k === 0) return null;
    const gain = perfect.rate * plainMs - 1;
    const tryCost = (this.cost.verifyCost(tryLength + 1) + tryLength * perToken) / plainMs - 1;
    return Math.max(1, tryCost / gain);
  }

  /** The step's source and length among `offers` (the preferred first), with `remaining` tokens left to write; null: a plain step. */
  plan(offers: readonly SourceOffer[], remaining: number): StepPlan {
    const plan = this.choose(offers, remaining);
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

  private choose(offers: readonly SourceOffer[], remaining: number): StepPlan {
    const room = Math.max(0, remaining - 1);
    for (const { proposer, offer } of offers) {
      const { model, exploration } = this.state(proposer);
      const limit = Math.min(model.longest?.(this.settings) ?? this.settings.maxProposal, room);
      // A model offers whatever length it is asked for; a lookup what it found.
      const available = proposer.asks === 'model' ? limit : Math.min(offer ? offeredChain(offer).length : 0, limit);
      if (available <= 0 || (offer && model.usable && !model.usable(offer, this.settings))) continue;
      // Not adaptive: the proposer's own schedule decides, else the whole offer.
      if (!this.settings.adaptive) return { source: proposer.id, maxLen: Math.max(1, Math.min(offer?.scheduled ?? available, available)) };
      const k = this.bestLength(proposer.id, available, offer ?? undefined);
      if (k > 0) {
        exploration.reset();
        return { source: proposer.id, maxLen: k };
      }
      // Now and then a source the estimates have written off is tried, so they can recover.
      const tryLength = Math.min(2, available);
      if (exploration.due(() => this.trySpacing(proposer, available, tryLength))) return { source: proposer.id, maxLen: tryLength };
    }
    return null;
  }

  /** A verified offer of a source: its first `proposed` tokens verified, `accepted` kept. */
  record(source: SourceId, offer: Offer, proposed: number, accepted: number): void {
    this.acceptance.record(source, proposed, accepted);
    this.sources.get(source)?.model.record?.(offer, proposed, accepted);
  }

  /** A source that runs a model was asked and proposed nothing: its time went as on a guess rejected at once. */
  recordEmpty(source: SourceId): void {
    this.acceptance.record(source, 1, 0);
  }

  get verifyShapeMode(): 'fixed' | 'variable' {
    const asked = this.settings.verifyShape ?? 'auto';
    return asked === 'fixed' || (asked === 'auto' && this.settings.graphReplay === true) ? 'fixed' : 'variable';
  }

  /**
   * A generation's verify shape in fixed-shape mode, for the sources it proposes from: the size with
   * the most expected tokens per measured ms of its (warm) batch, or 1 (plain decoding, every step one
   * token) when none beats a warm plain step, or when no warm plain step was measured yet (nothing to
   * compare with). 0 in variable mode. A written-off fixed shape is tried again now and then (the
   * acceptance it was judged by is not updated while nothing is proposed).
   */
  chooseShape(proposers: readonly Proposer[]): number {
    for (const proposer of proposers) this.register(proposer);
    this.lastShape = this.pickShape(proposers.map((p) => p.id));
    return this.lastShape;
  }

  private pickShape(sources: readonly SourceId[]): number {
    if (this.verifyShapeMode !== 'fixed') return 0;
    if (sources.length === 0) return 1;
    if (this.settings.fixedShapeSize) return this.settings.fixedShapeSize;
    // Not adaptive: the proposal length asked for, every step.
    if (!this.settings.adaptive) return this.settings.maxProposal + 1;
    if (!this.cost.measured(1)) return 1;
    const plainRate = 1 / this.cost.verifyCost(1);
    let best = { size: 1, rate: plainRate };
    for (const size of FIXED_SHAPE_SIZES) {
      const rate = this.expectedShapeYield(size, sources) / this.cost.verifyCost(size, FIXED_SHAPE_PRIOR_SLOPE);
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
   * (one geometric rate, whatever size measured it), else the best of the sources' own estimates for a
   * typical offer of size - 1 tokens.
   */
  private expectedShapeYield(size: number, sources: readonly SourceId[]): number {
    const c = this.shapeCounts;
    if (c) return expectedTokensPerStep(c.accepted / (c.accepted + c.rejected), size - 1);
    let best = 1;
    for (const source of sources) {
      const model = this.sources.get(source)?.model;
      const k = size - 1;
      best = Math.max(best, model?.expectedTokensUpTo ? model.expectedTokensUpTo(k)[k]! : expectedTokensPerStep(this.acceptance.rate(source), k));
    }
    return best;
  }

  /**
   * Whether a tree offered by `source` is verified as a tree on a fixed shape of `size` (where the
   * target's evaluator verifies trees): never with variable shapes (on a CPU a batch costs about what
   * it holds, so a tree's extra nodes cost what they would save), else as the tokens a tree step keeps
   * over its cost compare with its likeliest chain's (TreeChoice).
   */
  verifiesTree(source: SourceId, size: number): boolean {
    return this.mayVerifyTrees(size) && this.trees.prefersTree(source, size);
  }

  /** Whether a step on a fixed shape of `size` may verify a tree at all (the settings allow trees; nothing learned is asked). */
  mayVerifyTrees(size: number): boolean {
    return this.settings.verifyTrees !== false && this.verifyShapeMode === 'fixed' && size > 1;
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

  /** What it has learned of each source met, and of this machine's costs (Show Stats). */
  snapshot(): PolicySnapshot {
    const per = <T>(f: (s: SourceId) => T) => Object.fromEntries(this.sourceIds.map((s) => [s, f(s)])) as Record<SourceId, T>;
    return {
      ...this.cost.snapshot(),
      acceptance: per((s) => this.acceptance.rate(s)),
      bestLength: per((s) => this.bestLength(s, this.longest(s))),
      retryInterval: per((s) => this.exploreInterval(s)),
      verifyShape: { mode: this.verifyShapeMode, size: this.lastShape },
      ...(this.lastShape > 1 && Object.keys(this.trees.snapshot(this.lastShape)).length > 0 ? { trees: this.trees.snapshot(this.lastShape) } : {}),
    };
  }

  /** Steps until the next try of a written-off source (for Show Stats and tests). */
  exploreInterval(source: SourceId): number {
    return this.sources.get(source)?.exploration.interval ?? EXPLORE_FIRST_INTERVAL;
  }
}
