// Line arithmetic on plain text, shared by the window, the formats and the edit reduction. Lines end at
// '\n'; a region is a run of whole lines from the first one's start to the last one's end, without the
// last line's newline (the way Zed's editable range and Sweep's joined window lines both cut it).
import type { TextSpan } from './types';

/** Offsets where each line starts (the first is 0). */
export function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** The 0-based line holding `offset` (an offset on a newline belongs to the line it ends). */
export function lineOf(starts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Where line `line` ends, before its newline. */
export function lineEnd(text: string, starts: readonly number[], line: number): number {
  return line + 1 < starts.length ? starts[line + 1]! - 1 : text.length;
}

/** The span of lines first..last (inclusive), whole lines, without the last one's newline. */
export function linesSpan(text: string, starts: readonly number[], first: number, last: number): TextSpan {
  return { start: starts[first]!, end: lineEnd(text, starts, last) };
}

/** How many lines a text has ('' has one, 'a\n' has two: the second is empty). */
export function lineCount(text: string): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

/** The models' token guess from UTF-8 bytes (Zed's BYTES_PER_TOKEN_GUESS = 3, zeta1.rs). */
export const BYTES_PER_TOKEN_GUESS = 3;
export function guessTokens(text: string): number {
  return Math.floor(Buffer.byteLength(text, 'utf8') / BYTES_PER_TOKEN_GUESS);
}
