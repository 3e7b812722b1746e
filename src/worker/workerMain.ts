// Entry of the inference process. A native abort in llama.cpp ends this process, never the
// extension host; its clients restart it.
//
// It runs in one of two ways:
// - private: forked by one extension host, talking over Node's IPC channel; it exits when that
//   host goes away;
// - shared (DRAFTLINE_SHARED_SOCKET set): started detached by the first window, serving every
//   window of this user and extension build over a unix socket in a private directory
//   (sharedWorker.ts). Windows that load the same models share one loaded copy, so a second window
//   or a reloaded one is ready at once. It exits a while after its last client left.
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import { DEFAULT_SPECULATION, InferenceSession } from '../inference/inferenceSession';
import { getRuntime } from '../inference/llamaRuntime';
import { downloadModels } from '../inference/modelDownloader';
import { type AlternativesResult, type CompletionRequest, emptySpeculationStats, type LocalCompletionResult, type ModelSettings, type SpeculationSettings } from '../shared/types';
import { SpeculationPolicy } from '../speculation/policy';
import type { DownloadProgress } from '../models/downloadIndex';
import { PROTOCOL_VERSION, type ClientMessage, type WorkerMessage, type WorkerMethods, type WorkerNotification } from './protocol';
import { readFrames, writeFrame } from './frames';
import { connectSocket } from './sharedWorker';

