import type { SourceId } from '../shared/decoding';

/** Expected tokens per verification when each guess is accepted with probability a: (1-a^(k+1))/(1-a). */
export function expectedTokensPerStep(a: number, k: number): number {
  if (a >= 1) return k + 1;
  return (1 - a ** (k + 1)) / (1 - a);
}

/** The prior of a source that names none (AcceptanceModel.prior). */
export const NEUTRAL_PRIOR = 0.5;

/**
 * Per-source acceptance learned as a geometric rate: accepted / (accepted + rejections), starting
 * from a prior worth a few observations so early luck does not decide everything. A source starts
 * at the prior its proposer names (register), unless the constructor's `priors` set one.
 */
export class AcceptanceTracker {
  private readonly counts = new Map<SourceId, { accepted: number; rejected: number }>();

  constructor(
    private readonly priors: Readonly<Record<SourceId, number>> = {},
    private readonly priorWeight = 4,
    private readonly decay = 0.98,
  ) {}

  /** Starts counting a source at its prior (once; later calls keep what was learned). */
  register(source: SourceId, prior = NEUTRAL_PRIOR): void {
    if (!this.counts.has(source)) this.counts.set(source, this.fresh(source, prior));
  }

  record(source: SourceId, proposed: number, accepted: number): void {
    this.register(source);
    const c = this.counts.get(source)!;
    // Decay keeps the estimate following the text at hand.
    c.accepted = c.accepted * this.decay + accepted;
    c.rejected = c.rejected * this.decay + (accepted < proposed ? 1 : 0);
  }

  rate(source: SourceId): number {
    const c = this.counts.get(source) ?? this.fresh(source, NEUTRAL_PRIOR);
    return c.accepted / (c.accepted + c.rejected);
  }

  private fresh(source: SourceId, prior: number): { accepted: number; rejected: number } {
    const p = Object.hasOwn(this.priors, source) ? this.priors[source]! : prior;
    return { accepted: p * this.priorWeight, rejected: (1 - p) * this.priorWeight };
  }
}
