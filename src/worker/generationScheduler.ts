// The worker's scheduler: one generation at a time on a loaded pair. Each window's newest request
// waits in the pair's queue (a newer one from the same window supersedes it), and the next to run is
// the newest request of the window that has waited longest; a prefetch yields to any real request;
// the warm-up after a load yields to the first. Each request decodes on its window's own KV sequence
// (InferenceSession's prompt-state owners), so taking turns costs no prompt re-evaluation.
//
// Next-edit requests (issue #39) have a queue of their own on the pair, the newest of each window,
// one started at a time, and come after completions: one starts only while no real completion waits,
// and every completion (any window's, prefetches too) goes first even once it runs. The session
// stops a running next-edit between two evaluations while a completion has the models
// (inference/contextGate.ts), so another window's completion waits one decode step at most, and it
// resumes on its own KV sequence (`window N · next edit`) where it was. The window's next next-edit
// request (a keystroke) or its cancel supersedes it; nothing of another window's does.
import type { InferenceSession } from '../inference/inferenceSession';
import { noNextEdit } from '../nextEdit/noSuggestion';
import type { NextEditRequest, NextEditResult, TextReplacement } from '../nextEdit/types';
import type { AlternativesResult, CompletionRequest, LocalCompletionResult } from '../shared/completion';
import { emptySpeculationStats } from '../shared/generationStats';
import type { SpeculationSettings } from '../shared/settings';
import type { SpeculationPolicy } from '../speculation/policy';
import { PROTOCOL_VERSION, type WorkerMessage, type WorkerNotification } from './protocol';

/** Models loaded once for every client that asked for the same files with the same settings. */
export interface LoadedModels {
  key: string;
  session: InferenceSession | null;
  loading: Promise<InferenceSession> | null;
  users: Set<Connection>;
  /** Completions waiting for the generation in flight: the newest of each window, oldest window first. */
  waiting: Map<Connection, Completion>;
  /** The one generation in flight on these models (a warm-up, too), or null. */
  generating: Completion | { controller: AbortController } | null;
  /** Next-edit requests waiting: the newest of each window, oldest window first. */
  nextEditWaiting: Map<Connection, NextEditJob>;
  /** The next-edit request started on these models (decoding, or stopped while completions run), or null. */
  nextEditGenerating: NextEditJob | null;
}

/** A next-edit request from a window (protocol 5), from its arrival until its answer. */
export interface NextEditJob {
  connection: Connection;
  id: number;
  request: NextEditRequest;
  /** The next-edit model's local file (protocol `nextEdit`'s `model`): '' or absent, the target serves. */
  model?: string;
  controller: AbortController;
  /** A final edit, as soon as it is final (sent as `nextEditPartial`). */
  onEdit(edit: TextReplacement, ms: number): void;
  resolve(result: NextEditResult): void;
  reject(error: Error): void;
}

/**
 * A completion request from a window, from its arrival until its answer; or a request for
 * alternatives to its greedy completion (issue #32), scheduled the same way: a real request (it stops
 * a prefetch) that the window's next request (a keystroke) supersedes.
 */
export interface Completion {
  connection: Connection;
  id: number;
  request: CompletionRequest;
  /** How many alternatives are asked for; absent: the completion itself. */
  alternatives?: number;
  controller: AbortController;
  resolve(result: LocalCompletionResult | AlternativesResult): void;
  reject(error: Error): void;
}

/** One client: an extension host (a window). Its request ids and document keys are its own. */
export interface Connection {
  id: number;
  send(message: WorkerMessage): void;
  models: LoadedModels | null;
  /** Its documents' keys as the index holds them (scoped by the connection). */
  documents: Set<string>;
  /** Document notifications that came before its models were loaded. */
  pendingDocuments: WorkerNotification[];
  /**
   * This window's speculation settings (from its load and configure) and the adaptive policy that
   * learns from its completions: each request decodes with its own window's, whoever else shares
   * the models, and the policy figures in its results are this window's.
   */
  speculation: SpeculationSettings;
  policy: SpeculationPolicy;
  /**
   * The policy its next edits decode with: their own, because the next-edit model may be another file
   * (its verify cost another) and its copy proposals are learned apart from the completions' sources.
   */
  nextEditPolicy: SpeculationPolicy;
  /** Its completion waiting or generating, if any: a newer one from the same window supersedes it. */
  completion: Completion | null;
  /** Its next-edit request waiting or started, if any: a newer one from the same window supersedes it. */
  nextEdit: NextEditJob | null;
}