/** Models loaded once for every client that asked for the same files with the same settings. */
interface LoadedModels {
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
interface Completion {
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
interface Connection {
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

const connections = new Set<Connection>();
const sharedSocket = process.env.DRAFTLINE_SHARED_SOCKET;
/** Serving every window (a shared worker) rather than the one that forked this process. */
const sharing = Boolean(sharedSocket);
const loadedModels = new Map<string, LoadedModels>();
let nextConnectionId = 1;
/** Completions waiting or generating, by connection-scoped request id (what a `cancel` names). */
const running = new Map<string, AbortController>();
/** Generations running now, over all loaded models (indexing slices give way to them). */
let generationsRunning = 0;
/** Downloads under way (apart from `running`: a new completion must not cancel them). */
const downloads = new Map<string, AbortController>();
/** Least time between two progress messages of one download (the downloader reports every chunk). */
const PROGRESS_INTERVAL_MS = 100;
let completions = 0;
/** End times (worker clock) of the latest generations, for maxConcurrentGenerations. */
const recentGenerationEnds: number[] = [];
let maxConcurrentGenerations = 0;

const requestKey = (connection: Connection, id: number) => `${connection.id}:${id}`;
/** Two windows may have the same file open, and each opens and closes it on its own. */
const documentKey = (connection: Connection, key: string) => `${connection.id}|${key}`;

/** Worker logs go to every client's log: they are about the one process they share. */
function log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void {
  for (const connection of connections) connection.send({ v: PROTOCOL_VERSION, type: 'log', level, message });
}

// Start the llama.cpp binding now, while the extension host is still sending the load request: it is
// the slowest part of a cold start (library import, then getLlama's binary test in a child process)
// and getRuntime keeps it for the load that follows (a different backend setting just loads anew).
const preloadGpu = process.env.DRAFTLINE_PRELOAD_GPU as ModelSettings['gpu'] | undefined;
if (preloadGpu) getRuntime({ gpu: preloadGpu }, 1, log).catch(() => undefined);

/** The same files (as they are now on disk) with the same settings: one loaded copy serves them all. */
function modelsKey(models: ModelSettings): string {
  const stamp = (file: string | null | undefined) => {
    if (!file) return null;
    try {
      const s = fs.statSync(file);
      return [s.size, s.mtimeMs];
    } catch {
      return null;
    }
  };
  // Where a window remembers flash-attention measurements (its VS Code profile's storage) does not
  // change the models: windows of different profiles still share one loaded copy.
  const { attentionMemoFile: _memo, ...loaded } = models;
  return JSON.stringify([loaded, stamp(models.targetModel), stamp(models.draftModel)]);
}

/**
 * The connection stops using its models; the last user's leaving unloads them, except in the shared
 * worker when the window went away (`keep`): a reloaded window comes back for them within seconds.
 * Such kept models go when other models are loaded, or with the worker when it idles out.
 */
function leaveModels(connection: Connection, keep = false): void {
  const entry = connection.models;
  connection.models = null;
  if (!entry) return;
  entry.users.delete(connection);
  // Its completion, waiting or generating, stops (a waiting one answers at once).
  connection.completion?.controller.abort();
  const session = entry.session;
  for (const key of connection.documents) session?.documents.removeDocument(key);
  if (entry.users.size > 0 || (keep && session)) return;
  unloadModels(entry);
}

function unloadModels(entry: LoadedModels): void {
  if (loadedModels.get(entry.key) === entry) loadedModels.delete(entry.key);
  const session = entry.session;
  // Stops indexing slices still under way for this index. A load still running is disposed when it ends.
  session?.documents.clear();
  session?.dispose().catch(() => undefined);
}

async function loadModels(connection: Connection, models: ModelSettings, speculation: WorkerMethods['load'][0]['speculation']) {
  const key = modelsKey(models);
  const existing = loadedModels.get(key);
  let entry: LoadedModels;
  let joined = false;
  // Models another window already loaded (or is loading) are shared. A client that reloads its own
  // models gets them afresh, as from a private worker (a reload is how a user starts clean).
  // Kept models nobody uses (a window that went away) are taken up by the next window that wants them.
  const kept = existing !== undefined && existing.users.size === 0 && existing.session !== null;
  if (existing && (kept || [...existing.users].some((u) => u !== connection))) {
    if (connection.models !== existing) leaveModels(connection);
    existing.users.add(connection);
    connection.models = existing;
    entry = existing;
    joined = true;
  } else {
    leaveModels(connection);
    // Kept models nobody came back for make room for these.
    for (const other of [...loadedModels.values()]) if (other.users.size === 0) unloadModels(other);
    entry = { key, session: null, loading: null, users: new Set([connection]), waiting: new Map(), generating: null };
    connection.models = entry;
    loadedModels.set(key, entry);
    // Each window waiting for these models is told which file llama.cpp reads: if the process ends
    // now, that file is the one to blame (the window's quarantine, backend/modelQuarantine.ts).
    const onNativeLoad = (file: string) => {
      for (const user of entry.users) user.send({ v: PROTOCOL_VERSION, type: 'modelLoading', file });
    };
    entry.loading = InferenceSession.load(models, { ...DEFAULT_SPECULATION, ...speculation }, log, onNativeLoad);
    entry.loading.then(
      (session) => {
        entry.session = session;
        entry.loading = null;
        // Everyone left while it loaded.
        if (entry.users.size === 0) session.dispose().catch(() => undefined);
        else warmUp(entry, session);
      },
      () => {
        entry.loading = null;
        if (loadedModels.get(key) === entry) loadedModels.delete(key);
      },
    );
  }
  const session = entry.session ?? (await entry.loading!);
  if (connection.models !== entry) throw Object.assign(new Error('superseded by another load'), { code: 'superseded' });
  // This window's settings, whoever loaded the models (a window that joins does not change the others').
  connection.speculation = { ...DEFAULT_SPECULATION, ...speculation };
  connection.policy = new SpeculationPolicy(connection.speculation);
  // Documents that arrived while loading go into the index now.
  for (const n of connection.pendingDocuments.splice(0)) applyNotification(connection, n);
  return joined ? { ...session.info, sharedWith: entry.users.size - 1 } : session.info;
}

/** DRAFTLINE_WARM_UP=0 leaves it out (the startup benchmark measures the first completion both ways). */
const WARM_UP = process.env.DRAFTLINE_WARM_UP !== '0';
let warmUps = 0;

/**
 * A short completion right after a load (InferenceSession.warmUp), so the user's first one is not
 * the slow first evaluation. It runs after the load's answer went out (the caller does not await
 * it) and is in `running` like any generation: a real request aborts it and goes first.
 */
function warmUp(entry: LoadedModels, session: InferenceSession): void {
  if (!WARM_UP || entry.generating) return;
  const controller = new AbortController();
  const key = `warm-up:${++warmUps}`;
  running.set(key, controller);
  const generation = { controller };
  entry.generating = generation;
  generationsRunning++;
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
        generationsRunning--;
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
function enqueueCompletion(connection: Connection, entry: LoadedModels, id: number, request: CompletionRequest, alternatives?: number): Promise<LocalCompletionResult | AlternativesResult> {
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
function realCompletionPending(): boolean {
  const real = (c: Completion) => !c.request.prefetch && !c.controller.signal.aborted;
  for (const entry of loadedModels.values()) {
    if (entry.generating && 'connection' in entry.generating && real(entry.generating)) return true;
    for (const waiting of entry.waiting.values()) if (real(waiting)) return true;
  }
  return false;
}

/** Starts the next waiting completion on these models, unless one generates. */
function serveNext(entry: LoadedModels): void {
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
  generationsRunning++;
  const { connection, request } = completion;
  const overrides = { speculation: connection.speculation, policy: connection.policy };
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
      generationsRunning--;
      if (entry.generating === completion) entry.generating = null;
      serveNext(entry);
    });
}

type Handler<M extends keyof WorkerMethods> = (params: WorkerMethods[M][0], id: number, connection: Connection) => Promise<WorkerMethods[M][1]>;

const handlers: { [M in keyof WorkerMethods]: Handler<M> } = {
  hello: async () => ({ protocol: PROTOCOL_VERSION, pid: process.pid }),
  load: async ({ models, speculation }, _id, connection) => loadModels(connection, models, speculation),
  complete: async ({ request }, id, connection) => {
    const current = requireSession(connection);
    // A prefetch (CompletionRequest.prefetch) yields to every real request, this window's or
    // another's: it does not start while one waits or runs (nor stop it), and a real request stops it
    // (enqueueCompletion). One already cancelled (the keystroke before) is only winding down: it does not count.
    if (request.prefetch && realCompletionPending()) throw Object.assign(new Error('a completion is running'), { code: 'busy' });
    const scoped = request.documentKey === undefined ? request : { ...request, documentKey: documentKey(connection, request.documentKey) };
    // The document being completed in counts as recently used; if the index dropped it for room,
    // its text comes again and it is indexed (dropping the least recently used one instead).
    if (request.documentKey && scoped.documentKey && current.documents.useDocument(scoped.documentKey) === 'evicted') {
      connection.send({ v: PROTOCOL_VERSION, type: 'resync', key: request.documentKey });
    }
    return enqueueCompletion(connection, connection.models!, id, scoped) as Promise<LocalCompletionResult>;
  },
  alternatives: async ({ request, count }, id, connection) => {
    requireSession(connection);
    // Asked by the user (cycling suggestions): a real request, never a prefetch.
    const real = { ...request, prefetch: false };
    const scoped = real.documentKey === undefined ? real : { ...real, documentKey: documentKey(connection, real.documentKey) };
    return enqueueCompletion(connection, connection.models!, id, scoped, Math.max(0, Math.floor(count))) as Promise<AlternativesResult>;
  },
  configure: async ({ speculation }, _id, connection) => {
    requireSession(connection);
    // This window's settings only; its policy holds the same object and sees the change at its next step.
    Object.assign(connection.speculation, speculation);
    return null;
  },
  unload: async (_params, _id, connection) => {
    leaveModels(connection);
    return null;
  },
  systemInfo: async () => {
    const llama = await getRuntime({ gpu: 'auto' }, 1, log);
    const vram = llama.gpu === false ? { total: 0, unifiedSize: 0 } : await llama.getVramState();
    return { backend: llama.gpu === false ? 'cpu' : llama.gpu, vramBytes: vram.total, ramBytes: os.totalmem(), unifiedMemory: vram.unifiedSize > 0 };
  },
  download: async ({ uris, dirPath, huggingFaceEndpoint }, id, connection) => {
    // Registered before the first await: a cancel that follows the request finds it.
    const controller = new AbortController();
    const key = requestKey(connection, id);
    downloads.set(key, controller);
    let sentAt = -Infinity;
    const onProgress = (progress: DownloadProgress) => {
      const now = performance.now();
      // Once the bytes are in, progress is the sha256 check's (every MiB): throttled like the download's.
      const done = progress.verifiedBytes ?? progress.downloadedBytes;
      const finished = progress.totalBytes > 0 && done >= progress.totalBytes;
      if (!finished && now - sentAt < PROGRESS_INTERVAL_MS) return;
      sentAt = now;
      connection.send({ v: PROTOCOL_VERSION, type: 'progress', id, progress });
    };
    try {
      // Fails with a DownloadError: its code ('cancelled' | 'failed' | 'invalid') goes back as the error code.
      return await downloadModels(uris, { dirPath, huggingFaceEndpoint, signal: controller.signal, onProgress });
    } finally {
      downloads.delete(key);
    }
  },
  diagnostics: async () => {
    const memory = process.memoryUsage();
    const sessions = [...loadedModels.values()].map((e) => e.session).filter((s): s is InferenceSession => s !== null);
    const stats = sessions.map((s) => s.documents.stats());
    return {
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      completions,
      maxConcurrentGenerations,
      index:
        stats.length === 0
          ? null
          : {
              documents: stats.reduce((n, s) => n + s.documents, 0),
              chars: stats.reduce((n, s) => n + s.indexedChars, 0),
              pending: stats.reduce((n, s) => n + s.pendingDocuments, 0),
              tokenizedChars: stats.reduce((n, s) => n + s.tokenizedChars, 0),
            },
      clients: connections.size,
      loadedModels: sessions.length,
    };
  },
  crash: async () => {
    if (process.env.DRAFTLINE_TEST_HOOKS !== '1') throw new Error('test hooks are disabled');
    process.abort();
  },
};

/**
 * A generation just ended after running `durationMs`: it overlapped every recent one that ended after
 * it started. The handler resumes in a microtask after the decoder returns, so `endedAt` is its end.
 */
function recordGeneration(endedAt: number, durationMs: number): void {
  completions++;
  const startedAt = endedAt - durationMs;
  // 1 ms of slack: the previous generation's end is stamped a microtask after it really ended.
  const overlapping = recentGenerationEnds.filter((end) => end > startedAt + 1).length;
  maxConcurrentGenerations = Math.max(maxConcurrentGenerations, overlapping + 1);
  recentGenerationEnds.push(endedAt);
  if (recentGenerationEnds.length > 16) recentGenerationEnds.shift();
}

/** Longest an indexing slice waits for a generation to end: under a typing storm one always runs. */
const MAX_INDEXING_WAIT_MS = 250;

/**
 * Between two slices of indexing a big document: other messages first, then a running generation
 * (each of its steps would otherwise wait for a slice), for a bounded time.
 */
async function betweenIndexingSlices(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  for (let waited = 0; generationsRunning > 0 && waited < MAX_INDEXING_WAIT_MS; waited += 10) {
    await new Promise<void>((resolve) => setTimeout(resolve, 10));
  }
}

function requireSession(connection: Connection): InferenceSession {
  const entry = connection.models;
  if (!entry?.session) throw Object.assign(new Error(entry?.loading ? 'models are still loading' : 'no model is loaded'), { code: 'not_loaded' });
  return entry.session;
}

function applyNotification(connection: Connection, n: WorkerNotification): void {
  if (n.kind === 'cancel') {
    running.get(requestKey(connection, n.id))?.abort();
    downloads.get(requestKey(connection, n.id))?.abort();
    return;
  }
  const session = connection.models?.session;
  if (!session) {
    const pending = connection.pendingDocuments;
    if (n.kind !== 'accepted') pending.push(n);
    if (pending.length > 1000) pending.shift();
    return;
  }
  const key = documentKey(connection, n.key);
  try {
    switch (n.kind) {
      case 'documentOpen':
        connection.documents.add(key);
        // In slices: a 2 MB file takes over a second to tokenize, which completions must not wait for.
        session.documents.setDocumentInSlices(key, n.text, betweenIndexingSlices).catch((error: Error) => log('warn', `n-gram index: ${error.message}`));
        break;
      case 'documentEdit':
        if (!session.documents.applyEdits(key, n.edits)) connection.send({ v: PROTOCOL_VERSION, type: 'resync', key: n.key });
        break;
      case 'documentClose':
        connection.documents.delete(key);
        session.documents.removeDocument(key);
        break;
      case 'accepted':
        session.addAccepted(key, n.text);
        break;
    }
  } catch (error) {
    log('warn', `n-gram index: ${(error as Error).message}`);
  }
}

function onClientMessage(connection: Connection, raw: ClientMessage): void {
  if (raw?.v !== PROTOCOL_VERSION) {
    if (raw && (raw as { type?: string }).type === 'request') {
      const id = (raw as { id: number }).id;
      connection.send({ v: PROTOCOL_VERSION, type: 'response', id, ok: false, error: { message: `protocol version ${String(raw.v)} is not ${PROTOCOL_VERSION}`, code: 'protocol' } });
    }
    return;
  }
  if (raw.type === 'notify') {
    applyNotification(connection, raw.notification);
    return;
  }
  const handler = handlers[raw.method] as Handler<keyof WorkerMethods> | undefined;
  if (!handler) {
    connection.send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: false, error: { message: `unknown method ${String(raw.method)}` } });
    return;
  }
  handler(raw.params as never, raw.id, connection).then(
    (result) => connection.send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: true, result }),
    (error: Error & { code?: string }) => connection.send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: false, error: { message: error?.message ?? String(error), code: error?.code } }),
  );
}

