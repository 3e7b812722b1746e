// How a next edit is drawn in the editor, decided from its shape alone. Plain
// TypeScript: the VS Code layer (src/vscode/nextEdit/renderer.ts) draws what this says.
//
// - an insertion at the cursor: the ordinary ghost text;
// - a change on the cursor's line that VS Code can draw as ghost text with a replace range (the text
//   before the cursor in the range stays as it is, and the rest only gains characters): that;
// - a change on one line elsewhere, or one that deletes on the cursor's line: the removed text marked,
//   the inserted text beside it ('inline');
// - a deletion only: the removed text marked ('deletion');
// - several lines: the removed text marked, the new lines drawn as one image beside them ('block');
// - far from the cursor (outside the visible lines, or more than NEAR_LINES away): the same drawing at
//   the edit, and a "Tab to jump" marker at the cursor's line.
import { lineOf, lineStarts } from '../nextEdit/textLines';
import type { TextReplacement, TextSpan } from '../nextEdit/types';

/** Lines between the cursor and an edit beyond which the edit is 'far' (Tab jumps to it first). */
export const NEAR_LINES = 8;
/** The most new lines the block image draws (the rest is summarised as "… N more lines"). */
export const BLOCK_MAX_LINES = 14;

/** The document as the classifier reads it (a VS Code TextDocument or a string in tests). */
export interface ShapeText {
  /** 0-based line and UTF-16 character of an offset. */
  positionAt(offset: number): { line: number; character: number };
  offsetAt(position: { line: number; character: number }): number;
  lineCount: number;
  /** The text of a 0-based line, without its line break. */
  lineText(line: number): string;
}

export type NextEditRender = 'ghost' | 'inline' | 'deletion' | 'block';

export interface NextEditShape {
  render: NextEditRender;
  /** Tab moves the cursor to the edit first (it is off screen or more than NEAR_LINES away). */
  far: boolean;
  /** The edit as given (document offsets). */
  edit: TextReplacement;
  /** 0-based lines the edit touches in the current text. */
  firstLine: number;
  lastLine: number;
  /** Lines between the cursor's line and the edit's nearest line (0: on the cursor's line). */
  distance: number;
  /** For 'ghost': the range VS Code replaces and the text it inserts (an InlineCompletionItem). */
  ghost?: { start: number; end: number; text: string };
  /** Text marked as removed (empty span: nothing removed). */
  removed: TextSpan;
  /** For 'inline': the text drawn beside the removed text, and where (a document offset). */
  inserted?: { at: number; text: string };
  /** For 'block': the new lines as they will read, and the 0-based line the image is drawn beside. */
  block?: { lines: string[]; anchorLine: number; moreLines: number; widestColumn: number };
}

/** Whether `small` can be had from `big` by deleting characters only (VS Code draws such a change as ghost text). */
export function isSubsequence(small: string, big: string): boolean {
  let i = 0;
  for (let j = 0; j < big.length && i < small.length; j++) if (big[j] === small[i]) i++;
  return i === small.length;
}

/**
 * The replace range and text VS Code can draw as ghost text for `edit` with the cursor at `cursor`,
 * or null. The range is widened to hold the cursor; the text from its start to the cursor must stay
 * the text's prefix (VS Code filters the item by it), and the rest must only gain characters.
 */
export function ghostForm(text: ShapeText, edit: TextReplacement, cursor: number, slice: (start: number, end: number) => string): { start: number; end: number; text: string } | null {
  const cursorLine = text.positionAt(cursor).line;
  if (text.positionAt(edit.start).line !== cursorLine || text.positionAt(edit.end).line !== cursorLine) return null;
  if (edit.start === edit.end && edit.start === cursor) return edit.text ? { start: cursor, end: cursor, text: edit.text } : null;
  const start = Math.min(edit.start, cursor);
  const end = Math.max(edit.end, cursor);
  const replaced = slice(start, end);
  const next = slice(start, edit.start) + edit.text + slice(edit.end, end);
  if (next === replaced) return null;
  const beforeCursor = slice(start, cursor);
  if (!next.startsWith(beforeCursor)) return null;
  if (!isSubsequence(replaced.slice(beforeCursor.length), next.slice(beforeCursor.length))) return null;
  return { start, end, text: next };
}