/** Completions waiting or generating, by connection-scoped request id (what a `cancel` names). */
export const running = new Map<string, AbortController>();

/** The worker's generation figures (diagnostics) and how many run now (indexing slices give way to them). */
export const generations = { running: 0, completed: 0, maxConcurrent: 0 };
/** End times (worker clock) of the latest generations, for generations.maxConcurrent. */
const recentGenerationEnds: number[] = [];

export const requestKey = (connection: Connection, id: number) => `${connection.id}:${id}`;
/** A window's prompt states are named `window N · task` (InferenceSession's owners). */
export const ownerPrefix = (connection: Connection) => `window ${connection.id} · `;

/** DRAFTLINE_WARM_UP=0 leaves it out (the startup benchmark measures the first completion both ways). */
const WARM_UP = process.env.DRAFTLINE_WARM_UP !== '0';
let warmUps = 0;

/**
 * A short completion right after a load (InferenceSession.warmUp), so the user's first one is not
 * the slow first evaluation. It runs after the load's answer went out (the caller does not await
 * it) and is in `running` like any generation: a real request aborts it and goes first.
 */
export function warmUp(entry: LoadedModels, session: InferenceSession, log: (level: 'info' | 'warn', message: string) => void): void {
  if (!WARM_UP || entry.generating) return;
  const controller = new AbortController();
  const key = `warm-up:${++warmUps}`;
  running.set(key, controller);
  const generation = { controller };
  entry.generating = generation;
  generations.running++;
  // After this turn of the event loop: the load's answer goes out first.
  setImmediate(() =>
    session
      .warmUp(controller.signal)
      .then(
        (ms) => log('info', `warm-up completion: ${Math.round(ms)} ms${controller.signal.aborted ? ' (cut short by a request)' : ''}`),
        (error: Error) => log('warn', `warm-up completion failed: ${error.message}`),
      )
      .finally(() => {
        running.delete(key);
        generations.running--;
        if (entry.generating === generation) entry.generating = null;
        serveNext(entry);
      }),
  );
}

/** What a request that never ran answers: nothing, stopped by a cancel (as a generation cut short at once is). */
function notRun(completion: Completion): LocalCompletionResult | AlternativesResult {
  if (completion.alternatives !== undefined) return { completions: [], limitedBy: 'cancelled', totalMs: 0 };
  return {
    text: '',
    tokens: [],
    stats: {
      promptTokens: 0,
      reusedPromptTokens: 0,
      generatedTokens: 0,
      promptMs: 0,
      timeToFirstTokenMs: 0,
      totalMs: 0,
      stopReason: 'abort',
      speculation: emptySpeculationStats('plain'),
    },
  };
}

/**
 * Queues a window's completion on its models. Per window (connection): its newer request supersedes
 * its older one, waiting or generating, and a cancel stops only its own. Across windows nothing is
 * cancelled: one generation runs at a time on a pair, and the next is the newest request of the
 * window that has waited longest (round robin), so a window that types fast cannot starve another.
 */
