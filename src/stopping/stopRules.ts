import { blockEndOffset } from '../postprocess/limitScopeByIndentation';
import type { CompletionRequest } from '../shared/completion';
import type { StopReason, Token } from '../shared/decoding';

export interface StopRulesOptions {
  detokenize(tokens: readonly Token[]): string;
  isEndToken(token: Token): boolean;
  maxTokens: number;
  stopStrings?: readonly string[];
  /** Char offset where the generated text leaves the cursor's block, once that is known. */
  blockEnd?: (text: string) => number | undefined;
  singleLine?: boolean;
  maxLines?: number;
  /** Once `now()` reaches `deadline`, the generation ends with the line in progress (see timeBudgetCut). */
  timeBudget?: TimeBudget;
}

export interface TimeBudget {
  /** When the budget is spent, on the `now` clock. */
  deadline: number;
  now(): number;
}

/**
 * The stops a completion request asks for (stop strings, one line, a few lines, the end of the
 * cursor's block), the same for every backend. `prefix`: the text the generation continues.
 */
export function requestStops(
  request: CompletionRequest,
  prefix = request.prefix,
  clock: BudgetClock = {},
): Pick<StopRulesOptions, 'stopStrings' | 'singleLine' | 'maxLines' | 'blockEnd' | 'timeBudget'> {
  const budget = request.timeBudgetMs ?? 0;
  const now = clock.now ?? (() => performance.now());
  return {
    stopStrings: request.stop,
    singleLine: request.singleLine,
    maxLines: request.maxLines,
    blockEnd: request.stopAtBlockEnd ? (text) => blockEndOffset(text, { prefix, suffix: request.suffix, languageId: request.languageId, tabSize: request.tabSize }) : undefined,
    ...(budget > 0 ? { timeBudget: { deadline: (clock.startedAt ?? now()) + budget, now } } : {}),
  };
}

/** The clock a request's time budget runs on (performance.now by default), and when the request was taken (default: now). */
export interface BudgetClock {
  now?: () => number;
  startedAt?: number;
}

/** Settled tokens read before new ones, so that these are detokenized in context (StopRules.textSoFar). */
const SETTLE_CONTEXT = 4;

export interface StopDecision {
  reason: StopReason;
}

/**
 * Decides, token by token, when generation ends and what text it produced. Plain and speculative
 * decoding push the same token stream through it, so they stop at the same token with the same text
 * even when the stop falls inside an accepted proposal.
 */
export class StopRules {
  private readonly accepted: Token[] = [];
  private text = '';
  private cut: number | undefined;
  private stopped: StopDecision | undefined;
  /** The text of the first `settledTokens` tokens, which later tokens cannot change (see textSoFar). */
  private settledTokens = 0;
  private settledText = '';
  /** The text of the last SETTLE_CONTEXT settled tokens on their own. */
  private contextText = '';
  /** Where the text stood when the time budget was found spent: the line in progress there is the last. */
  private budgetSpentAt: number | undefined;

  constructor(private readonly options: StopRulesOptions) {}

  get tokens(): readonly Token[] {
    return this.accepted;
  }

  get finalText(): string {
    return this.cut === undefined ? this.text : this.text.slice(0, this.cut);
  }

  get decision(): StopDecision | undefined {
    return this.stopped;
  }

  /** Tokens still allowed before maxTokens. */
  get remaining(): number {
    return this.stopped ? 0 : this.options.maxTokens - this.accepted.length;
  }

  /** Feeds one generated token; returns the decision once generation must end. */
  push(token: Token): StopDecision | undefined {
    if (this.stopped) return this.stopped;
    if (this.options.isEndToken(token)) return this.stop('eos');
    this.accepted.push(token);
    const previousLength = this.text.length;
    this.text = this.textSoFar();
    const textCut = this.findTextStop(previousLength);
    if (textCut) {
      this.cut = textCut.at;
      return this.stop(textCut.reason);
    }
    if (this.accepted.length >= this.options.maxTokens) return this.stop('maxTokens');
    return undefined;
  }

