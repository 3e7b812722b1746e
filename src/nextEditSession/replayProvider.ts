// Recorded next-edit answers as a NextEditProvider (nextEdit/provider.ts): the real-editor tests'
// backend, in place of the local worker or a server.
import { type DecoderStats, emptySpeculationStats } from '../shared/generationStats';
import type { NextEditProvider } from '../nextEdit/provider';
import type { NextEditRequest, NextEditResult, TextReplacement } from '../nextEdit/types';

/**
 * The smallest replacements that turn `before` into `after`: line by line where both have as many
 * lines (each changed line trimmed to its changed middle), else one replacement.
 */
export function editsBetween(before: string, after: string): TextReplacement[] {
  if (before === after) return [];
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length !== b.length) return [trimmed(before, after, 0)];
  const edits: TextReplacement[] = [];
  let offset = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) edits.push(trimmed(a[i]!, b[i]!, offset));
    offset += a[i]!.length + 1;
  }
  return edits;
}

function trimmed(before: string, after: string, offset: number): TextReplacement {
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  let tail = 0;
  while (tail < before.length - head && tail < after.length - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++;
  return { start: offset + head, end: offset + before.length - tail, text: after.slice(head, after.length - tail) };
}

/** A recorded answer: the model, shown the document `before`, proposed it become `after`. */
export interface RecordedNextEdit {
  before: string;
  after: string;
  /** The model's time to the first edit and to the answer (default 0 and 0). */
  firstEditMs?: number;
  totalMs?: number;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * Recorded answers served by the document's text (for the real-editor tests, through
 * DRAFTLINE_NEXT_EDIT_REPLAY): a text that was recorded gets its edits, any other text none.
 */
export class ReplayNextEditProvider implements NextEditProvider {
  readonly requests: NextEditRequest[] = [];

  constructor(private readonly cases: readonly RecordedNextEdit[]) {}

  async nextEdit(request: NextEditRequest, signal: AbortSignal = new AbortController().signal, onEdit?: (edit: TextReplacement, ms: number) => void): Promise<NextEditResult> {
    this.requests.push(request);
    const started = Date.now();
    const recorded = this.cases.find((c) => c.before === request.text);
    const edits = recorded ? editsBetween(recorded.before, recorded.after) : [];
    const region = { start: 0, end: request.text.length };
    const figures = (stopped: boolean) => replayStats(Date.now() - started, stopped);
    await sleep(recorded?.firstEditMs ?? 0, signal);
    if (signal.aborted) return { format: 'sweep', region, edits: [], regionText: null, noSuggestion: { reason: 'cancelled', detail: 'a keystroke' }, stats: figures(true) };
    const firstMs = Date.now() - started;
    if (edits[0]) onEdit?.(edits[0], firstMs);
    await sleep((recorded?.totalMs ?? 0) - firstMs, signal);
    if (!recorded) return { format: 'sweep', region, edits: [], regionText: request.text, noSuggestion: { reason: 'unchanged', detail: 'no recorded answer for this text' }, stats: figures(false) };
    return { format: 'sweep', region, edits, regionText: recorded.after, timeToFirstEditMs: edits.length ? firstMs : undefined, stats: figures(false) };
  }
}

function replayStats(totalMs: number, stopped: boolean): DecoderStats {
  return {
    promptTokens: 0,
    reusedPromptTokens: 0,
    generatedTokens: 0,
    promptMs: 0,
    timeToFirstTokenMs: 0,
    totalMs,
    stopReason: stopped ? 'abort' : 'eos',
    speculation: emptySpeculationStats('plain'),
  };
}
