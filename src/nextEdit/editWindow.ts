// The editable region around the cursor, in whole lines and in the size each model was trained on, and
// the file context around it within a budget. Pure functions of the text and the cursor.
//
// - Sweep Next-Edit: a fixed 21-line window, 10 lines above the cursor's line and 10 below, clamped at the
//   file's ends (Sweep's blog "Open sourcing a 1.5B parameter Next-Edit Autocomplete Model": "fixed
//   21-line sliding windows"; sweepai/cursortab.nvim server/provider/sweep: windowStart = max(0, cursor-10),
//   windowEnd = min(lines, cursor+10+1)).
// - Zeta (Zed's zeta1): the editable range grows line by line from the cursor's line, one line above then
//   one below, until 350 guessed tokens are spent (MAX_REWRITE_TOKENS); the context grows the same way
//   from the editable range by 150 more (MAX_CONTEXT_TOKENS); a token is guessed as 3 UTF-8 bytes of the
//   line without its newline (zed-industries/zed crates/zeta/src/zeta1.rs and zeta1/input_excerpt.rs
//   `expand_range`). Zed first widens the range to the largest syntax node that fits; without a syntax
//   tree here, this is Zed's line-based expansion from the cursor's line.
import { BYTES_PER_TOKEN_GUESS, lineOf, lineStarts, linesSpan } from './textLines';
import type { TextSpan } from './types';

export const SWEEP_LINES_ABOVE = 10;
export const SWEEP_LINES_BELOW = 10;
export const ZETA_REWRITE_TOKENS = 350;
export const ZETA_CONTEXT_TOKENS = 150;

/** The cursor's line with `above` lines over it and `below` under it, clamped to the file. */
export function lineWindow(text: string, cursorOffset: number, above: number, below: number): TextSpan {
  const starts = lineStarts(text);
  const line = lineOf(starts, clampOffset(text, cursorOffset));
  return linesSpan(text, starts, Math.max(0, line - above), Math.min(starts.length - 1, line + below));
}

/** Sweep's window: 21 lines centred on the cursor's line. */
export function sweepWindow(text: string, cursorOffset: number): TextSpan {
  return lineWindow(text, cursorOffset, SWEEP_LINES_ABOVE, SWEEP_LINES_BELOW);
}

/**
 * Widens `span` to whole lines, then adds lines alternately above and below while guessed tokens remain,
 * each line costing its own length (Zed's `expand_range`: the budget may go below zero by the last line).
 */
export function expandLinesByTokens(text: string, span: TextSpan, tokens: number): TextSpan {
  const starts = lineStarts(text);
  let first = lineOf(starts, clampOffset(text, span.start));
  let last = lineOf(starts, clampOffset(text, span.end));
  const lineTokens = (line: number) => {
    const { start, end } = linesSpan(text, starts, line, line);
    return Math.floor(Buffer.byteLength(text.slice(start, end), 'utf8') / BYTES_PER_TOKEN_GUESS);
  };
  let remaining = tokens;
  for (;;) {
    let expanded = false;
    if (remaining > 0 && first > 0) {
      first--;
      remaining = Math.max(0, remaining - lineTokens(first));
      expanded = true;
    }
    if (remaining > 0 && last < starts.length - 1) {
      last++;
      remaining = Math.max(0, remaining - lineTokens(last));
      expanded = true;
    }
    if (!expanded) break;
  }
  return linesSpan(text, starts, first, last);
}

/** Zeta's editable region: the cursor's line grown by 350 guessed tokens. */
export function zetaEditableRegion(text: string, cursorOffset: number): TextSpan {
  const at = clampOffset(text, cursorOffset);
  return expandLinesByTokens(text, { start: at, end: at }, ZETA_REWRITE_TOKENS);
}

/** Zeta's context: the editable region grown by 150 more. */
export function zetaContext(text: string, region: TextSpan): TextSpan {
  return expandLinesByTokens(text, region, ZETA_CONTEXT_TOKENS);
}

/** A caller's region, made whole lines (a region that cuts a line would make the model rewrite half of it). */
export function wholeLines(text: string, span: TextSpan): TextSpan {
  const starts = lineStarts(text);
  const start = clampOffset(text, Math.min(span.start, span.end));
  let end = clampOffset(text, Math.max(span.start, span.end));
  // A span that ends with a newline ends on that line, not on the empty start of the next.
  if (end > start && text[end - 1] === '\n') end--;
  const first = lineOf(starts, start);
  const last = lineOf(starts, end);
  return linesSpan(text, starts, first, last);
}

function clampOffset(text: string, offset: number): number {
  return Math.max(0, Math.min(text.length, offset));
}
