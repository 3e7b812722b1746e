// The worker's scheduler: one generation at a time on a loaded pair. Each window's newest request
// waits in the pair's queue (a newer one from the same window supersedes it), and the next to run is
// the newest request of the window that has waited longest; a prefetch yields to any real request;
// the warm-up after a load yields to the first. Each request decodes on its window's own KV sequence
// (InferenceSession's prompt-state owners), so taking turns costs no prompt re-evaluation.
import type { InferenceSession } from '../inference/inferenceSession';
import { type AlternativesResult, type CompletionRequest, emptySpeculationStats, type LocalCompletionResult, type SpeculationSettings } from '../shared/types';
import type { SpeculationPolicy } from '../speculation/policy';
import type { WorkerMessage, WorkerNotification } from './protocol';

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
  /** Its completion waiting or generating, if any: a newer one from the same window supersedes it. */
  completion: Completion | null;
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

/** Starts the next waiting completion on these models, unless one generates. */
export function serveNext(entry: LoadedModels): void {
  if (entry.generating) return;
  const next = entry.waiting.values().next();
  if (next.done) return;
  const completion = next.value;
  entry.waiting.delete(completion.connection);
  const session = entry.session;
  if (!session || completion.connection.models !== entry) {
    completion.reject(Object.assign(new Error('no model is loaded'), { code: 'not_loaded' }));
    serveNext(entry);
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
        recordGeneration(performance.now(), ms);
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
 * A generation just ended after running `durationMs`: it overlapped every recent one that ended after
 * it started. The handler resumes in a microtask after the decoder returns, so `endedAt` is its end.
 */
function recordGeneration(endedAt: number, durationMs: number): void {
  generations.completed++;
  const startedAt = endedAt - durationMs;
  // 1 ms of slack: the previous generation's end is stamped a microtask after it really ended.
  const overlapping = recentGenerationEnds.filter((end) => end > startedAt + 1).length;
  generations.maxConcurrent = Math.max(generations.maxConcurrent, overlapping + 1);
  recentGenerationEnds.push(endedAt);
  if (recentGenerationEnds.length > 16) recentGenerationEnds.shift();
}
