// From a model's output to the edits shown in the editor. The format reads the region's new text out of
// the output; it is checked (line count near the region's, some of the region kept, a real change that
// does not just revert the user's last edit) and reduced to the smallest replacements against the current
// region: a line diff finds the changed blocks, then a word diff inside each block and a trim of what the
// two sides share, so renaming `getUser` to `fetchUser` replaces "get" by "fetch" rather than the line.
//
// While the window is still being decoded, `finalEditsSoFar` gives the edits that cannot change any more:
// those followed by a run of the output that agrees with the region again (the model has re-synchronised
// with the text after them, and those tokens are verified).
import { type ChangeObject, diffLines, diffWordsWithSpace } from 'diff';
import { lastEventOn, undoEvent } from './eventDiffs';
import { lineCount } from './textLines';
import type { NextEditFormat, NextEditPrompt, NextEditRequest, NoSuggestionReason, TextReplacement } from './types';

/** How far the new region's line count may stray from the region's: this many lines, or half the region. */
export const LINE_COUNT_SLACK = 8;
/** A region with at least this many non-blank lines, of which the output keeps none, is a rewrite, not an edit. */
export const REWRITE_MIN_LINES = 3;
/** The agreeing run that makes earlier edits final: at least this many non-blank characters of whole lines. */
export const RESYNC_MIN_CHARS = 6;

export interface EditsFromOutput {
  regionText: string | null;
  edits: TextReplacement[];
  noSuggestion?: { reason: NoSuggestionReason; detail: string };
}

/** The edits a whole output proposes for a request, or why it proposes none. */
export function outputToEdits(request: NextEditRequest, prompt: NextEditPrompt, format: NextEditFormat, output: string): EditsFromOutput {
  const parsed = format.parseOutput(output, prompt);
  if ('reason' in parsed) return { regionText: null, edits: [], noSuggestion: { reason: parsed.reason, detail: parsed.detail } };
  const { regionText } = parsed;
  const current = request.text.slice(prompt.region.start, prompt.region.end);
  const refuse = (reason: NoSuggestionReason, detail: string): EditsFromOutput => ({ regionText, edits: [], noSuggestion: { reason, detail } });

  if (regionText === current) return refuse('unchanged', 'the output keeps the region as it is');
  const oldLines = lineCount(current);
  const newLines = lineCount(regionText);
  const slack = Math.max(LINE_COUNT_SLACK, Math.ceil(oldLines / 2));
  if (Math.abs(newLines - oldLines) > slack) return refuse('lineCount', `${newLines} lines for a region of ${oldLines} (allowed ±${slack})`);
  const kept = keptLines(current, regionText);
  const nonBlank = current.split('\n').filter((l) => l.trim() !== '').length;
  if (kept === 0 && nonBlank >= REWRITE_MIN_LINES) return refuse('rewritesEverything', `none of the region's ${nonBlank} non-blank lines kept`);

  const edits = reduceToEdits(current, regionText, prompt.region.start);
  const last = lastEventOn(request.events, request.path);
  if (last) {
    const undone = undoEvent(request.text, last);
    if (undone !== null && undone === applyReplacements(request.text, edits)) return refuse('undoesLastEdit', `it reverts the last edit to ${request.path}`);
  }
  return { regionText, edits };
}

/**
 * The smallest replacements that turn `current` into `next`, in document order, none overlapping, at
 * offsets of the request's text (`offset` is where `current` starts in it).
 */
export function reduceToEdits(current: string, next: string, offset: number): TextReplacement[] {
  const edits: TextReplacement[] = [];
  let oldAt = 0;
  let removed = '';
  let added = '';
  const flush = () => {
    if (removed !== '' || added !== '') edits.push(...refineBlock(removed, added, offset + oldAt - removed.length));
    removed = '';
    added = '';
  };
  for (const change of diffLines(current, next)) {
    if (change.removed) {
      removed += change.value;
      oldAt += change.value.length;
    } else if (change.added) {
      added += change.value;
    } else {
      flush();
      oldAt += change.value.length;
    }
  }
  flush();
  return edits;
}