export function enqueueCompletion(connection: Connection, entry: LoadedModels, id: number, request: CompletionRequest, alternatives?: number): Promise<LocalCompletionResult | AlternativesResult> {
  return new Promise((resolve, reject) => {
    const previous = connection.completion;
    const completion: Completion = { connection, id, request, ...(alternatives !== undefined ? { alternatives } : {}), controller: new AbortController(), resolve, reject };
    const key = requestKey(connection, id);
    running.set(key, completion.controller);
    connection.completion = completion;
    const settle = () => {
      running.delete(key);
      if (connection.completion === completion) connection.completion = null;
    };
    completion.resolve = (result) => (settle(), resolve(result));
    completion.reject = (error) => (settle(), reject(error));
    // A waiting completion that is cancelled answers at once; a generating one stops at its next step.
    completion.controller.signal.addEventListener('abort', () => {
      if (entry.waiting.get(connection) !== completion) return;
      entry.waiting.delete(connection);
      completion.resolve(notRun(completion));
    });
    // Stale: the same window asked again. A waiting one answers at once and the new one takes its
    // place in the queue (the window keeps its turn); a generating one stops at its next step.
    if (previous && entry.waiting.get(connection) === previous) {
      entry.waiting.set(connection, completion);
      previous.resolve(notRun(previous));
      previous.controller.abort();
    } else {
      previous?.controller.abort();
      entry.waiting.set(connection, completion);
    }
    // A warm-up gives way to the first real request.
    if (entry.generating && !('connection' in entry.generating)) entry.generating.controller.abort();
    // So does a prefetch, of any window (a waiting one answers at once through its abort listener).
    if (!request.prefetch) {
      if (entry.generating && 'connection' in entry.generating && entry.generating.request.prefetch) entry.generating.controller.abort();
      for (const waiting of [...entry.waiting.values()]) if (waiting !== completion && waiting.request.prefetch) waiting.controller.abort();
    }
    serveNext(entry);
  });
}

/** Whether a real (not prefetch) completion waits or generates on any loaded models, and was not cancelled. */
export function realCompletionPending(loadedModels: Iterable<LoadedModels>): boolean {
  const real = (c: Completion) => !c.request.prefetch && !c.controller.signal.aborted;
  for (const entry of loadedModels) {
    if (entry.generating && 'connection' in entry.generating && real(entry.generating)) return true;
    for (const waiting of entry.waiting.values()) if (real(waiting)) return true;
  }
  return false;
}

/**
 * Queues a window's next-edit request on its models. Its newer request supersedes its older one
 * (waiting: answered at once; started: stopped at its next step), and a cancel stops only its own;
 * another window's never. It starts when no real completion waits and no other next-edit runs.
 */
export function enqueueNextEdit(connection: Connection, entry: LoadedModels, id: number, request: NextEditRequest, onEdit: NextEditJob['onEdit'], model?: string): Promise<NextEditResult> {
  return new Promise((resolve, reject) => {
    const previous = connection.nextEdit;
    const job: NextEditJob = { connection, id, request, model, controller: new AbortController(), onEdit, resolve, reject };
    const key = requestKey(connection, id);
    running.set(key, job.controller);
    connection.nextEdit = job;
    const settle = () => {
      running.delete(key);
      if (connection.nextEdit === job) connection.nextEdit = null;
    };
    job.resolve = (result) => (settle(), resolve(result));
    job.reject = (error) => (settle(), reject(error));
    const notRunNextEdit = (j: NextEditJob) => noNextEdit(j.request, 'cancelled', 'superseded or cancelled before it started');
    // A waiting one that is cancelled answers at once; a started one stops at its next step.
    job.controller.signal.addEventListener('abort', () => {
      if (entry.nextEditWaiting.get(connection) !== job) return;
      entry.nextEditWaiting.delete(connection);
      job.resolve(notRunNextEdit(job));
    });
    if (previous && entry.nextEditWaiting.get(connection) === previous) {
      // The window keeps its turn.
      entry.nextEditWaiting.set(connection, job);
      previous.resolve(notRunNextEdit(previous));
      previous.controller.abort();
    } else {
      previous?.controller.abort();
      entry.nextEditWaiting.set(connection, job);
    }
    // A warm-up gives way to it, as to the first completion.
    if (entry.generating && !('connection' in entry.generating)) entry.generating.controller.abort();
    serveNext(entry);
  });
}

/** Starts what comes next on these models: a waiting completion unless one generates, then a next-edit request. */
export function serveNext(entry: LoadedModels): void {
  serveNextCompletion(entry);
  serveNextEdit(entry);
}

