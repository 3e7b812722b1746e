import { currentLinePrefix, currentLineSuffix, DEFAULT_TAB_SIZE, firstNonBlankLineBelowCursor, indentationWidth, isBlank, type CompletionContext } from './context';
import { opensBlock, startsWithCloser, startsWithContinuationKeyword } from './syntax';

export type BlockEndOptions = {
  /** The completion is finished: its last line counts as complete (the filter's view). */
  complete?: boolean;
};

/**
 * May a line at `indent` that closes the block be kept? Not when the document below already
 * closes it, nor when the block's body goes on below the cursor. When the cursor's line itself
 * goes on with a closer (`{|}`), yes: trimSuffixOverlap then keeps the closing line's
 * indentation and drops the duplicate bracket.
 */
function closingLineAllowed(ctx: CompletionContext, indent: number, tabSize: number): boolean {
  const restOfLine = currentLineSuffix(ctx);
  if (!isBlank(restOfLine)) return startsWithCloser(restOfLine);
  const below = firstNonBlankLineBelowCursor(ctx);
  if (below === undefined) return true;
  const belowIndent = indentationWidth(below, tabSize);
  const belowContinuesBlock = startsWithCloser(below) || startsWithContinuationKeyword(below.trimStart(), true) === 'yes';
  return belowIndent < indent || (belowIndent === indent && !belowContinuesBlock);
}

/** End of the text before `offset` with trailing whitespace dropped. */
function trimmedEnd(text: string, offset: number): number {
  let end = offset;
  while (end > 0 && /\s/.test(text[end - 1]!)) end--;
  return end;
}

/**
 * Char offset in `completion` where the cursor's block ends, once the text so far decides it:
 * the same answer for every longer completion, so generation can stop there token by token.
 * A later line (not the first) that is non-blank and indented less than the block ends it:
 * - the block is the cursor line's indentation, or a new block when that line opens one
 *   (ends with `{ ( [ :`); then lines at the opener's indentation end it too;
 * - one closing line (`}`, `)`, `]` at the block's outer indentation) is kept when the document
 *   does not already close the block; `} else {` / `else:` / `} catch (e) {` continue it.
 * The offset excludes trailing whitespace before the cut.
 */
export function blockEndOffset(completion: string, ctx: CompletionContext, options: BlockEndOptions = {}): number | undefined {
  const tabSize = ctx.tabSize ?? DEFAULT_TAB_SIZE;
  const complete = options.complete ?? false;
  const firstBreak = completion.indexOf('\n');
  if (firstBreak < 0) return undefined;

  const cursorLine = currentLinePrefix(ctx) + completion.slice(0, firstBreak);
  /** A non-blank line indented less than this leaves the block; undefined until a non-blank line sets it. */
  let limit: number | undefined;
  /** Indentation of the line that opened the block: closing lines there may be kept. */
  let openerIndent: number | undefined;
  if (opensBlock(cursorLine)) {
    openerIndent = indentationWidth(cursorLine, tabSize);
    limit = openerIndent + 1;
  } else if (!isBlank(cursorLine)) {
    limit = indentationWidth(cursorLine, tabSize);
  }

  for (let lineStart = firstBreak + 1; ; ) {
    const newline = completion.indexOf('\n', lineStart);
    const lineEnd = newline < 0 ? completion.length : newline;
    const lineComplete = newline >= 0 || complete;
    const line = completion.slice(lineStart, lineEnd);
    const contentAt = line.search(/\S/);
    if (contentAt >= 0) {
      const indent = indentationWidth(line, tabSize);
      const content = line.slice(contentAt);
      if (limit === undefined) {
        limit = indent;
      } else if (indent < limit) {
        const closes = startsWithCloser(content);
        const keyword = closes ? 'no' : startsWithContinuationKeyword(content, lineComplete);
        if (keyword === 'unknown') return undefined;
        const continues = closes || keyword === 'yes';
        const atOpener = openerIndent === undefined || indent === openerIndent;
        // In a block we did not open, continuing or closing it is only right where the document agrees.
        if (!continues || !atOpener || (openerIndent === undefined && !closingLineAllowed(ctx, indent, tabSize))) {
          return trimmedEnd(completion, lineStart);
        }
        if (!lineComplete) return undefined;
        if (opensBlock(line)) {
          openerIndent = indent;
          limit = indent + 1;
        } else if (closes && closingLineAllowed(ctx, indent, tabSize)) {
          return trimmedEnd(completion, lineEnd);
        } else {
          return trimmedEnd(completion, lineStart);
        }
      }
    } else if (!lineComplete) {
      return undefined;
    }
    if (newline < 0) return undefined;
    lineStart = newline + 1;
  }
}

/** Drops what follows the end of the cursor's block (see blockEndOffset). */
export function limitScopeByIndentation(completion: string, ctx: CompletionContext): string {
  return completion.slice(0, blockEndOffset(completion, ctx, { complete: true }) ?? completion.length);
}
