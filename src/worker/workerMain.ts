// Entry of the inference child process. A native abort in llama.cpp ends this process, never the
// extension host; the client restarts it.
import * as os from 'node:os';
import { DEFAULT_SPECULATION, InferenceSession } from '../inference/inferenceSession';
import { getRuntime } from '../inference/llamaRuntime';
import { downloadModels } from '../inference/modelDownloader';
import type { ModelSettings } from '../shared/types';
import type { DownloadProgress } from '../models/downloadIndex';
import { PROTOCOL_VERSION, type ClientMessage, type WorkerMessage, type WorkerMethods, type WorkerNotification } from './protocol';

let session: InferenceSession | null = null;
let loading: Promise<InferenceSession> | null = null;
const running = new Map<number, AbortController>();
/** Downloads under way, by request id (apart from `running`: a new completion must not cancel them). */
const downloads = new Map<number, AbortController>();
/** Least time between two progress messages of one download (the downloader reports every chunk). */
const PROGRESS_INTERVAL_MS = 100;
let completions = 0;
/** End times (worker clock) of the latest generations, for maxConcurrentGenerations. */
const recentGenerationEnds: number[] = [];
let maxConcurrentGenerations = 0;
const pendingDocuments: WorkerNotification[] = [];

function send(message: WorkerMessage): void {
  process.send?.(message);
}

function log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void {
  send({ v: PROTOCOL_VERSION, type: 'log', level, message });
}

// Start the llama.cpp binding now, while the extension host is still sending the load request: it is
// the slowest part of a cold start (library import, then getLlama's binary test in a child process)
// and getRuntime keeps it for the load that follows (a different backend setting just loads anew).
const preloadGpu = process.env.DRAFTLINE_PRELOAD_GPU as ModelSettings['gpu'] | undefined;
if (preloadGpu) getRuntime({ gpu: preloadGpu }, 1, log).catch(() => undefined);

type Handler<M extends keyof WorkerMethods> = (params: WorkerMethods[M][0], id: number) => Promise<WorkerMethods[M][1]>;

