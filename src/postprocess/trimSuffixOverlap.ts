import { currentLinePrefix, currentLineSuffix, isBlank, type CompletionContext } from './context';
import { isCloser, isOpener, isWordChar, opensBlock } from './syntax';

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
 * Never repeat what already follows the cursor. When the cursor's line goes on after the cursor,
 * the completion is kept to one line, unless it opens a block and only auto-closed characters
 * follow (`{|}`, `(|)`). Then the earliest tail of the completion the document already has is
 * dropped, compared without whitespace: one the rest of the cursor's line starts with (`)` before
 * `);`), or, from a line start, one the suffix starts with (the completion's last lines equal the
 * suffix's first lines). Failing that, a tail on the last line that goes on past the rest of the
 * line (`a);` before `)` keeps `a`).
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
    if ((lineTarget !== '' && isPrefixOf(tail, lineTarget)) || (atLineStart && suffixTarget !== '' && isPrefixOf(tail, suffixTarget))) {
      return text.slice(0, p);
    }
  }
  if (lineTarget !== '') {
    for (const p of starts) if (p >= lastLineStart && tailOf(p).startsWith(lineTarget)) return text.slice(0, p);
  }
  return text;
}
