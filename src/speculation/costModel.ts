import type { SourceId } from '../shared/decoding';

/**
 * Learns what a target evaluation of b tokens costs on this machine, relative to one token. On CPU a
 * batch of 8 costs ~3.5x one; on a GPU far less. Until a size is measured, a CPU-like prior is used.
 */
export class CostModel {
  /** A step of one token (plain decoding), smoothed. */
  private one: number | undefined;
  /**
   * Larger steps as a multiple of the one-token step measured just before them. The machine's speed
   * drifts (other processes, the VM's neighbours: 0.8-1.5 ms a token on the same tiny model within a
   * minute here), and sizes are measured at different times: comparing their raw ms compared moments,
   * not batch sizes, and made the policy flip to proposals that did not pay (bench/PROFILE.md).
   */
  private readonly ratioToOne = new Map<number, number>();
  /** Sizes measured before any one-token step, in ms. */
  private readonly rawMs = new Map<number, number>();
  /** ms per proposed token of each source that runs a model (the draft), smoothed. */
  private readonly proposePerToken = new Map<SourceId, number>();
  /** The current estimates by measured size and those sizes sorted, rebuilt after each record (the policy asks several times a step). */
  private estimates: { perBatch: Map<number, number>; sizes: number[] } | undefined;

  constructor(
    private readonly priorSlope = 0.35,
    private readonly smoothing = 0.2,
  ) {}

  recordTarget(batch: number, ms: number): void {
    if (!(ms >= 0) || batch < 1) return;
    const ema = (old: number | undefined, value: number) => (old === undefined ? value : old + this.smoothing * (value - old));
    this.estimates = undefined;
    if (batch === 1) this.one = ema(this.one, ms);
    else if (this.one !== undefined && this.one > 0) this.ratioToOne.set(batch, ema(this.ratioToOne.get(batch), ms / this.one));
    else this.rawMs.set(batch, ema(this.rawMs.get(batch), ms));
  }

  /** Measured sizes and their current cost estimates, ms. */
  private current(): { perBatch: Map<number, number>; sizes: number[] } {
    if (!this.estimates) {
      const perBatch = new Map<number, number>(this.rawMs);
      if (this.one !== undefined) {
        perBatch.set(1, this.one);
        for (const [b, r] of this.ratioToOne) perBatch.set(b, r * this.one);
      }
      this.estimates = { perBatch, sizes: [...perBatch.keys()].sort((a, b) => a - b) };
    }
    return this.estimates;
  }

  /** A source that runs a model proposed `tokens` tokens in `ms`. */
  recordProposal(source: SourceId, tokens: number, ms: number): void {
    if (tokens < 1 || !(ms >= 0)) return;
    const perToken = ms / tokens;
    const old = this.proposePerToken.get(source);
    this.proposePerToken.set(source, old === undefined ? perToken : old + this.smoothing * (perToken - old));
  }

  /**
   * Estimated ms of one target evaluation of `batch` tokens. `priorSlope` replaces the constructor's
   * where nothing larger was measured (a fixed-shape batch on a graph backend, see policy.ts).
   */
  verifyCost(batch: number, priorSlope = this.priorSlope): number {
    const { perBatch, sizes } = this.current();
    const known = perBatch.get(batch);
    if (known !== undefined) return known;
    const one = perBatch.get(1) ?? this.interpolateOne(perBatch, sizes) ?? 1;
    const below = sizes.filter((s) => s < batch).at(-1);
    const above = sizes.find((s) => s > batch);
    if (below !== undefined && above !== undefined) {
      const a = perBatch.get(below)!;
      const b = perBatch.get(above)!;
      return a + ((b - a) * (batch - below)) / (above - below);
    }
    // Beyond the measured sizes: grow from the nearest measurement at the slope measured between the
    // two largest sizes (a small model on a CPU is compute-bound: nearly linear), else at the prior's.
    const anchor = below ?? above;
    const anchorCost = anchor === undefined ? one : perBatch.get(anchor)!;
    const base = anchor ?? 1;
    const slope = below !== undefined && sizes.length >= 2 ? measuredSlope(perBatch, sizes) : one * priorSlope;
    return Math.max(anchorCost + slope * (batch - base), one * 0.5);
  }

  /** Whether a batch of this size was ever timed (else verifyCost estimates it from the sizes that were). */
  measured(batch: number): boolean {
    return this.current().perBatch.has(batch);
  }

  /** Estimated ms of one token a source proposes (0 when never measured: its time is then learned on first use). */
  proposalCost(source: SourceId): number {
    return this.proposePerToken.get(source) ?? 0;
  }

  snapshot(): { verifyMs: Record<number, number>; proposeMsPerToken: Record<SourceId, number> } {
    return { verifyMs: Object.fromEntries(this.current().perBatch), proposeMsPerToken: Object.fromEntries(this.proposePerToken) };
  }

  private interpolateOne(perBatch: Map<number, number>, sizes: number[]): number | undefined {
    if (sizes.length === 0) return undefined;
    const s = sizes[0];
    return perBatch.get(s)! / (1 + this.priorSlope * (s - 1));
  }
}

/** ms per extra token between the two largest measured batch sizes (never negative). */
function measuredSlope(perBatch: Map<number, number>, sizes: number[]): number {
  const [a, b] = sizes.slice(-2);
  return Math.max(0, (perBatch.get(b)! - perBatch.get(a)!) / (b - a));
}
