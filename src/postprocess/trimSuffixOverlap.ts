import { currentLinePrefix, currentLineSuffix, DEFAULT_TAB_SIZE, firstNonBlankLineBelowCursor, indentationWidth, isBlank, type CompletionContext } from './context';
import { isCloser, isOpener, isWordChar, opensBlock, startsWithCloser } from './syntax';

/** What an editor typically leaves after the cursor by itself: auto-closed pairs, `;`, `,`. */
const AUTO_CLOSED = /^[\s)\]}'"`;,]*$/;

/** `text` without whitespace, up to `limit` characters. */
function withoutWhitespace(text: string, limit = Infinity): string {
  let chars = '';
  for (let i = 0; i < text.length && chars.length < limit; i++) if (!/\s/.test(text[i]!)) chars += text[i];
  return chars;
}

/**
 * Bracket depth before each offset, counting brackets outside string literals only. Depth <= 0
 * means the completion has closed all it opened: a closer there belongs to the document.
 */
function depthsBefore(text: string): number[] {
  const depths: number[] = [];
  let depth = 0;
  let quote: string | undefined;
  let escaped = false;
  for (const char of text) {
    for (let unit = 0; unit < char.length; unit++) depths.push(depth);
    if (quote !== undefined) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'" || char === '`') quote = char;
    else if (isOpener(char)) depth++;
    else if (isCloser(char)) depth--;
  }
  return depths;
}

/** `tail` fits at the start of `target` without ending in the middle of a word of the target. */
function isPrefixOf(tail: string, target: string): boolean {
  if (!target.startsWith(tail)) return false;
  return !(tail.length < target.length && isWordChar(tail[tail.length - 1]) && isWordChar(target[tail.length]));
}

/** Offsets where a duplicate tail may start: non-blank, at a word start, outside the completion's own brackets. */
function tailStarts(text: string): number[] {
  const depths = depthsBefore(text);
  const starts: number[] = [];
  for (let p = 0; p < text.length; p++) {
    const char = text[p]!;
    if (/\s/.test(char) || depths[p]! > 0 || (isWordChar(char) && isWordChar(text[p - 1]))) continue;
    starts.push(p);
  }
  return starts;
}

/**
 * Indentations of the blocks still open after `lines`, innermost last, judged by indentation: a
 * line that opens a block pushes its indentation, a closing line pops the block at its indentation
 * (and any deeper one), any other line pops the blocks at or deeper than its indentation (their
 * body has ended without a closer, as in Python).
 */
function openBlockIndents(lines: readonly string[], tabSize: number): number[] {
  const open: number[] = [];
  for (const line of lines) {
    if (isBlank(line)) continue;
    const indent = indentationWidth(line, tabSize);
    if (startsWithCloser(line)) {
      while (open.length && open[open.length - 1]! > indent) open.pop();
      if (open.length && open[open.length - 1] === indent) open.pop();
    } else {
      while (open.length && open[open.length - 1]! >= indent) open.pop();
    }
    if (opensBlock(line)) open.push(indent);
  }
  return open;
}

/**
 * Whether a closing line of the completion at `closerOffset` closes a block that is still open and
 * that the document below does not close: the block opened at the closer's indentation (by the
 * prefix, the cursor's line or the completion) and the suffix's first line is a closer at another
 * indentation (it closes an outer block). Then it is needed even though its text equals the suffix's.
 */
function closesOwnOpenBlock(text: string, closerOffset: number, ctx: CompletionContext): boolean {
  const tabSize = ctx.tabSize ?? DEFAULT_TAB_SIZE;
  const before = ctx.prefix + text.slice(0, closerOffset);
  const lineStart = before.lastIndexOf('\n') + 1;
  // Only whitespace precedes the closer on its line (a tail at a line start): that is its indentation.
  const indent = indentationWidth(before.slice(lineStart), tabSize);
  const below = isBlank(currentLineSuffix(ctx)) ? firstNonBlankLineBelowCursor(ctx) : currentLinePrefix(ctx) + currentLineSuffix(ctx);
  if (below === undefined || indentationWidth(below, tabSize) === indent) return false;
  const open = openBlockIndents(before.slice(0, lineStart).split('\n'), tabSize);
  while (open.length && open[open.length - 1]! > indent) open.pop();
  return open[open.length - 1] === indent;
}

/**
 * Never repeat what already follows the cursor. When the cursor's line goes on after the cursor,
 * the completion is kept to one line, unless it opens a block and only auto-closed characters
 * follow (`{|}`, `(|)`). Then the earliest tail of the completion the document already has is
 * dropped, compared without whitespace: one the rest of the cursor's line starts with (`)` before
 * `);`), or, from a line start, one the suffix starts with (the completion's last lines equal the
 * suffix's first lines), unless that tail is a closing line for a block still open at its own
 * indentation while the suffix's closer sits at another one (closesOwnOpenBlock). Failing that, a
 * tail on the last line that goes on past the rest of the line (`a);` before `)` keeps `a`), unless
 * nothing would be left and the rest of the line is only auto-closed characters (`) return 0;` before
 * `)`): then the whole text, for replaceSameLineSuffix to replace them with.
 */
export function trimSuffixOverlap(completion: string, ctx: CompletionContext): string {
  const restOfLine = currentLineSuffix(ctx);
  const firstBreak = completion.indexOf('\n');
  const firstLine = firstBreak < 0 ? completion : completion.slice(0, firstBreak);
  const multiLine = isBlank(restOfLine) || (AUTO_CLOSED.test(restOfLine) && opensBlock(currentLinePrefix(ctx) + firstLine));
  const text = multiLine ? completion : firstLine;

  const strippedText = withoutWhitespace(text);
  const lineTarget = withoutWhitespace(restOfLine);
  const suffixTarget = multiLine ? withoutWhitespace(ctx.suffix, strippedText.length + 1) : '';
  const lastLineStart = text.lastIndexOf('\n') + 1;
  const starts = tailStarts(text);
  // Non-whitespace characters from each offset to the end: a tail is that much of strippedText.
  const charsFrom = new Array<number>(text.length + 1).fill(0);
  for (let i = text.length - 1; i >= 0; i--) charsFrom[i] = charsFrom[i + 1]! + (/\s/.test(text[i]!) ? 0 : 1);
  const tailOf = (p: number) => strippedText.slice(strippedText.length - charsFrom[p]!);

  for (const p of starts) {
    const tail = tailOf(p);
    const atLineStart = isBlank(text.slice(text.lastIndexOf('\n', p - 1) + 1, p));
    if (lineTarget !== '' && isPrefixOf(tail, lineTarget)) return text.slice(0, p);
    if (atLineStart && suffixTarget !== '' && isPrefixOf(tail, suffixTarget)) {
      // Equal text is not enough for a closer: `  }` closing the `if` it opened is not the `}` below that closes the function.
      if (!(isCloser(text[p]) && closesOwnOpenBlock(text, p, ctx))) return text.slice(0, p);
    }
  }
  if (lineTarget !== '') {
    for (const p of starts) {
      if (p < lastLineStart || !tailOf(p).startsWith(lineTarget)) continue;
      // Cut there, nothing would be left: `) return 0;` before the auto-closed `)` of `if (n === 0|)`
      // is the rest of the line, not a repeat of it. Kept whole: replaceSameLineSuffix replaces the
      // auto-closed characters it writes again (or cuts before them if they do not pair).
      if (isBlank(text.slice(0, p)) && AUTO_CLOSED.test(restOfLine)) return text;
      return text.slice(0, p);
    }
  }
  return text;
}