const handlers: { [M in keyof WorkerMethods]: Handler<M> } = {
  hello: async () => ({ protocol: PROTOCOL_VERSION, pid: process.pid }),
  load: async ({ models, speculation }) => {
    const previous = session;
    session = null;
    // Stops indexing slices still under way for the old models' index.
    previous?.documents.clear();
    await previous?.dispose().catch(() => undefined);
    loading = InferenceSession.load(models, { ...DEFAULT_SPECULATION, ...speculation }, log);
    try {
      session = await loading;
    } finally {
      loading = null;
    }
    // Documents that arrived while loading go into the new index now.
    for (const n of pendingDocuments.splice(0)) applyNotification(n);
    return session.info;
  },
  complete: async ({ request }, id) => {
    const current = requireSession();
    // At most one generation in flight: a new request supersedes the running one.
    for (const controller of running.values()) controller.abort();
    const controller = new AbortController();
    running.set(id, controller);
    // The document being completed in counts as recently used; if the index dropped it for room,
    // its text comes again and it is indexed (dropping the least recently used one instead).
    if (request.documentKey && current.documents.useDocument(request.documentKey) === 'evicted') {
      send({ v: PROTOCOL_VERSION, type: 'resync', key: request.documentKey });
    }
    try {
      const result = await current.complete(request, controller.signal);
      recordGeneration(performance.now(), result.stats.totalMs);
      return result;
    } finally {
      running.delete(id);
    }
  },
  configure: async ({ speculation }) => {
    requireSession().configure(speculation);
    return null;
  },
  unload: async () => {
    const previous = session;
    session = null;
    await previous?.dispose();
    return null;
  },
  systemInfo: async () => {
    const llama = await getRuntime({ gpu: 'auto' }, 1, log);
    const vram = llama.gpu === false ? { total: 0, unifiedSize: 0 } : await llama.getVramState();
    return { backend: llama.gpu === false ? 'cpu' : llama.gpu, vramBytes: vram.total, ramBytes: os.totalmem(), unifiedMemory: vram.unifiedSize > 0 };
  },
  download: async ({ uris, dirPath, huggingFaceEndpoint }, id) => {
    // Registered before the first await: a cancel that follows the request finds it.
    const controller = new AbortController();
    downloads.set(id, controller);
    let sentAt = -Infinity;
    const onProgress = (progress: DownloadProgress) => {
      const now = performance.now();
      const finished = progress.totalBytes > 0 && progress.downloadedBytes >= progress.totalBytes;
      if (!finished && now - sentAt < PROGRESS_INTERVAL_MS) return;
      sentAt = now;
      send({ v: PROTOCOL_VERSION, type: 'progress', id, progress });
    };
    try {
      // Fails with a DownloadError: its code ('cancelled' | 'failed' | 'invalid') goes back as the error code.
      return await downloadModels(uris, { dirPath, huggingFaceEndpoint, signal: controller.signal, onProgress });
    } finally {
      downloads.delete(id);
    }
  },
  diagnostics: async () => {
    const memory = process.memoryUsage();
    const index = session?.documents.stats();
    return {
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      completions,
      maxConcurrentGenerations,
      index: index ? { documents: index.documents, chars: index.indexedChars, pending: index.pendingDocuments } : null,
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
  for (let waited = 0; running.size > 0 && waited < MAX_INDEXING_WAIT_MS; waited += 10) {
    await new Promise<void>((resolve) => setTimeout(resolve, 10));
  }
}

function requireSession(): InferenceSession {
  if (!session) throw Object.assign(new Error(loading ? 'models are still loading' : 'no model is loaded'), { code: 'not_loaded' });
  return session;
}

function applyNotification(n: WorkerNotification): void {
  if (n.kind === 'cancel') {
    running.get(n.id)?.abort();
    downloads.get(n.id)?.abort();
    return;
  }
  if (!session) {
    if (n.kind !== 'accepted') pendingDocuments.push(n);
    if (pendingDocuments.length > 1000) pendingDocuments.shift();
    return;
  }
  try {
    switch (n.kind) {
      case 'documentOpen':
        // In slices: a 2 MB file takes over a second to tokenize, which completions must not wait for.
        session.documents.setDocumentInSlices(n.key, n.text, betweenIndexingSlices).catch((error: Error) => log('warn', `n-gram index: ${error.message}`));
        break;
      case 'documentEdit':
        if (!session.documents.applyEdits(n.key, n.edits)) send({ v: PROTOCOL_VERSION, type: 'resync', key: n.key });
        break;
      case 'documentClose':
        session.documents.removeDocument(n.key);
        break;
      case 'accepted':
        session.addAccepted(n.key, n.text);
        break;
    }
  } catch (error) {
    log('warn', `n-gram index: ${(error as Error).message}`);
  }
}

process.on('message', (raw: ClientMessage) => {
  if (raw?.v !== PROTOCOL_VERSION) {
    if (raw && (raw as { type?: string }).type === 'request') {
      const id = (raw as { id: number }).id;
      send({ v: PROTOCOL_VERSION, type: 'response', id, ok: false, error: { message: `protocol version ${String(raw.v)} is not ${PROTOCOL_VERSION}`, code: 'protocol' } });
    }
    return;
  }
  if (raw.type === 'notify') {
    applyNotification(raw.notification);
    return;
  }
  const handler = handlers[raw.method] as Handler<keyof WorkerMethods> | undefined;
  if (!handler) {
    send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: false, error: { message: `unknown method ${String(raw.method)}` } });
    return;
  }
  handler(raw.params as never, raw.id).then(
    (result) => send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: true, result }),
    (error: Error & { code?: string }) => send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: false, error: { message: error?.message ?? String(error), code: error?.code } }),
  );
});

// The extension host went away: nothing left to serve.
process.on('disconnect', () => process.exit(0));
process.on('unhandledRejection', (reason) => log('error', `unhandled rejection: ${String((reason as Error)?.stack ?? reason)}`));