function openConnection(send: (message: WorkerMessage) => void): Connection {
  const speculation = { ...DEFAULT_SPECULATION };
  const connection: Connection = { id: nextConnectionId++, send, models: null, documents: new Set(), pendingDocuments: [], speculation, policy: new SpeculationPolicy(speculation), completion: null };
  connections.add(connection);
  return connection;
}

/** The client went away: its requests stop, its documents leave the index, its models unload if nobody else uses them. */
function closeConnection(connection: Connection): void {
  if (!connections.delete(connection)) return;
  for (const [key, controller] of [...running, ...downloads]) if (key.startsWith(`${connection.id}:`)) controller.abort();
  leaveModels(connection, sharing);
}

/** Private: one client, the extension host that forked this process. */
function serveParent(): void {
  const connection = openConnection((message) => process.send?.(message));
  process.on('message', (raw: ClientMessage) => onClientMessage(connection, raw));
  // The extension host went away: nothing left to serve.
  process.on('disconnect', () => process.exit(0));
}

/**
 * How long a shared worker with no client keeps its models loaded (a window reload comes back within
 * it): the draftline.sharedWorkerIdleMinutes of the window that started it; 0 exits with the last window.
 */
const SHARED_IDLE_MS = sharedIdleMs(process.env.DRAFTLINE_SHARED_IDLE_MS);

