import type { SpeculationSettings } from '../shared/settings';
import { CursorAcceptance } from './cursorAcceptance';
import { expectedTokensFromSurvival, SurvivalCounts } from './survivalCounts';
import type { AcceptanceModel, ChainOffer } from './proposer';

/**
 * The window copy's longest proposal when SpeculationSettings.copyMaxProposal is not set. Long: on a
 * CPU a token costs least in the largest batches (docs/BENCHMARK.md, 'Next edits'), and in a copy run
 * most of a window is accepted.
 */
export const COPY_MAX_PROPOSAL = 128;

/** Ages of a copied token told apart by CopyAcceptance's survival curves (older ones pooled at the last). */
export const COPY_AGE_HORIZON = 256;

/**
 * How window-copy proposals fare, learned per phase: whether the first copied token is right (after a
 * divergence the proposer re-synchronised by a guess; in a copy run it continues a fully accepted
 * proposal), and then, once it is, how far the copy stays right: for each age a of a copied token
 * (the tokens in a row right before it: the match that re-synchronised the copy and every token copied
 * since), of the copies that were right up to it, the share right at it (a survival curve, as
 * Kaplan-Meier counts it, proposals cut short counting up to where they went). Copy runs are long (to
 * the next edit or the window's end) or short (a re-synchronisation near an edit that went wrong a few
 * tokens later): one geometric rate mixes both, and undervalues long proposals. By age, not by place
 * in the proposal: a copy that has been right for a hundred tokens is in an unchanged stretch and
 * likely to stay right, one that resumed three tokens ago is not, whatever step each is in.
 */
export type CopyPhase = 'run' | 'agree1' | 'agree2' | 'agree3' | 'agree5' | 'agree9';

/** A copy proposal's phase: in a run, else by its agreement (unknown counts as a single token). */
export function copyPhase(inRun: boolean, agreement = 1): CopyPhase {
  if (inRun) return 'run';
  return agreement >= 9 ? 'agree9' : agreement >= 5 ? 'agree5' : agreement >= 3 ? 'agree3' : agreement >= 2 ? 'agree2' : 'agree1';
}

export class CopyAcceptance {
  /**
   * First token right, by phase: in a copy run, or after a divergence by how many output tokens agree
   * with where the copy resumes (1, 2, 3-4, 5-8, 9 or more): one token re-synchronises near the old
   * place, often wrongly; a dozen that agree rarely mislead.
   */
  private readonly first: Record<CopyPhase, { right: number; seen: number }> = {
    run: { right: 0.95 * 4, seen: 4 },
    agree1: { right: 0.5 * 4, seen: 4 },
    agree2: { right: 0.6 * 4, seen: 4 },
    agree3: { right: 0.7 * 4, seen: 4 },
    agree5: { right: 0.8 * 4, seen: 4 },
    agree9: { right: 0.9 * 4, seen: 4 },
  };
  /**
   * Index a ≥ 1: copied tokens of age a (CopyAcceptance) that proposals reached, those before them
   * right, and those wrong there; apart for runs and for proposals after a divergence (a copy resumed
   * by a guess near an edit tends to go wrong again soon).
   */
  private readonly survival: Record<'run' | 'fresh', SurvivalCounts>;

  constructor(private readonly decay = 0.98) {
    // Prior: each further token right at 0.97, worth a few proposals.
    const prior = () => new SurvivalCounts(COPY_AGE_HORIZON, 4, () => 0.03);
    this.survival = { run: prior(), fresh: prior() };
  }

  /**
   * A verified proposal: its first `proposed` tokens verified, `accepted` kept; `agreement` is its
   * offer's (the age of its first token; 0 when unknown).
   */
  record(inRun: boolean, proposed: number, accepted: number, agreement?: number): void {
    if (proposed <= 0) return;
    const f = this.first[copyPhase(inRun, agreement)];
    f.seen = f.seen * this.decay + 1;
    f.right = f.right * this.decay + (accepted >= 1 ? 1 : 0);
    if (accepted < 1) return;
    const survival = this.survival[inRun ? 'run' : 'fresh'];
    survival.fade(this.decay);
    const age = agreement ?? 0;
    const reached = Math.min(proposed, accepted + 1);
    for (let j = 1; j < reached; j++) survival.count(age + j, j === accepted);
  }

