import type { Token } from '../shared/decoding';
import { CopyAcceptanceModel, type CopyOffer } from './copyAcceptance';
import { chainOffer, type LookupProposer } from './proposer';

/** How the window copy proposer finds its place and how long it proposes (defaults: DEFAULT_COPY_OPTIONS). */
export interface WindowCopyOptions {
  /** Proposal length after a divergence and at the start (the schedule's shortest). */
  initialLength: number;
  /** Longest proposal of the schedule: the length doubles after each fully accepted proposal up to this. */
  maxLength: number;
  /**
   * Tokens offered per step: the copy as far as this (or the window's end), of which the schedule's
   * length is the proposer's own choice (`ChainOffer.scheduled`). A policy that knows this machine's
   * verify cost picks its own length from the offer (SpeculationPolicy.bestLength, by CopyAcceptanceModel).
   */
  offerLength: number;
  /** Output tokens compared when re-synchronising (the longest suffix looked up). */
  maxSuffix: number;
  /** "Near the pointer": continuation points from `nearBehind` tokens before it to `nearAhead` after it. */
  nearBehind: number;
  nearAhead: number;
  /** Shortest output suffix that re-synchronises near the pointer, and anywhere else in the window. */
  nearMinMatch: number;
  farMinMatch: number;
  /**
   * The token of `source` at which the editor's cursor lies (NextEditPrompt.copyCursor), when known:
   * until the output first departs from the window, each offer says how far from it it starts
   * (CopyOffer.cursorDistance), and the policy weighs it by where edits come (CursorAcceptance).
   */
  cursor?: number;
}

/**
 * The schedule (what a non-adaptive policy verifies): 4, doubled after a fully accepted
 * proposal up to 32, back to 4 after a rejection. An adaptive policy takes its length from the offer
 * (128 tokens ahead) by the measured verify cost instead (SpeculationPolicy.bestLength). A 1-token match
 * re-synchronises near the pointer (an edit rarely moves the output far from where it was copying);
 * elsewhere 3 tokens, and only when longer by 2 than the best match near it.
 */
export const DEFAULT_COPY_OPTIONS: WindowCopyOptions = {
  initialLength: 4,
  maxLength: 32,
  offerLength: 128,
  maxSuffix: 8,
  nearBehind: 8,
  nearAhead: 64,
  nearMinMatch: 1,
  farMinMatch: 3,
};

/**
 * Proposes tokens copied from the current window (the tokenized NextEditPrompt.copySource) while the
 * target rewrites it: most of a next-edit window is the current one unchanged.
 *
 * Rules, per step (history = the prompt, then the output so far, ending with the target's last token):
 * 1. A pointer into `source` says which token the output copies next. Each new output token that
 *    equals source[pointer] moves it on by one (the output continues where the last accepted token
 *    was copied from).
 * 2. A token that differs is a divergence (the edit): the length goes back to `initialLength`, and the
 *    pointer is found again from the output's last tokens: the longest suffix of the output (up to
 *    `maxSuffix` tokens) that occurs in the source, the pointer then following that occurrence.
 *    Near the old pointer (from `nearBehind` before it to `nearAhead` after it) a suffix of
 *    `nearMinMatch` tokens is enough; the longest wins there, ties to the occurrence nearest after the
 *    old pointer (occurrences behind it count as farther than any ahead). Elsewhere in the window a
 *    suffix needs `farMinMatch` tokens and must be 2 longer than the best near one. No match: no
 *    proposal, and the next step tries again with one more output token.
 * 3. The offer is source[pointer, pointer + offerLength), cut at the window's end (nothing at its end)
 *    and at maxLen; its first `scheduled` tokens are the schedule's proposal. `length` starts at
 *    `initialLength`, doubles after each fully accepted proposal up to `maxLength`, and returns to
 *    `initialLength` after a rejection or a divergence. `inRun` says the proposal continues a fully
 *    accepted one, so the policy weighs it at the copy run's acceptance. Until the output first
 *    departs from the window, `cursorDistance` says where the offer starts from the cursor (when the
 *    options give it), and the policy weighs it by that instead.
 *
 * Pure guessing: the decoder verifies every token, so none of this can change the output.
 */
export class WindowCopyProposer implements LookupProposer<CopyOffer> {
  readonly id = 'copy';
  readonly asks = 'lookup';
  private readonly options: WindowCopyOptions;
  /** Index in `source` of the token the output copies next; null after a divergence until re-synchronised. */
  private pointer: number | null = 0;
  /** Where the pointer was at the last divergence (what "near" means while it is null). */
  private anchor = 0;
  /** Output tokens already walked by the pointer. */
  private seen = 0;
  private length: number;
  private inRun = false;
  /**
   * Output tokens in a row that agree with the pointer: the suffix that re-synchronised it, and every
   * token copied since. The evidence that the copy resumed where it did (CopyOffer.agreement).
   */
  private agreement = 0;
  /** The output has departed from the window at least once (cursorDistance no longer applies). */
  private edited = false;

