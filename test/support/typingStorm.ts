// A typing storm against the real inference worker (WorkerClient + dist/worker.js), as the editor
// drives it with a debounce of 0: every keystroke mirrors an edit, aborts the running completion and
// asks for a new one. Used by the CI-size soak test (test/integration/soak.test.ts) and `npm run soak`.
import * as path from 'node:path';
import { documentWindow } from '../../src/prompt/documentWindow';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/settings/declaredSettings';
import type { CompletionRequest, CompletionResult } from '../../src/shared/completion';
import type { WorkerDiagnostics } from '../../src/worker/protocol';
import type { WorkerClient } from '../../src/worker/workerClient';
import { lineOf } from '../../src/nextEdit/textLines';

export interface StormOptions {
  client: WorkerClient;
  /** Text typed character by character (wraps around when it runs out). */
  text: string;
  durationMs: number;
  /** Time between keystrokes (50 ms = 20 keys/s). */
  keyIntervalMs: number;
  /** RSS growth is measured from this point on (caches and allocator pools fill up before it). */
  warmupMs: number;
  /** Other open documents mirrored into the worker's n-gram index before the storm. */
  openDocuments?: Record<string, string>;
  maxTokens?: number;
  /** Stop each completion at the end of the cursor's block (default true, as the editor asks). */
  stopAtBlockEnd?: boolean;
  /** Called once a second with the elapsed time (the kill loop of `npm run soak` hooks in here). */
  onTick?(elapsedMs: number): void | Promise<void>;
  /** Called for each completion that ran to its end, with the time it arrived (performance.now()). */
  onCompleted?(at: number): void;
  /**
   * Every this many keystrokes, one is an accepted completion (Tab): its request goes as a prefetch
   * (CompletionRequest.prefetch), which the next keystroke stops like any other (issue 29).
   */
  prefetchEvery?: number;
}

export interface StormFigures {
  keystrokes: number;
  /** Completions that ran to their own end (not aborted). */
  completed: number;
  aborted: number;
  /** Requests that failed (worker crashed, restarting, models not loaded yet...), by message. */
  failures: Map<string, number>;
  /** Prefetches sent (prefetchEvery), and those the worker refused because a real completion still ran. */
  prefetches: number;
  prefetchesRefused: number;
  /** Most generations the worker ran at the same time (its own count, on its own clock). */
  maxConcurrentGenerations: number;
  /** Abort sent -> aborted response received, for every request aborted before it answered. */
  cancelToStopMs: number[];
  /**
   * Prompt tokens each request evaluated beyond what its KV cache kept (stopped ones too, with what
   * they evaluated before the stop), for every request that started: what a keystroke costs.
   */
  reevaluatedPromptTokens: number[];
  /** Worker RSS at the end of the warm-up and at the end, and the growth per minute in between. */
  rssAfterWarmupMb: number | null;
  rssEndMb: number | null;
  rssGrowthMbPerMinute: number | null;
}

const DOCUMENT_KEY = 'file:///storm/typed.ts';

/** The worker's own figures, or null while it is down (killed, restarting). */
function diagnostics(client: WorkerClient): Promise<WorkerDiagnostics | null> {
  return client.request('diagnostics', {}).catch(() => null);
}

/**
 * A file the storms type or hold open, by name ("workerMain.ts"): a fixed copy of one of Draftline's
 * own sources, so that storms at different commits type the same text.
 */