  /** Probability that the first copied token is right, in a run or after a divergence (with `agreement` tokens agreeing). */
  firstRate(inRun: boolean, agreement?: number): number {
    const f = this.first[copyPhase(inRun, agreement)];
    return f.right / f.seen;
  }

  /** Probability that a copied token of age `age` (≥ 1) is right, those before it right, in a run or after a divergence. */
  continuationRate(age = 1, inRun = true): number {
    return this.survival[inRun ? 'run' : 'fresh'].rate(Math.max(1, age));
  }

  /**
   * Probability that the copied token at `depth` (≥ 1) of an offer is right, those before it right: the
   * first rate at depth 1, beyond it the survival curve at the token's age (the offer's agreement plus
   * the tokens before it in the offer).
   */
  depthRate(depth: number, inRun: boolean, agreement?: number): number {
    return depth <= 1 ? this.firstRate(inRun, agreement) : this.continuationRate((agreement ?? 0) + depth - 1, inRun);
  }

  /** Expected tokens of a step proposing k copied tokens: the copy up to its first wrong token, and the target's own. */
  expectedTokens(k: number, inRun: boolean, agreement?: number): number {
    return this.expectedTokensUpTo(Math.max(0, k), inRun, agreement)[Math.max(0, k)]!;
  }

  /** expectedTokens for every k from 0 to `limit` (index k), in one pass over the survival curve. */
  expectedTokensUpTo(limit: number, inRun: boolean, agreement?: number): Float64Array {
    return expectedTokensFromSurvival(limit, (k) => (k > 1 ? this.depthRate(k, inRun, agreement) : 1), this.firstRate(inRun, agreement));
  }
}

/** The window copy's offer: the phase its acceptance is weighed by (copyPhase). */
export interface CopyOffer extends ChainOffer {
  /** It continues a fully accepted copy proposal (a copy run), not a re-synchronisation. */
  readonly inRun: boolean;
  /** Output tokens in a row that agree with where the copy resumes (the re-synchronising suffix and the copy since). */
  readonly agreement: number;
  /**
   * Where the offer starts from the editor's cursor, in tokens (negative: before it), while the output
   * has not departed from the window yet: then CursorAcceptance weighs it, not the phase.
   */
  readonly cursorDistance?: number;
}

/**
 * The window copy's acceptance model for the policy: before the output's first edit CursorAcceptance
 * by the offer's distance from the cursor (where the prompt gives it), else CopyAcceptance by phase
 * (a typical offer is a copy run's), and a longest proposal of its own (SpeculationSettings.copyMaxProposal, which may
 * exceed maxProposal). The prior: most of a next-edit window is the current window unchanged (a perfect
 * model fed by it needs one evaluation per 4 tokens at k = 4).
 */
export class CopyAcceptanceModel implements AcceptanceModel<CopyOffer> {
  readonly prior = 0.75;

  constructor(
    readonly phases = new CopyAcceptance(),
    readonly cursor = new CursorAcceptance(),
  ) {}

  longest(settings: SpeculationSettings): number {
    return settings.copyMaxProposal ?? COPY_MAX_PROPOSAL;
  }

  expectedTokensUpTo(limit: number, offer?: CopyOffer): Float64Array {
    if (offer?.cursorDistance !== undefined) return this.cursor.expectedTokensUpTo(limit, offer.cursorDistance);
    return this.phases.expectedTokensUpTo(limit, offer?.inRun ?? true, offer?.agreement);
  }

  /** In a copy run the whole offer is tried once at an untimed size near the best: copy runs are long. */
  triesWhole(offer?: CopyOffer): boolean {
    return offer?.inRun ?? true;
  }

  record(offer: CopyOffer, proposed: number, accepted: number): void {
    if (offer.cursorDistance !== undefined) this.cursor.record(offer.cursorDistance, proposed, accepted);
    else this.phases.record(offer.inRun, proposed, accepted, offer.agreement);
  }
}