/** Lines of `visible` ranges (0-based, inclusive) that the editor shows now. */
export interface VisibleLines {
  start: number;
  end: number;
}

export function classifyNextEdit(
  text: ShapeText,
  slice: (start: number, end: number) => string,
  edit: TextReplacement,
  cursor: number,
  visible: readonly VisibleLines[],
  nearLines = NEAR_LINES,
): NextEditShape {
  const first = text.positionAt(edit.start);
  const last = text.positionAt(edit.end);
  const cursorLine = text.positionAt(cursor).line;
  const distance = cursorLine < first.line ? first.line - cursorLine : cursorLine > last.line ? cursorLine - last.line : 0;
  const onScreen = visible.length === 0 || visible.some((v) => first.line <= v.end && last.line >= v.start);
  const far = distance > nearLines || !onScreen;
  const base = { edit, firstLine: first.line, lastLine: last.line, distance, far, removed: { start: edit.start, end: edit.end } };
  if (!far) {
    const ghost = ghostForm(text, edit, cursor, slice);
    if (ghost) return { ...base, render: 'ghost', ghost };
  }
  const multiline = edit.text.includes('\n') || first.line !== last.line;
  if (!edit.text) {
    return { ...base, render: 'deletion' };
  }
  if (!multiline) {
    return { ...base, render: 'inline', inserted: { at: edit.end, text: edit.text } };
  }
  return { ...base, render: 'block', block: blockOf(text, slice, edit) };
}

/**
 * The lines a several-line edit leaves, without the unchanged lines at either end: what the image
 * shows. The image sits beside the first changed line (for an insertion of whole lines: the line above
 * them), clear of the widest line it covers.
 */
function blockOf(text: ShapeText, slice: (start: number, end: number) => string, edit: TextReplacement): NonNullable<NextEditShape['block']> {
  const first = text.positionAt(edit.start);
  const last = text.positionAt(edit.end);
  const lineStart = text.offsetAt({ line: first.line, character: 0 });
  const lineEnd = text.offsetAt({ line: last.line, character: text.lineText(last.line).length });
  const oldLines = slice(lineStart, lineEnd).split('\n');
  let newLines = (slice(lineStart, edit.start) + edit.text + slice(edit.end, lineEnd)).split('\n');
  // Unchanged lines at both ends are the document's, not the edit's.
  let head = 0;
  while (head < oldLines.length && head < newLines.length && oldLines[head] === newLines[head]) head++;
  let tail = 0;
  while (tail < oldLines.length - head && tail < newLines.length - head && oldLines[oldLines.length - 1 - tail] === newLines[newLines.length - 1 - tail]) tail++;
  newLines = newLines.slice(head, newLines.length - tail);
  const changedOld = { first: first.line + head, last: last.line - tail };
  // Only new lines (nothing of the old changes): drawn beside the line above where they go.
  const insertionOnly = changedOld.last < changedOld.first;
  const anchorLine = insertionOnly ? Math.max(0, changedOld.first - 1) : changedOld.first;
  let widestColumn = 0;
  const coverLast = Math.min(text.lineCount - 1, anchorLine + Math.min(newLines.length, BLOCK_MAX_LINES));
  for (let line = anchorLine; line <= Math.max(anchorLine, coverLast); line++) widestColumn = Math.max(widestColumn, text.lineText(line).length);
  const moreLines = Math.max(0, newLines.length - BLOCK_MAX_LINES);
  return { lines: newLines.slice(0, BLOCK_MAX_LINES), anchorLine, moreLines, widestColumn };
}

/** A ShapeText over a string (tests, and the request's text). */
export function stringShapeText(value: string): ShapeText & { slice(start: number, end: number): string } {
  const starts = lineStarts(value);
  const lineEnd = (line: number) => (line + 1 < starts.length ? starts[line + 1]! - 1 : value.length);
  return {
    lineCount: starts.length,
    positionAt(offset) {
      const line = lineOf(starts, offset);
      return { line, character: offset - starts[line]! };
    },
    offsetAt({ line, character }) {
      const l = Math.max(0, Math.min(line, starts.length - 1));
      return Math.min(starts[l]! + character, lineEnd(l));
    },
    lineText: (line) => value.slice(starts[line]!, lineEnd(line)),
    slice: (start, end) => value.slice(start, end),
  };
}
