/**
 * Learns what a target evaluation of b tokens costs on this machine, relative to one token. On CPU a
 * batch of 8 costs ~3.5x one; on a GPU far less. Until a size is measured, a CPU-like prior is used.
 */
export class CostModel {
  private readonly perBatch = new Map<number, number>();
  private draftPerToken: number | undefined;

  constructor(
    private readonly priorSlope = 0.35,
    private readonly smoothing = 0.2,
  ) {}

  recordTarget(batch: number, ms: number): void {
    if (!(ms >= 0) || batch < 1) return;
    const old = this.perBatch.get(batch);
    this.perBatch.set(batch, old === undefined ? ms : old + this.smoothing * (ms - old));
  }

  recordDraft(tokens: number, ms: number): void {
    if (tokens < 1 || !(ms >= 0)) return;
    const perToken = ms / tokens;
    this.draftPerToken = this.draftPerToken === undefined ? perToken : this.draftPerToken + this.smoothing * (perToken - this.draftPerToken);
  }

  /** Estimated ms of one target evaluation of `batch` tokens. */
  verifyCost(batch: number): number {
    const known = this.perBatch.get(batch);
    if (known !== undefined) return known;
    const sizes = [...this.perBatch.keys()].sort((a, b) => a - b);
    const one = this.perBatch.get(1) ?? this.interpolateOne(sizes) ?? 1;
    const below = sizes.filter((s) => s < batch).at(-1);
    const above = sizes.find((s) => s > batch);
    if (below !== undefined && above !== undefined) {
      const a = this.perBatch.get(below)!;
      const b = this.perBatch.get(above)!;
      return a + ((b - a) * (batch - below)) / (above - below);
    }
    // Beyond the measured sizes: grow from the nearest measurement at the slope measured between the
    // two largest sizes (a small model on a CPU is compute-bound: nearly linear), else at the prior's.
    const anchor = below ?? above;
    const anchorCost = anchor === undefined ? one : this.perBatch.get(anchor)!;
    const base = anchor ?? 1;
    const slope = below !== undefined && sizes.length >= 2 ? this.measuredSlope(sizes) : one * this.priorSlope;
    return Math.max(anchorCost + slope * (batch - base), one * 0.5);
  }

  /** Estimated ms of one draft token (0 when never measured: draft time is then learned on first use). */
  draftCost(): number {
    return this.draftPerToken ?? 0;
  }

  snapshot(): { verifyMs: Record<number, number>; draftMsPerToken: number | null } {
    return { verifyMs: Object.fromEntries(this.perBatch), draftMsPerToken: this.draftPerToken ?? null };
  }

  /** ms per extra token between the two largest measured batch sizes (never negative). */
  private measuredSlope(sizes: number[]): number {
    const [a, b] = sizes.slice(-2);
    return Math.max(0, (this.perBatch.get(b)! - this.perBatch.get(a)!) / (b - a));
  }

  private interpolateOne(sizes: number[]): number | undefined {
    if (sizes.length === 0) return undefined;
    const s = sizes[0];
    return this.perBatch.get(s)! / (1 + this.priorSlope * (s - 1));
  }
}