  constructor(
    private readonly source: readonly Token[],
    /** Tokens of history before the output (the prompt). */
    private readonly promptLength: number,
    options: Partial<WindowCopyOptions> = {},
  ) {
    this.options = { ...DEFAULT_COPY_OPTIONS, ...options };
    this.length = this.options.initialLength;
  }

  /** Where the output is in the window (for tests and the bench): the pointer, null while lost. */
  get position(): number | null {
    return this.pointer;
  }

  /** The schedule's current length. */
  get currentLength(): number {
    return this.length;
  }

  /** The tokens it would copy after `history` (at most maxLen; its own schedule's length as `scheduled`), or null. */
  offer(history: readonly Token[], maxLen: number): CopyOffer | null {
    const outputLength = history.length - this.promptLength;
    if (outputLength < this.seen) {
      // A shorter history than last time: a new decode on the same proposer. Start over.
      this.pointer = 0;
      this.anchor = 0;
      this.seen = 0;
      this.agreement = 0;
      this.edited = false;
      this.reset();
    }
    let diverged = false;
    for (let i = this.seen; i < outputLength; i++) {
      const token = history[this.promptLength + i];
      if (this.pointer !== null && this.pointer < this.source.length && this.source[this.pointer] === token) {
        this.pointer++;
        this.agreement++;
      } else {
        if (this.pointer !== null) this.anchor = this.pointer;
        this.pointer = null;
        diverged = true;
        this.edited = true;
      }
    }
    this.seen = outputLength;
    if (diverged) this.reset();
    if (this.pointer === null) {
      const found = this.resync(history, outputLength);
      this.pointer = found?.at ?? null;
      this.agreement = found?.m ?? 0;
    }
    if (this.pointer === null) return null;
    const n = Math.min(Math.max(this.options.offerLength, this.length), maxLen, this.source.length - this.pointer);
    if (n <= 0) return null;
    const cursor = this.options.cursor;
    const cursorDistance = cursor !== undefined && !this.edited ? this.pointer - cursor : undefined;
    return chainOffer(this.source.slice(this.pointer, this.pointer + n), { scheduled: Math.min(this.length, n), inRun: this.inRun, agreement: this.agreement, cursorDistance });
  }

  /** The policy weighs copies by their phase (CopyAcceptance), with a longest proposal of its own. */
  acceptanceModel(): CopyAcceptanceModel {
    return new CopyAcceptanceModel();
  }

  record(proposed: number, accepted: number): void {
    if (proposed <= 0) return;
    if (accepted >= proposed) {
      this.length = Math.min(this.length * 2, this.options.maxLength);
      this.inRun = true;
    } else {
      this.reset();
    }
  }

  private reset(): void {
    this.length = this.options.initialLength;
    this.inRun = false;
  }

  /** The pointer after the output's last tokens (rule 2) and the suffix's length, or null when no suffix re-synchronises. */
  private resync(history: readonly Token[], outputLength: number): { at: number; m: number } | null {
    const { maxSuffix, nearBehind, nearAhead, nearMinMatch, farMinMatch } = this.options;
    const maxM = Math.min(maxSuffix, outputLength);
    if (maxM === 0) return null;
    const end = history.length;
    const anchor = this.anchor;
    // Occurrences ahead of the old pointer are nearer than any behind it.
    const distance = (e: number) => (e >= anchor ? e - anchor : anchor - e + this.source.length);
    let near: { at: number; m: number } | null = null;
    let far: { at: number; m: number } | null = null;
    // e: where the pointer would go, just after an occurrence source[e - m, e) of the output's last m tokens.
    for (let e = 1; e <= this.source.length; e++) {
      let m = 0;
      while (m < maxM && m < e && this.source[e - 1 - m] === history[end - 1 - m]) m++;
      if (m === 0) continue;
      const isNear = e >= anchor - nearBehind && e <= anchor + nearAhead;
      const better = (best: { at: number; m: number } | null) => !best || m > best.m || (m === best.m && distance(e) < distance(best.at));
      if (isNear) {
        if (m >= nearMinMatch && better(near)) near = { at: e, m };
      } else if (m >= farMinMatch && better(far)) {
        far = { at: e, m };
      }
    }
    if (far && (!near || far.m >= near.m + 2)) return far;
    return near;
  }
}
