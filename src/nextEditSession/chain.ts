// The edits of one next-edit answer as the editor goes through them: which is shown first, and where
// the others are once one was applied (a chain: rename one use, Tab, Tab through the others).
import type { TextReplacement } from '../nextEdit/types';

/** The edits moved by `delta` characters: the request's text offsets to the document's (a window sent from `base`). */
export function shifted(edits: readonly TextReplacement[], delta: number): TextReplacement[] {
  return edits.map((e) => ({ start: e.start + delta, end: e.end + delta, text: e.text }));
}

/**
 * The edits left once `applied` is in the document: those after it move by what it added or removed,
 * those before it stay, and one that overlaps it is dropped (it was computed against text that is gone).
 */
export function remainingAfter(applied: TextReplacement, others: readonly TextReplacement[]): TextReplacement[] {
  const delta = applied.text.length - (applied.end - applied.start);
  const out: TextReplacement[] = [];
  for (const e of others) {
    if (e.start === applied.start && e.end === applied.end && e.text === applied.text) continue;
    if (e.end <= applied.start) out.push({ ...e });
    else if (e.start >= applied.end) out.push({ start: e.start + delta, end: e.end + delta, text: e.text });
  }
  return out.sort((a, b) => a.start - b.start);
}

/** The edits left once the user's own change (`offset`, `deleteCount`, `text`) is in the document, as remainingAfter. */
export function remainingAfterChange(change: { offset: number; deleteCount: number; text: string }, edits: readonly TextReplacement[]): TextReplacement[] {
  return remainingAfter({ start: change.offset, end: change.offset + change.deleteCount, text: change.text }, edits);
}

/** Whether two edits are the same replacement. */
export function sameEdit(a: TextReplacement, b: TextReplacement): boolean {
  return a.start === b.start && a.end === b.end && a.text === b.text;
}

/**
 * The edit to show first: the one nearest the cursor by lines (ties: the one after the cursor, then
 * the earlier one). `lineOf` maps an offset to its line.
 */
export function nearestEdit(edits: readonly TextReplacement[], cursor: number, lineOf: (offset: number) => number): TextReplacement | undefined {
  const cursorLine = lineOf(cursor);
  let best: TextReplacement | undefined;
  let bestKey: [number, number, number] | undefined;
  for (const e of edits) {
    const first = lineOf(e.start);
    const last = lineOf(e.end);
    const distance = cursorLine < first ? first - cursorLine : cursorLine > last ? cursorLine - last : 0;
    const key: [number, number, number] = [distance, e.end < cursor ? 1 : 0, e.start];
    if (!bestKey || key[0] < bestKey[0] || (key[0] === bestKey[0] && (key[1] < bestKey[1] || (key[1] === bestKey[1] && key[2] < bestKey[2])))) {
      best = e;
      bestKey = key;
    }
  }
  return best;
}
