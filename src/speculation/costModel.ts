import type { SourceId } from '../shared/decoding';

/**
 * A step's cost is taken into its size's estimate at most at this multiple of the estimate: one step
 * in a few dozen costs several times its size's usual (the process descheduled, a page fault), and
 * one such outlier must not write a size off.
 */
const OUTLIER_CLAMP = 2;

/**
 * Learns what a target evaluation of b tokens costs on this machine, relative to one token: on a CPU a
 * batch costs several times one, on a GPU far less. Until a size is measured, a CPU-like prior is used.
 */
export class CostModel {
  /** A step of one token (plain decoding), smoothed. */
  private one: number | undefined;
  /**
   * Larger steps as a multiple of the one-token step measured just before them. The machine's speed
   * drifts (other processes, a VM's neighbours), and sizes are measured at different times: comparing
   * their raw ms compared moments, not batch sizes, and made the policy flip to proposals that did not
   * pay (bench/PROFILE.md).
   */
  private readonly ratioToOne = new Map<number, number>();
  /** Sizes measured before any one-token step, in ms. */
  private readonly rawMs = new Map<number, number>();
  /** ms per proposed token of each source that runs a model (the draft), smoothed. */
  private readonly proposePerToken = new Map<SourceId, number>();
  /** The measured sizes, sorted (the policy asks for estimates several times a step: kept, not rebuilt). */
  private sizes: number[] = [];

  constructor(
    private readonly priorSlope = 0.35,
    private readonly smoothing = 0.2,
  ) {}

  recordTarget(batch: number, ms: number): void {
    if (!(ms >= 0) || batch < 1) return;
    const ema = (old: number | undefined, value: number) => (old === undefined ? value : old + this.smoothing * (Math.min(value, OUTLIER_CLAMP * old) - old));
    if (!this.measured(batch)) {
      // A size's first evaluation also sizes llama.cpp's buffers for it (several times a warm step): taken
      // at most at twice what the sizes already timed estimate, else it stands until that size is chosen
      // again, which its own estimate then forbids.
      if (this.sizes.length > 0) ms = Math.min(ms, OUTLIER_CLAMP * this.verifyCost(batch));
      this.sizes = [...this.sizes, batch].sort((a, b) => a - b);
    }
    if (batch === 1) this.one = ema(this.one, ms);
    else if (this.one !== undefined && this.one > 0) this.ratioToOne.set(batch, ema(this.ratioToOne.get(batch), ms / this.one));
    else this.rawMs.set(batch, ema(this.rawMs.get(batch), ms));
  }

  /** The current estimate of a measured size, ms (undefined: never timed). */
  private estimate(batch: number): number | undefined {
    if (batch === 1) return this.one;
    const ratio = this.one === undefined ? undefined : this.ratioToOne.get(batch);
    return ratio === undefined ? this.rawMs.get(batch) : ratio * this.one!;
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
    const known = this.estimate(batch);
    if (known !== undefined) return known;
    const sizes = this.sizes;
    const one = this.one ?? this.interpolateOne() ?? 1;
    const below = sizes.filter((s) => s < batch).at(-1);
    const above = sizes.find((s) => s > batch);
    if (below !== undefined && above !== undefined) {
      const a = this.estimate(below)!;
      const b = this.estimate(above)!;
      return a + ((b - a) * (batch - below)) / (above - below);
    }
    // Beyond the measured sizes: grow from the nearest measurement at the slope measured between the
    // two largest sizes (a small model on a CPU is compute-bound: nearly linear), else at the prior's.
    const anchor = below ?? above;
    const anchorCost = anchor === undefined ? one : this.estimate(anchor)!;
    const base = anchor ?? 1;
    const slope = below !== undefined && sizes.length >= 2 ? this.measuredSlope() : one * priorSlope;
    return Math.max(anchorCost + slope * (batch - base), one * 0.5);
  }

  /** Whether a batch of this size was ever timed (else verifyCost estimates it from the sizes that were). */
  measured(batch: number): boolean {
    return this.estimate(batch) !== undefined;
  }

  /** Estimated ms of one token a source proposes (0 when never measured: its time is then learned on first use). */
  proposalCost(source: SourceId): number {
    return this.proposePerToken.get(source) ?? 0;
  }

  snapshot(): { verifyMs: Record<number, number>; proposeMsPerToken: Record<SourceId, number> } {
    return { verifyMs: Object.fromEntries(this.sizes.map((b) => [b, this.estimate(b)!])), proposeMsPerToken: Object.fromEntries(this.proposePerToken) };
  }

  private interpolateOne(): number | undefined {
    const s = this.sizes[0];
    return s === undefined ? undefined : this.estimate(s)! / (1 + this.priorSlope * (s - 1));
  }

  /** ms per extra token between the two largest measured batch sizes (never negative). */
  private measuredSlope(): number {
    const [a, b] = this.sizes.slice(-2);
    return Math.max(0, (this.estimate(b!)! - this.estimate(a!)!) / (b! - a!));
  }
}

/**
 * Feeds a generation's variable-length steps to the cost model, charging a change of batch size to
 * the speculation that caused it. llama.cpp reuses its compute graph only while the batch keeps its
 * size, so the step after a change also pays a graph rebuild: on a small model on a CPU as much as
 * the step itself. A one-token step is recorded only after another (the plain step's own cost); one
 * after a speculative step adds what it cost beyond that to the speculative step, whose choice it
 * paid for (else the plain steps after proposals look dear, and proposals that are never accepted
 * look cheap). The first step after the prompt, whose rebuild every generation pays, is not recorded.
 */
export class VariableStepCosts {
  /** The batch of the step before (0: the prompt's evaluation). */
  private previous = 0;
  /** A speculative step, recorded once the next step says whether a return to one token followed it. */
  private held: { batch: number; ms: number } | undefined;

  constructor(private readonly cost: CostModel) {}

  record(batch: number, ms: number): void {
    const held = this.held;
    this.held = undefined;
    const previous = this.previous;
    this.previous = batch;
    if (previous === 0) return;
    if (batch > 1) {
      if (held) this.cost.recordTarget(held.batch, held.ms);
      this.held = { batch, ms };
    } else if (held) this.cost.recordTarget(held.batch, held.ms + Math.max(0, ms - this.cost.verifyCost(1)));
    else if (previous === 1) this.cost.recordTarget(1, ms);
  }

  /** The generation ended: a held speculative step is recorded as it was. */
  finish(): void {
    if (this.held) this.cost.recordTarget(this.held.batch, this.held.ms);
    this.held = undefined;
  }
}
