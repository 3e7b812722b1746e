// Where the counted next-edit replay's choice of lengths loses, by the kind of step: ours replayed
// again (bench/countedReplay.ts LENGTH_HEADROOM_VARIANTS: the copy, then the suffix proposer) with
// the steps of one kind verifying exactly the part of their offer the output agrees with, the policy
// choosing every other length as it does. Lengths known in every kind is countKnownLengths's
// headroom, reached step by step; each kind alone says how much of that a better estimate of how far
// its guesses run could win.
import type { Token } from '../src/shared/decoding';
import { DEFAULT_SPECULATION } from '../src/inference/inferenceSession';
import type { CopyOffer } from '../src/speculation/copyAcceptance';
import { commonPrefixLength } from '../src/speculation/greedyEvaluator';
import { type SourceOffer, SpeculationPolicy, type StepPlan } from '../src/speculation/policy';
import { type Offer, offeredChain } from '../src/speculation/proposer';
import type { OwnVariant } from './editReplay';

/**
 * A step by what its guesses continue: the window's copy before the output's first edit (weighed by
 * the cursor), right after a re-synchronisation, in a copy run (a fully accepted copy continued), or
 * the suffix proposer's.
 */
export const STEP_KINDS = ['cursor', 'resync', 'run', 'suffix'] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/** The kind of a step that verifies `offer` of `source`, or null for a source not among them. */
export function stepKind(source: string, offer: Offer): StepKind | null {
  if (source === 'suffix') return 'suffix';
  if (source !== 'copy') return null;
  const copy = offer as CopyOffer;
  return copy.cursorDistance !== undefined ? 'cursor' : copy.inRun ? 'run' : 'resync';
}

/**
 * The adaptive policy, but a step it gives to a source of one of `kinds` verifies exactly the part of
 * that source's offer the expected output agrees with: nothing (a plain step) when its first guess
 * is wrong. What it records then is what those steps verified, so its estimates read a little high.
 */
export class LengthsKnownIn extends SpeculationPolicy {
  private expected: readonly Token[] = [];

  constructor(private readonly kinds: ReadonlySet<StepKind>) {
    super({ ...DEFAULT_SPECULATION, adaptive: true });
  }

  /** The output of the case about to be replayed. */
  expect(expected: readonly Token[]): void {
    this.expected = expected;
  }

  override plan(offers: readonly SourceOffer[], remaining: number): StepPlan {
    const plan = super.plan(offers, remaining);
    const offer = plan && offers.find((o) => o.proposer.id === plan.source)?.offer;
    if (!plan || !offer) return plan;
    const kind = stepKind(plan.source, offer);
    if (!kind || !this.kinds.has(kind)) return plan;
    const chain = offeredChain(offer).slice(0, Math.max(0, remaining - 1));
    const at = this.expected.length - remaining;
    const agreed = commonPrefixLength(chain, this.expected.slice(at, at + chain.length));
    return agreed > 0 ? { source: plan.source, maxLen: agreed } : null;
  }
}

/** A replay variant whose `proposers` (given its policy) run under a LengthsKnownIn policy for `kinds`. */
export function lengthsKnownVariant(kinds: readonly StepKind[], proposers: (policy: SpeculationPolicy) => OwnVariant['proposers']): () => OwnVariant {
  return () => {
    const policy = new LengthsKnownIn(new Set(kinds));
    return { policy, begin: (expected) => policy.expect(expected), proposers: proposers(policy) };
  };
}
