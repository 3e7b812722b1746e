// Reading recorded edit events (unified diffs) the ways the formats and the undo check need them: the
// hunks without file headers (Zeta's prompt), each hunk's two sides (Sweep's original:/updated: blocks),
// and the text before an event (Sweep's original/ window; the undo check).
import { applyPatch, parsePatch, reversePatch, type StructuredPatch } from 'diff';
import type { EditEvent } from './types';

/**
 * The event's patches, or null when its diff does not parse. Diffs written by hand or copied through
 * editors (Zed's evals) lose the space of blank context lines and then miscount their hunks; those are
 * read leniently: a blank line in a hunk is a blank context line, and the counts are taken from the lines.
 */
export function parseEvent(event: EditEvent): StructuredPatch[] | null {
  for (const diff of [event.diff, recountHunks(event.diff)]) {
    try {
      const patches = parsePatch(diff);
      if (patches.some((p) => p.hunks.length > 0)) return patches;
    } catch {
      // Try the lenient reading next.
    }
  }
  return null;
}

/** The diff with blank hunk lines made context lines and each `@@` header's counts recomputed. */
export function recountHunks(diff: string): string {
  const lines = diff.split('\n');
  const trailingNewline = lines[lines.length - 1] === '';
  if (trailingNewline) lines.pop();
  const out: string[] = [];
  let header = -1;
  let oldCount = 0;
  let newCount = 0;
  const closeHunk = () => {
    if (header === -1) return;
    out[header] = out[header]!.replace(/^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/, `@@ -$1,${oldCount} +$2,${newCount} @@`);
    header = -1;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fileHeader = line.startsWith('--- ') && lines[i + 1]?.startsWith('+++ ');
    if (line.startsWith('@@') || fileHeader) {
      closeHunk();
      if (line.startsWith('@@')) {
        header = out.length;
        oldCount = 0;
        newCount = 0;
      }
      out.push(line);
      if (fileHeader) out.push(lines[++i]!);
      continue;
    }
    if (header === -1 || line.startsWith('\\')) {
      out.push(line);
      continue;
    }
    const kind = line === '' ? ' ' : line[0];
    if (kind === ' ' || kind === '-') oldCount++;
    if (kind === ' ' || kind === '+') newCount++;
    out.push(line === '' ? ' ' : line);
  }
  closeHunk();
  return out.join('\n') + (trailingNewline ? '\n' : '');
}

/** The diff from its first `@@` line on, as Zed's `language::unified_diff` writes an event (no file headers). */
export function hunksOnly(diff: string): string {
  const at = diff.startsWith('@@') ? 0 : diff.indexOf('\n@@');
  return at === -1 ? diff : diff.slice(at === 0 ? 0 : at + 1);
}

/** Each hunk's text before and after, context lines included, lines joined by '\n' without a final one. */
export function hunkSides(event: EditEvent): { original: string; updated: string }[] {
  const patches = parseEvent(event) ?? [];
  return patches.flatMap((patch) =>
    patch.hunks.map((hunk) => {
      const original: string[] = [];
      const updated: string[] = [];
      for (const line of hunk.lines) {
        const body = line.slice(1);
        if (line[0] === ' ' || line[0] === '-') original.push(body);
        if (line[0] === ' ' || line[0] === '+') updated.push(body);
      }
      return { original: original.join('\n'), updated: updated.join('\n') };
    }),
  );
}

/** `text` with the event undone, or null when the event does not apply to it in reverse. */
export function undoEvent(text: string, event: EditEvent): string | null {
  const patches = parseEvent(event);
  if (patches?.length !== 1) return null;
  const undone = applyPatch(text, reversePatch(patches[0]!));
  return undone === false ? null : undone;
}

/** The newest event on `path`, if any. */
export function lastEventOn(events: readonly EditEvent[], path: string): EditEvent | null {
  for (let i = events.length - 1; i >= 0; i--) if (events[i]!.path === path || stripAB(events[i]!.path) === path) return events[i]!;
  return null;
}

function stripAB(path: string): string {
  return path.replace(/^[ab]\//, '');
}
