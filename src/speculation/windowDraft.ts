import type { Token } from '../shared/decoding';
import { DRAFT_SOURCE, DraftModelProposer, draftAcceptance } from './draftModelProposer';
import type { GreedyEvaluator } from './greedyEvaluator';
import type { ModelProposer, Offer } from './proposer';

/** Where the window may start moves in steps of this many tokens: a keystroke then keeps the window's cache. */
export const WINDOW_STEP = 64;

/**
 * Self-speculation on a KV window (StreamingLLM, MagicDec): the target itself, in a second context
 * that holds only the first `sinks` tokens of the prompt (attention sinks) and its last tokens
 * (about `window` in all), drafts for the target at its full context. The window's start is fixed
 * for a completion (and moves in steps of WINDOW_STEP), so the tokens it drafts from only grow, and
 * its cache follows them like the draft model's. Lossless like any draft: the full target verifies.
 */
export class WindowDraftProposer implements ModelProposer {
  readonly id = DRAFT_SOURCE;
  readonly asks = 'model';
  readonly acceptanceModel = draftAcceptance;
  private readonly inner: DraftModelProposer;
  private readonly cut: number;

  constructor(
    evaluator: GreedyEvaluator,
    minConfidence: number,
    /** The completion's prompt length: the window ends there before the generated tokens join it. */
    promptLength: number,
    readonly window: number,
    readonly sinks = 4,
  ) {
    this.inner = new DraftModelProposer(evaluator, minConfidence);
    const start = Math.max(sinks, promptLength - (window - sinks));
    this.cut = start <= sinks ? sinks : Math.max(sinks, Math.floor(start / WINDOW_STEP) * WINDOW_STEP);
  }

  /** The tokens the window holds for a history: the sinks, then everything from the cut on. */
  windowOf(history: readonly Token[]): Token[] {
    if (history.length <= this.cut) return [...history];
    return [...history.slice(0, this.sinks), ...history.slice(this.cut)];
  }

  offer(history: readonly Token[], maxLen: number, treeNodes?: number): Promise<Offer> {
    return this.inner.offer(this.windowOf(history), maxLen, treeNodes);
  }

  record(): void {}
}