function sharedIdleMs(value: string | undefined): number {
  const ms = value === undefined || value.trim() === '' ? Number.NaN : Number(value);
  // Bounded as the setting is (at most a day); anything unreadable is the default.
  return Number.isFinite(ms) && ms >= 0 ? Math.min(ms, 24 * 60 * 60_000) : 10 * 60_000;
}

/** How long a shared worker waits for its first client however short its idle time. */
const FIRST_CLIENT_WAIT_MS = 30_000;

const MAX_UNREAD_LOG_BYTES = 8 * 1024 * 1024;

/** Whether something accepts connections on the socket. */
function answers(socketPath: string): Promise<boolean> {
  return connectSocket(socketPath).then(
    (socket) => (socket.destroy(), true),
    () => false,
  );
}

/** How long a new lock holder waits before it trusts the lock (see takeLock). */
const LOCK_SETTLE_MS = 200;

function ownsLock(lockDir: string): boolean {
  try {
    return fs.readFileSync(`${lockDir}/pid`, 'utf8') === String(process.pid);
  } catch {
    return false;
  }
}

/** A lock younger than this whose socket does not answer yet belongs to a worker still starting. */
const LOCK_STARTING_MS = 30_000;

/**
 * Only the holder of `<socket>.lock` (a directory: mkdir is atomic) listens, so two windows that
 * start a worker at once, or restart one after a crash, end up with one. A lock whose holder is gone
 * is moved aside by rename, which only one contender can do; the rest try again.
 */
