import type { ProposalSource } from '../shared/decoding';

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
