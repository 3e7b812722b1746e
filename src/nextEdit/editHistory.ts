// The user's recent edits, as the next-edit models read them: one unified diff per burst of typing in one
// place. Keystrokes close in time and on the same or adjacent lines coalesce into one event (a word typed
// is one edit, not five), so the model sees intent rather than keystrokes; a pause, another place or
// another file starts a new event. Events of every open file share one timeline, labelled by path, and
// the history is bounded in count and in characters (oldest dropped first), since every event costs
// prompt tokens on every request.
import { createTwoFilesPatch } from 'diff';
import { lineOf, lineStarts } from './textLines';
import type { EditEvent } from './types';

/** One change to a document: `deleteCount` characters at `offset` of the text before it replaced by `text`. */
export interface DocumentChange {
  offset: number;
  deleteCount: number;
  text: string;
}

export interface EditHistoryLimits {
  /** Edits closer than this (ms) may coalesce into one event. */
  coalesceMs: number;
  /** An edit coalesces when it touches the event's lines or the line next to them. */
  adjacentLines: number;
  maxEvents: number;
  /** All events' diffs together stay under this many characters; an event alone above it is dropped. */
  maxChars: number;
  /** Context lines around each hunk (unified diff's usual 3, as Zed's events have). */
  contextLines: number;
}

export const DEFAULT_EDIT_HISTORY_LIMITS: EditHistoryLimits = { coalesceMs: 1500, adjacentLines: 1, maxEvents: 16, maxChars: 16_000, contextLines: 3 };

/** The event still being typed: its texts are kept until it closes, then only its diff. */
interface OpenEvent {
  path: string;
  /** The document before the event's first change. */
  original: string;
  /** The document after its last change. */
  current: string;
  /** Lines of `current` the event has touched (first..last). */
  firstLine: number;
  lastLine: number;
  at: number;
}

export class EditHistory {
  private readonly closed: EditEvent[] = [];
  private open: OpenEvent | null = null;
  private readonly limits: EditHistoryLimits;

  constructor(limits: Partial<EditHistoryLimits> = {}) {
    this.limits = { ...DEFAULT_EDIT_HISTORY_LIMITS, ...limits };
  }

  /** Records one change to `path`, whose text was `before` (the caller's document before the change). */
  record(path: string, before: string, change: DocumentChange, at: number): void {
    const after = before.slice(0, change.offset) + change.text + before.slice(change.offset + change.deleteCount);
    if (after === before) return;
    const starts = lineStarts(before);
    const first = lineOf(starts, change.offset);
    const last = lineOf(starts, change.offset + change.deleteCount);
    const addedLines = countNewlines(change.text) - countNewlines(before.slice(change.offset, change.offset + change.deleteCount));

    const open = this.open;
    if (open && this.continues(open, path, before, first, last, at)) {
      open.current = after;
      // The event's lines after this change: lines below the change shift by the lines it added.
      open.lastLine = Math.max(open.lastLine >= last ? open.lastLine + addedLines : open.lastLine, last + addedLines);
      open.firstLine = Math.min(open.firstLine, first);
      open.at = at;
      return;
    }
    this.close();
    this.open = { path, original: before, current: after, firstLine: first, lastLine: Math.max(first, last + addedLines), at };
  }

  /** Events oldest first, the one being typed included. */
  events(): EditEvent[] {
    const open = this.open && this.eventOf(this.open);
    return this.bounded(open ? [...this.closed, open] : [...this.closed]);
  }

  /** Forgets a file's events (its document closed or was renamed away). */
  forget(path: string): void {
    if (this.open?.path === path) this.open = null;
    for (let i = this.closed.length - 1; i >= 0; i--) if (this.closed[i]!.path === path) this.closed.splice(i, 1);
  }

  private continues(open: OpenEvent, path: string, before: string, first: number, last: number, at: number): boolean {
    // `before` differs from what the event last saw when a change went unrecorded: start afresh.
    if (open.path !== path || open.current !== before) return false;
    if (at - open.at >= this.limits.coalesceMs) return false;
    const reach = this.limits.adjacentLines;
    return first <= open.lastLine + reach && last >= open.firstLine - reach;
  }

  private close(): void {
    if (!this.open) return;
    const event = this.eventOf(this.open);
    this.open = null;
    // Typed and undone again: nothing happened.
    if (!event) return;
    this.closed.push(event);
    this.closed.splice(0, this.closed.length - this.bounded(this.closed).length);
  }

  private eventOf(open: OpenEvent): EditEvent | null {
    const diff = unifiedDiff(open.path, open.original, open.current, this.limits.contextLines);
    return diff === null ? null : { path: open.path, diff, at: open.at };
  }

  /** The newest events that fit the count and character bounds. */
  private bounded(events: EditEvent[]): EditEvent[] {
    let chars = 0;
    let from = events.length;
    while (from > 0 && events.length - from < this.limits.maxEvents) {
      const size = events[from - 1]!.diff.length;
      if (chars + size > this.limits.maxChars) break;
      chars += size;
      from--;
    }
    return events.slice(from);
  }
}

/**
 * `--- a/path` / `+++ b/path` and the hunks that turn `before` into `after` (git's header style, which
 * the recorded cases and Zed's edit history use); null when they are equal.
 */
export function unifiedDiff(path: string, before: string, after: string, contextLines = DEFAULT_EDIT_HISTORY_LIMITS.contextLines): string | null {
  if (before === after) return null;
  const patch = createTwoFilesPatch(`a/${path}`, `b/${path}`, before, after, undefined, undefined, { context: contextLines });
  // jsdiff writes a separator line of '=' above the headers; unified diffs elsewhere have none.
  return patch.replace(/^=+\n/, '');
}

function countNewlines(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