async function takeLock(lockDir: string, socketPath: string): Promise<boolean> {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      fs.mkdirSync(lockDir, { mode: 0o700 });
      fs.writeFileSync(`${lockDir}/pid`, String(process.pid));
      // Another worker that found the dead holder's lock a moment before this one replaced it may
      // have moved this fresh lock aside as the stale one (it does so right after its check): look
      // again once that moment is surely over, and leave the place to it if so.
      await new Promise((resolve) => setTimeout(resolve, LOCK_SETTLE_MS));
      return ownsLock(lockDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder = Number.NaN;
    let age = 0;
    try {
      age = Date.now() - fs.statSync(lockDir).mtimeMs;
      holder = Number(fs.readFileSync(`${lockDir}/pid`, 'utf8'));
    } catch {}
    let holderAlive = false;
    try {
      if (Number.isInteger(holder) && holder > 0) {
        process.kill(holder, 0);
        holderAlive = true;
      }
    } catch {}
    // A holder that runs (or has not written its pid yet) serves or is about to; a pid that runs but
    // never answers after a long while is another process that got a dead worker's pid.
    if ((holderAlive || Number.isNaN(holder)) && (age < LOCK_STARTING_MS || (await answers(socketPath)))) return false;
    try {
      const aside = `${lockDir}.stale-${process.pid}`;
      fs.renameSync(lockDir, aside);
      fs.rmSync(aside, { recursive: true, force: true });
    } catch {}
  }
  return false;
}

