// The user's recent edits as unified diffs (NextEditRequest.events), recorded from the editor's change
// events: a small stand-in with the shape of nextEdit/editHistory.ts's, which replaces it once on main.
// Changes within COALESCE_MS and a few lines of each other make one event; at most MAX_EVENTS are kept.
import type { EditEvent } from '../types';

export interface DocumentChange {
  offset: number;
  deleteCount: number;
  text: string;
}

/** Documents longer than this are not recorded (a copy of the text is kept per document). */
export const MAX_RECORDED_CHARS = 1_000_000;
const COALESCE_MS = 1500;
const COALESCE_LINES = 3;
const MAX_EVENTS = 12;
const MAX_DIFF_CHARS = 2000;

interface OpenEvent {
  key: string;
  path: string;
  /** The document's text when the event began. */
  before: string;
  at: number;
  /** Lines it touches in the current text (0-based, inclusive). */
  lines: [number, number];
}

/** A unified diff of the lines that differ between `before` and `after` (one hunk, no context), or '' when equal. */
export function unifiedDiff(path: string, before: string, after: string): string {
  if (before === after) return '';
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const removed = a.slice(head, a.length - tail);
  const added = b.slice(head, b.length - tail);
  const range = (start: number, count: number) => `${count === 0 ? start : start + 1},${count}`;
  return [`--- a/${path}`, `+++ b/${path}`, `@@ -${range(head, removed.length)} +${range(head, added.length)} @@`, ...removed.map((l) => `-${l}`), ...added.map((l) => `+${l}`), ''].join('\n');
}

const lineOf = (text: string, offset: number) => {
  let line = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
};

export class RecentEdits {
  private readonly texts = new Map<string, string>();
  private readonly closed: EditEvent[] = [];
  private open: OpenEvent | null = null;

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** The document's text as it is now (when it opens, and before the first change is recorded). */
  track(key: string, text: string): void {
    if (text.length <= MAX_RECORDED_CHARS) this.texts.set(key, text);
  }

  forget(key: string): void {
    this.texts.delete(key);
    if (this.open?.key === key) this.closeOpen();
  }

  /** Changes of one change event (offsets in the text before it), applied in order of decreasing offset. */
  record(key: string, path: string, changes: readonly DocumentChange[]): void {
    const before = this.texts.get(key);
    if (before === undefined) return;
    let after = before;
    for (const c of [...changes].sort((x, y) => y.offset - x.offset)) after = after.slice(0, c.offset) + c.text + after.slice(c.offset + c.deleteCount);
    if (after.length > MAX_RECORDED_CHARS) {
      this.texts.delete(key);
      return;
    }
    this.texts.set(key, after);
    const first = Math.min(...changes.map((c) => lineOf(after, c.offset)));
    const last = Math.max(...changes.map((c) => lineOf(after, c.offset + c.text.length)));
    const now = this.now();
    const o = this.open;
    if (o && o.key === key && now - o.at <= COALESCE_MS && first <= o.lines[1] + COALESCE_LINES && last >= o.lines[0] - COALESCE_LINES) {
      o.at = now;
      o.lines = [Math.min(o.lines[0], first), Math.max(o.lines[1], last)];
      return;
    }
    this.closeOpen();
    this.open = { key, path, before, at: now, lines: [first, last] };
  }

  /** The recorded edits, oldest first, the one under way included. */
  events(): EditEvent[] {
    const events = [...this.closed];
    const o = this.open;
    if (o) {
      const diff = unifiedDiff(o.path, o.before, this.texts.get(o.key) ?? o.before);
      if (diff && diff.length <= MAX_DIFF_CHARS) events.push({ path: o.path, diff, at: o.at });
    }
    return events.slice(-MAX_EVENTS);
  }

  private closeOpen(): void {
    const o = this.open;
    this.open = null;
    if (!o) return;
    const diff = unifiedDiff(o.path, o.before, this.texts.get(o.key) ?? o.before);
    if (!diff || diff.length > MAX_DIFF_CHARS) return;
    this.closed.push({ path: o.path, diff, at: o.at });
    if (this.closed.length > MAX_EVENTS) this.closed.shift();
  }
}
