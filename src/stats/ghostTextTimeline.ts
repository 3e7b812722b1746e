// Where the time between an edit and its ghost text goes, as the extension host sees it. In a huge
// file on a busy machine the editor itself can take tens of seconds before it asks for ghost text,
// while Draftline's part is a few; this says which part was whose, in the log and in Show Stats, so
// a user (and the real-editor test) can tell.
import { SERVED_NAMES, servedKind } from './servedKind';

/** One answered request for ghost text, in milliseconds. */
export interface GhostTextTimeline {
  /** From the document's last edit reaching the extension host to VS Code asking for ghost text; null when no edit was seen (a cursor move, an explicit request). */
  askedAfterEditMs: number | null;
  /** From VS Code asking to Draftline answering: everything that is Draftline's (debounce, model, post-processing). */
  answeredInMs: number;
  /** Of answeredInMs: the wait before the model request (the debounce as it really ran), when the model was asked. */
  waitMs?: number;
  /** Of answeredInMs: the model request, when the model was asked (absent for a cache hit). */
  modelMs?: number;
  fromCache: boolean;
  /** Of a cache hit: computed by a prefetch (served "from a prefetch", else "from the cache"). */
  prefetched?: boolean;
  /**
   * Of askedAfterEditMs: how long the models could not serve (loading, the worker restarting after a
   * crash), and why. VS Code asks again only once they are back: that wait was theirs, not the editor's.
   */
  waitedForModels?: { ms: number; cause: string };
}

/** A timeline worth a line in the log: the user waited this long, from the edit reaching Draftline to the answer. */
export const SLOW_GHOST_TEXT_MS = 1000;

export function totalMs(t: GhostTextTimeline): number {
  return (t.askedAfterEditMs ?? 0) + t.answeredInMs;
}

/** How a cache hit is named (stats/servedKind.ts). */
const fromWhere = (t: GhostTextTimeline) => SERVED_NAMES[servedKind(t.fromCache, t.prefetched === true)];

const seconds = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`);

/** Draftline's own part, split where it can be. */
function ours(t: GhostTextTimeline): string {
  if (t.fromCache) return `Draftline answered ${fromWhere(t)} in ${seconds(t.answeredInMs)}`;
  const parts = [...(t.waitMs !== undefined ? [`${seconds(t.waitMs)} waiting for typing to pause`] : []), ...(t.modelMs !== undefined ? [`${seconds(t.modelMs)} in the model`] : [])];
  return `Draftline answered in ${seconds(t.answeredInMs)}${parts.length ? ` (${parts.join(', ')})` : ''}`;
}

/** The log line for a slow ghost text, or null when it was not slow. */
export function describeSlowGhostText(t: GhostTextTimeline): string | null {
  const total = totalMs(t);
  if (total < SLOW_GHOST_TEXT_MS) return null;
  if (t.askedAfterEditMs === null) return `slow ghost text: ${ours(t)}`;
  const models = t.waitedForModels;
  const modelsMs = Math.min(models?.ms ?? 0, t.askedAfterEditMs);
  const editorMs = t.askedAfterEditMs - modelsMs;
  const why =
    models && modelsMs / total >= 0.5
      ? `: most of it waiting for the models (${models.cause}: ${seconds(modelsMs)}), after which VS Code asked again`
      : editorMs / total >= 0.5
        ? ': most of it before VS Code asked (the editor was busy: in a huge file its own language features and rendering can take this long)'
        : '';
  const modelsPart = models && modelsMs > 0 ? ` (${seconds(modelsMs)} of it waiting for ${models.cause})` : '';
  return `slow ghost text: ${seconds(total)} from the edit reaching Draftline to the answer${why} — VS Code asked ${seconds(t.askedAfterEditMs)} after the edit${modelsPart}; ${ours(t)}`;
}

/** Show Stats' steps of the last answered request, each with its time. */
export function timelineFigures(t: GhostTextTimeline): [step: string, time: string][] {
  return [
    ['VS Code asked, after the edit reached Draftline', t.askedAfterEditMs === null ? '- (no edit: a cursor move or an explicit request)' : seconds(t.askedAfterEditMs)],
    ...(t.waitedForModels ? [[`of which waiting for the models (${t.waitedForModels.cause})`, seconds(t.waitedForModels.ms)] as [string, string]] : []),
    ['Draftline answered, after VS Code asked', `${seconds(t.answeredInMs)}${t.fromCache ? ` (${fromWhere(t)})` : ''}`],
  ];
}

/** The same as Markdown table rows. */
export function timelineRows(t: GhostTextTimeline): string[] {
  return timelineFigures(t).map(([step, time]) => `| ${step} | ${time} |`);
}