/** Shared: every window of this user and build, over the socket sharedWorker.ts chose. */
async function serveSocket(socketPath: string): Promise<void> {
  const lockDir = `${socketPath}.lock`;
  // Another worker serves (or is starting): exit 0 tells the client that started this one to connect there.
  if (!(await takeLock(lockDir, socketPath))) process.exit(0);
  let idleTimer: NodeJS.Timeout | null = null;
  let served = false;
  const idle = () => {
    if (idleTimer) clearTimeout(idleTimer);
    if (connections.size > 0) served = true;
    // Before its first client the window that started it is still connecting (an idle time of 0 must not end it then).
    // After, it idles on only for models kept for a window that comes back: with none (a load that
    // failed, a window that moved to another pair's worker) it is a process nobody needs (issue #41).
    const wait = !served ? Math.max(SHARED_IDLE_MS, FIRST_CLIENT_WAIT_MS) : loadedModels.size > 0 ? SHARED_IDLE_MS : 0;
    idleTimer = connections.size > 0 ? null : setTimeout(() => shutDown(), wait);
  };
  const server = net.createServer((socket) => {
    const connection = openConnection((message) => {
      if (socket.destroyed) return;
      // A client that stopped reading (an extension host paused in a debugger) gets no more logs
      // than this, rather than the worker's memory filling up with them.
      if (message.type === 'log' && socket.writableLength > MAX_UNREAD_LOG_BYTES) return;
      writeFrame(socket, message);
    });
    idle();
    readFrames(
      socket,
      (raw) => onClientMessage(connection, raw as ClientMessage),
      (error) => {
        log('warn', `a client sent what is not a message (${error.message}); closing its connection`);
        socket.destroy();
      },
    );
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closeConnection(connection);
      idle();
    });
  });
  const shutDown = (force = false) => {
    // A window that connected just as the idle timer fired keeps it; a SIGTERM (start.sh's exit, the
    // user's kill) stops it whoever is connected: they see a crash and start a new one if they live on.
    if (connections.size > 0 && !force) return;
    server.close();
    // Only what is still this worker's: a successor may have replaced a lock it thought stale. Only
    // the lock's holder listens, so while it is ours, so is the socket.
    if (ownsLock(lockDir)) {
      fs.rmSync(socketPath, { force: true });
      fs.rmSync(lockDir, { recursive: true, force: true });
    }
    process.exit(0);
  };
  server.on('error', (error) => {
    console.error(`shared inference worker: cannot listen on ${socketPath}: ${error.message}`);
    fs.rmSync(lockDir, { recursive: true, force: true });
    process.exit(1);
  });
  server.on('listening', () => {
    fs.chmodSync(socketPath, 0o600);
    idle();
  });
  // Holding the lock, a socket file there is a dead worker's.
  fs.rmSync(socketPath, { force: true });
  server.listen(socketPath);
  process.on('SIGTERM', () => shutDown(true));
}

if (sharedSocket) {
  serveSocket(sharedSocket).catch((error: Error) => {
    console.error(`shared inference worker: ${error.message}`);
    process.exit(1);
  });
} else serveParent();
process.on('unhandledRejection', (reason) => log('error', `unhandled rejection: ${String((reason as Error)?.stack ?? reason)}`));