export function typingFixture(name: string): string {
  return path.resolve(__dirname, '../fixtures/documents/typing', `${name}.txt`);
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** Least-squares slope of (time, value) samples, per minute. */
function slopePerMinute(samples: readonly { at: number; mb: number }[]): number | null {
  if (samples.length < 3) return null;
  const n = samples.length;
  const meanT = samples.reduce((s, x) => s + x.at, 0) / n;
  const meanV = samples.reduce((s, x) => s + x.mb, 0) / n;
  let num = 0;
  let den = 0;
  for (const { at, mb } of samples) {
    num += (at - meanT) * (mb - meanV);
    den += (at - meanT) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 60_000;
}

export async function typingStorm(options: StormOptions): Promise<StormFigures> {
  const { client } = options;
  const figures: StormFigures = {
    keystrokes: 0,
    completed: 0,
    aborted: 0,
    failures: new Map(),
    prefetches: 0,
    prefetchesRefused: 0,
    maxConcurrentGenerations: 0,
    cancelToStopMs: [],
    reevaluatedPromptTokens: [],
    rssAfterWarmupMb: null,
    rssEndMb: null,
    rssGrowthMbPerMinute: null,
  };
  for (const [key, text] of Object.entries(options.openDocuments ?? {})) client.notify({ kind: 'documentOpen', key, text });
  client.notify({ kind: 'documentOpen', key: DOCUMENT_KEY, text: '' });

  const rss: { at: number; mb: number }[] = [];
  const outstanding = new Set<Promise<void>>();
  let typed = '';
  /** Offsets where the typed text's lines start, for the window's line numbers (what the editor's document knows). */
  const lineStarts = [0];
  const typedSource = {
    get length() {
      return typed.length;
    },
    slice: (start: number, end: number) => typed.slice(start, end),
    lineAt: (offset: number) => lineOf(lineStarts, offset),
  };
  type InFlight = { controller: AbortController; abortedAt: number | null };
  const latest: { request: InFlight | null } = { request: null };
  const started = performance.now();
  let nextTick = started + 1000;

  const ask = (request: CompletionRequest) => {
    const entry: InFlight = { controller: new AbortController(), abortedAt: null };
    latest.request = entry;
    const done = client.request('complete', { request }, entry.controller.signal).then(
      (result: CompletionResult) => {
        // Answers stopped before they started report none.
        if (result.stats.promptTokensEvaluated !== undefined) figures.reevaluatedPromptTokens.push(result.stats.promptTokensEvaluated);
        if (result.stats.stopReason === 'abort') {
          figures.aborted++;
          if (entry.abortedAt !== null) figures.cancelToStopMs.push(performance.now() - entry.abortedAt);
        } else {
          figures.completed++;
          options.onCompleted?.(performance.now());
        }
      },
      (error: Error & { code?: string }) => {
        // A prefetch yields to a real request still running (the one the keystroke before aborted).
        if (request.prefetch && error.code === 'busy') figures.prefetchesRefused++;
        else figures.failures.set(error.message, (figures.failures.get(error.message) ?? 0) + 1);
      },
    );
    outstanding.add(done);
    void done.finally(() => outstanding.delete(done));
  };

  for (let i = 0; performance.now() - started < options.durationMs; i++) {
    const char = options.text[i % options.text.length]!;
    client.notify({ kind: 'documentEdit', key: DOCUMENT_KEY, edits: [{ offset: typed.length, deleteCount: 0, text: char }] });
    typed += char;
    if (char === '\n') lineStarts.push(typed.length);
    figures.keystrokes++;
    const previous = latest.request;
    if (previous && previous.abortedAt === null) {
      previous.abortedAt = performance.now();
      previous.controller.abort();
    }
    // The prefix as the editor windows it (prompt/documentWindow.ts, the default limits).
    const window = documentWindow(typedSource, typed.length, DEFAULT_ENGINE_SETTINGS);
    ask({
      prefix: window.prefix,
      ...(window.prefixLine === undefined ? {} : { prefixLine: window.prefixLine }),
      suffix: '\n',
      documentKey: DOCUMENT_KEY,
      languageId: 'typescript',
      maxTokens: options.maxTokens ?? 48,
      mode: 'hybrid',
      stopAtBlockEnd: options.stopAtBlockEnd ?? true,
      ...(options.prefetchEvery && (i + 1) % options.prefetchEvery === 0 ? (figures.prefetches++, { prefetch: true }) : {}),
    });
    await new Promise((resolve) => setTimeout(resolve, options.keyIntervalMs));
    const now = performance.now();
    if (now >= nextTick) {
      nextTick += 1000;
      // A worker restarted after a kill counts from its own start: keep the most seen.
      const sample = await diagnostics(client);
      if (sample) {
        figures.maxConcurrentGenerations = Math.max(figures.maxConcurrentGenerations, sample.maxConcurrentGenerations);
        if (now - started >= options.warmupMs) rss.push({ at: now, mb: sample.rssBytes / 2 ** 20 });
      }
      await options.onTick?.(now - started);
    }
  }
  await Promise.allSettled([...outstanding]);
  const last = await diagnostics(client);
  figures.maxConcurrentGenerations = Math.max(figures.maxConcurrentGenerations, last?.maxConcurrentGenerations ?? 0);
  figures.rssAfterWarmupMb = rss[0]?.mb ?? null;
  figures.rssEndMb = last ? last.rssBytes / 2 ** 20 : (rss.at(-1)?.mb ?? null);
  figures.rssGrowthMbPerMinute = slopePerMinute(rss);
  return figures;
}

export function describeStorm(f: StormFigures, durationMs: number): string {
  const fmt = (v: number | null, digits = 1) => (v === null || Number.isNaN(v) ? '-' : v.toFixed(digits));
  const c = f.cancelToStopMs;
  const r = f.reevaluatedPromptTokens;
  const failures = [...f.failures].map(([m, n]) => `${n}x ${m}`).join('; ') || 'none';
  return [
    `${f.keystrokes} keystrokes in ${(durationMs / 1000).toFixed(0)} s: ${f.completed} completed, ${f.aborted} aborted; failures: ${failures}${f.prefetches ? `; ${f.prefetches} of them prefetches (${f.prefetchesRefused} refused: a real completion still ran)` : ''}`,
    `generations in flight at once: max ${f.maxConcurrentGenerations}`,
    `cancel -> stop (${c.length} aborts): p50 ${fmt(percentile(c, 50))} ms, p95 ${fmt(percentile(c, 95))} ms, max ${fmt(c.length ? Math.max(...c) : null)} ms`,
    `prompt tokens evaluated again per request (${r.length} that started): p50 ${fmt(percentile(r, 50), 0)}, p90 ${fmt(percentile(r, 90), 0)}, max ${fmt(r.length ? Math.max(...r) : null, 0)}`,
    `worker RSS: ${fmt(f.rssAfterWarmupMb)} MB after warm-up -> ${fmt(f.rssEndMb)} MB at the end (${fmt(f.rssGrowthMbPerMinute, 2)} MB/min)`,
  ].join('\n');
}