/** Starts the next next-edit request, while no real completion waits and none is started. */
function serveNextEdit(entry: LoadedModels): void {
  if (entry.nextEditGenerating) return;
  for (const waiting of entry.waiting.values()) if (!waiting.request.prefetch) return;
  const next = entry.nextEditWaiting.values().next();
  if (next.done) return;
  const job = next.value;
  entry.nextEditWaiting.delete(job.connection);
  const session = entry.session;
  if (!session || job.connection.models !== entry) {
    job.reject(Object.assign(new Error('no model is loaded'), { code: 'not_loaded' }));
    serveNextEdit(entry);
    return;
  }
  entry.nextEditGenerating = job;
  const { connection } = job;
  // Counted as running only while it decodes: a completion that stops it counts instead (indexing slices wait for whichever runs).
  generations.running++;
  let segmentStart = performance.now();
  const park = () => {
    generations.running--;
    // Its stretch ended with its last evaluation (the completion may have started since).
    const ended = Math.max(segmentStart, session.gate.lastCallEndedAt);
    recordInterval(ended, ended - segmentStart);
  };
  const resume = () => {
    generations.running++;
    segmentStart = performance.now();
  };
  session.nextEdits
    .run(job.request, job.controller.signal, {
      speculation: connection.speculation,
      policy: connection.nextEditPolicy,
      owner: `${ownerPrefix(connection)}next edit`,
      onEdit: (edit, ms) => job.onEdit(edit, ms),
      onPark: park,
      onResume: resume,
      // The first request that names a next-edit file of its own loads it: parked meanwhile (completions run), and this window told the file.
      model: job.model,
      onNativeLoad: (file) => connection.send({ v: PROTOCOL_VERSION, type: 'modelLoading', file }),
    })
    .then(
      (result) => {
        recordInterval(performance.now(), performance.now() - segmentStart);
        job.resolve(result);
      },
      (error: Error) => job.reject(error),
    )
    .finally(() => {
      generations.running--;
      if (entry.nextEditGenerating === job) entry.nextEditGenerating = null;
      serveNext(entry);
    });
}

/** Starts the next waiting completion on these models, unless one generates: a real one before a prefetch. */
function serveNextCompletion(entry: LoadedModels): void {
  if (entry.generating) return;
  // A completion first, then alternatives, then a prefetch; the window that waited longest within each.
  const rank = (c: Completion) => (c.request.prefetch ? 2 : c.alternatives !== undefined ? 1 : 0);
  let completion: Completion | undefined;
  for (const waiting of entry.waiting.values()) if (!completion || rank(waiting) < rank(completion)) completion = waiting;
  if (!completion) return;
  entry.waiting.delete(completion.connection);
  const session = entry.session;
  if (!session || completion.connection.models !== entry) {
    completion.reject(Object.assign(new Error('no model is loaded'), { code: 'not_loaded' }));
    serveNextCompletion(entry);
    return;
  }
  entry.generating = completion;
  generations.running++;
  const { connection, request } = completion;
  // Each window decodes on its own KV sequence while the budget allows (alternatives and prefetches
  // too: they share the completion's prompt).
  const overrides = { speculation: connection.speculation, policy: connection.policy, owner: `${ownerPrefix(connection)}completion` };
  const signal = completion.controller.signal;
  const work: Promise<{ result: LocalCompletionResult | AlternativesResult; ms: number }> =
    completion.alternatives !== undefined
      ? session.alternatives(request, completion.alternatives, signal, overrides).then((result) => ({ result, ms: result.totalMs }))
      : session.complete(request, signal, overrides).then((result) => ({ result, ms: result.stats.totalMs }));
  work
    .then(
      ({ result, ms }) => {
        generations.completed++;
        recordInterval(performance.now(), ms);
        completion.resolve(result);
      },
      (error: Error) => completion.reject(error),
    )
    .finally(() => {
      generations.running--;
      if (entry.generating === completion) entry.generating = null;
      serveNext(entry);
    });
}

/**
 * A generation (or a stretch of a next-edit request between two stops for completions) just ended
 * after running `durationMs`: it overlapped every recent one that ended after it started. The handler resumes in a microtask after the decoder returns, so `endedAt` is its end.
 */
function recordInterval(endedAt: number, durationMs: number): void {
  const startedAt = endedAt - durationMs;
  // 1 ms of slack: the previous generation's end is stamped a microtask after it really ended.
  const overlapping = recentGenerationEnds.filter((end) => end > startedAt + 1).length;
  generations.maxConcurrent = Math.max(generations.maxConcurrent, overlapping + 1);
  recentGenerationEnds.push(endedAt);
  if (recentGenerationEnds.length > 16) recentGenerationEnds.shift();
}