  /**
   * The text of all tokens so far, at a cost that does not grow with the output: the settled text,
   * then the new tokens detokenized after the last few settled ones and cut off their text — as
   * node-llama-cpp's `detokenize(tokens, special, lastTokens)` does, so a tokenizer that drops the
   * first token's leading space (SentencePiece) or merges bytes into characters reads them in context.
   * The text settles where it does not end in U+FFFD (a character whose bytes are still coming). Where
   * the context has no text, or the text in context does not start with the context's own, the whole
   * output is detokenized: the same text, slower.
   */
  private textSoFar(): string {
    const { detokenize } = this.options;
    const tokens = this.accepted;
    let text: string;
    if (this.settledTokens === 0) text = detokenize(tokens);
    else {
      const context = tokens.slice(Math.max(0, this.settledTokens - SETTLE_CONTEXT), this.settledTokens);
      const inContext = this.contextText === '' ? null : detokenize([...context, ...tokens.slice(this.settledTokens)]);
      text = inContext?.startsWith(this.contextText) ? this.settledText + inContext.slice(this.contextText.length) : detokenize(tokens);
    }
    if (!text.endsWith('\uFFFD')) {
      this.settledTokens = tokens.length;
      this.settledText = text;
      this.contextText = detokenize(tokens.slice(-SETTLE_CONTEXT));
    }
    return text;
  }

  /** Ends generation for a reason outside the token stream (abort, full context). */
  stop(reason: StopReason): StopDecision {
    this.stopped ??= { reason };
    return this.stopped;
  }

  /**
   * Where the time budget ends the text: once it is spent, at the end of the line in progress then (or
   * of the first line with code, if none is complete yet; at once, if a line had just ended). Only ever at a line's end, so what is shown
   * is whole lines of the greedy completion, the tokens kept the greedy ones.
   */
  private timeBudgetCut(previousLength: number): number | undefined {
    const budget = this.options.timeBudget;
    if (!budget) return undefined;
    if (this.budgetSpentAt === undefined) {
      if (budget.now() < budget.deadline) return undefined;
      this.budgetSpentAt = previousLength;
    }
    const text = this.text;
    const code = text.search(/\S/);
    if (code < 0) return undefined;
    // A line that had just ended when the budget was found spent is the last one.
    const at = text.indexOf('\n', Math.max(this.budgetSpentAt - 1, code));
    return at < 0 ? undefined : at;
  }

  private findTextStop(previousLength: number): { at: number; reason: StopReason } | undefined {
    const { stopStrings, singleLine, maxLines, blockEnd } = this.options;
    const text = this.text;
    let best: { at: number; reason: StopReason } | undefined;
    const consider = (at: number, reason: StopReason) => {
      if (at >= 0 && (!best || at < best.at)) best = { at, reason };
    };
    // Earlier text can change when a multi-byte character completes, so look back a little.
    if (stopStrings?.length) {
      const longest = Math.max(...stopStrings.map((s) => s.length));
      const from = Math.max(0, previousLength - longest - 4);
      for (const s of stopStrings) if (s) consider(text.indexOf(s, from), 'stopSequence');
    }
    if (singleLine) consider(text.indexOf('\n'), 'newline');
    if (maxLines !== undefined && maxLines > 0) {
      let at = -1;
      for (let line = 0; line < maxLines; line++) {
        at = text.indexOf('\n', at + 1);
        if (at < 0) break;
      }
      consider(at, 'maxLines');
    }
    if (blockEnd) {
      const end = blockEnd(text);
      if (end !== undefined) consider(end, 'blockEnd');
    }
    const budgetEnd = this.timeBudgetCut(previousLength);
    if (budgetEnd !== undefined) consider(budgetEnd, 'timeBudget');
    return best;
  }
}

/** Longest completion a request may ask for. */
export function clampMaxTokens(maxTokens: number): number {
  return Math.max(1, Math.min(maxTokens, 1024));
}