/** `text` with the replacements made (offsets into `text`, non-overlapping, any order). */
export function applyReplacements(text: string, edits: readonly TextReplacement[]): string {
  const sorted = [...edits].sort((a, b) => a.start - b.start || a.end - b.end);
  let out = '';
  let at = 0;
  for (const edit of sorted) {
    if (edit.start < at || edit.end < edit.start || edit.end > text.length) throw new Error(`overlapping or out-of-range replacement [${edit.start}, ${edit.end})`);
    out += text.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return out + text.slice(at);
}

export interface FinalEdits {
  /** Edits that later tokens cannot change, at offsets of the request's text. */
  edits: TextReplacement[];
  /** How much of the current region and of the partial output they account for: the rest is still open. */
  regionConsumed: number;
  outputConsumed: number;
}

/**
 * The edits already final in a partial output region: everything up to the end of the last run of whole
 * lines on which the output agrees with the region again (at least RESYNC_MIN_CHARS non-blank characters,
 * so a lone `}` or blank line, which agree by accident, do not count). The caller streams these edits and
 * reduces only the remainder (region and output past the consumed lengths) when the output is complete,
 * so the streamed edits stay valid.
 */
export function finalEditsSoFar(current: string, partialOutput: string, offset: number): FinalEdits {
  // Only whole lines of the output are settled; the last one may still grow.
  const complete = partialOutput.slice(0, partialOutput.lastIndexOf('\n') + 1);
  const none: FinalEdits = { edits: [], regionConsumed: 0, outputConsumed: 0 };
  if (complete === '') return none;
  const changes: ChangeObject<string>[] = diffLines(current, complete);
  let oldAt = 0;
  let newAt = 0;
  let settled: { old: number; new: number } | null = null;
  let changedBefore = false;
  for (const change of changes) {
    if (change.removed) oldAt += change.value.length;
    else if (change.added) newAt += change.value.length;
    else {
      oldAt += change.value.length;
      newAt += change.value.length;
      // A run of whole lines the output shares with the region, after a change: the output has re-synchronised,
      // so the changes before it are settled (what follows may still change).
      if (changedBefore && change.value.replace(/\s/g, '').length >= RESYNC_MIN_CHARS && change.value.endsWith('\n')) settled = { old: oldAt, new: newAt };
    }
    if (change.added || change.removed) changedBefore = true;
  }
  if (!settled) return none;
  return { edits: reduceToEdits(current.slice(0, settled.old), complete.slice(0, settled.new), offset), regionConsumed: settled.old, outputConsumed: settled.new };
}

/** Lines of `current` (non-blank) that the line diff keeps in `next`. */
function keptLines(current: string, next: string): number {
  let kept = 0;
  for (const change of diffLines(current, next)) if (!change.added && !change.removed) kept += change.value.split('\n').filter((l) => l.trim() !== '').length;
  return kept;
}

/** One changed block made small: a word diff inside it, each replacement trimmed of what both sides share. */
function refineBlock(removed: string, added: string, at: number): TextReplacement[] {
  const edits: TextReplacement[] = [];
  let oldAt = 0;
  let from = -1;
  let gone = '';
  let text = '';
  const flush = () => {
    if (from !== -1) edits.push(trimShared({ start: at + from, end: at + from + gone.length, text }, gone));
    from = -1;
    gone = '';
    text = '';
  };
  for (const change of diffWordsWithSpace(removed, added)) {
    if (change.added || change.removed) {
      if (from === -1) from = oldAt;
      if (change.removed) gone += change.value;
      else text += change.value;
    } else flush();
    if (!change.added) oldAt += change.value.length;
  }
  flush();
  return mergeWithinWords(edits, removed, at);
}

/**
 * Joins replacements separated by at most MERGE_GAP characters that are not whitespace: "3.14" -> "math.pi"
 * reads as one replacement, not "3" -> "math" and "14" -> "pi" around a kept ".".
 */
const MERGE_GAP = 2;
function mergeWithinWords(edits: TextReplacement[], old: string, at: number): TextReplacement[] {
  const merged: TextReplacement[] = [];
  for (const edit of edits) {
    const prev = merged[merged.length - 1];
    const gap = prev ? old.slice(prev.end - at, edit.start - at) : null;
    if (prev && gap !== null && gap.length <= MERGE_GAP && !/\s/.test(gap)) merged[merged.length - 1] = { start: prev.start, end: edit.end, text: prev.text + gap + edit.text };
    else merged.push(edit);
  }
  return merged;
}

function trimShared(edit: TextReplacement, gone: string): TextReplacement {
  let head = 0;
  while (head < gone.length && head < edit.text.length && gone[head] === edit.text[head]) head++;
  let tail = 0;
  while (tail < gone.length - head && tail < edit.text.length - head && gone[gone.length - 1 - tail] === edit.text[edit.text.length - 1 - tail]) tail++;
  return { start: edit.start + head, end: edit.end - tail, text: edit.text.slice(head, edit.text.length - tail) };
}
