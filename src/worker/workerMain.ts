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
import * as os from 'node:os';
import { DEFAULT_SPECULATION, InferenceSession, replaysGraphs } from '../inference/inferenceSession';
import { getRuntime } from '../inference/llamaRuntime';
import { downloadModels } from '../inference/modelDownloader';
import type { AlternativesResult, LocalCompletionResult } from '../shared/completion';
import type { ModelSettings } from '../shared/settings';
import type { TextReplacement } from '../nextEdit/types';
import { SpeculationPolicy } from '../speculation/policy';
import type { DownloadProgress } from '../models/downloadIndex';
import { diagnosticsFor } from './diagnostics';
import { PROTOCOL_VERSION, type ClientMessage, type WorkerMessage, type WorkerMethods, type WorkerNotification } from './protocol';
import { serveSocket } from './socketServer';
import { type Connection, emptyLanes, type LoadedModels, ownerPrefix, requestKey, Scheduler } from './scheduler';

/** Least time between two progress messages of one download (the downloader reports every chunk). */
const PROGRESS_INTERVAL_MS = 100;
/** Two windows may have the same file open, and each opens and closes it on its own. */
const documentKey = (connection: Connection, key: string) => `${connection.id}|${key}`;
/** Longest an indexing slice waits for a generation to end: under a typing storm one always runs. */
const MAX_INDEXING_WAIT_MS = 250;

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

type Handler<M extends keyof WorkerMethods> = (params: WorkerMethods[M][0], id: number, connection: Connection) => Promise<WorkerMethods[M][1]>;

/**
 * The worker process's state and what it does with it: its clients, the models they loaded, their
 * downloads and the scheduler. One is made when the process starts; nothing of it lives at module level.
 */
class WorkerProcess {
  readonly connections = new Set<Connection>();
  readonly loadedModels = new Map<string, LoadedModels>();
  /** Who runs next on every loaded pair. */
  readonly scheduler = new Scheduler(
    () => this.loadedModels.values(),
    (level, message) => this.log(level, message),
  );
  private nextConnectionId = 1;
  /** Downloads under way (apart from the scheduler's requests: a new completion must not cancel them). */
  private readonly downloads = new Map<string, AbortController>();

  /** Serving every window (a shared worker) rather than the one that forked this process. */
  constructor(private readonly sharing: boolean) {}

  /** Worker logs go to every client's log: they are about the one process they share. */
  readonly log = (level: 'debug' | 'info' | 'warn' | 'error', message: string): void => {
    for (const connection of this.connections) connection.send({ v: PROTOCOL_VERSION, type: 'log', level, message });
  };

  /**
   * The connection stops using its models; the last user's leaving unloads them, except in the shared
   * worker when the window went away (`keep`): a reloaded window comes back for them within seconds.
   * Such kept models go when other models are loaded, or with the worker when it idles out.
   */
  private leaveModels(connection: Connection, keep = false): void {
    const entry = connection.models;
    connection.models = null;
    if (!entry) return;
    entry.users.delete(connection);
    // Its completion and next-edit request, waiting or generating, stop (a waiting one answers at once).
    connection.jobs.completion?.controller.abort();
    connection.jobs.nextEdit?.controller.abort();
    const session = entry.session;
    for (const key of connection.documents) session?.documents.removeDocument(key);
    // Its KV sequences go to whoever asks next (their caches stay: a reloaded window's prompt reuses them).
    session?.releaseOwners((owner) => owner.startsWith(ownerPrefix(connection)));
    if (entry.users.size > 0 || (keep && session)) return;
    this.unloadModels(entry);
  }

  private unloadModels(entry: LoadedModels): void {
    if (this.loadedModels.get(entry.key) === entry) this.loadedModels.delete(entry.key);
    const session = entry.session;
    // Stops indexing slices still under way for this index. A load still running is disposed when it ends.
    session?.documents.clear();
    session?.dispose().catch(() => undefined);
  }

  private async loadModels(connection: Connection, models: ModelSettings, speculation: WorkerMethods['load'][0]['speculation']) {
    const key = modelsKey(models);
    const existing = this.loadedModels.get(key);
    let entry: LoadedModels;
    let joined = false;
    // Models another window already loaded (or is loading) are shared. A client that reloads its own
    // models gets them afresh, as from a private worker (a reload is how a user starts clean).
    // Kept models nobody uses (a window that went away) are taken up by the next window that wants them.
    const kept = existing !== undefined && existing.users.size === 0 && existing.session !== null;
    if (existing && (kept || [...existing.users].some((u) => u !== connection))) {
      if (connection.models !== existing) this.leaveModels(connection);
      existing.users.add(connection);
      connection.models = existing;
      entry = existing;
      joined = true;
    } else {
      this.leaveModels(connection);
      // Kept models nobody came back for make room for these.
      for (const other of [...this.loadedModels.values()]) if (other.users.size === 0) this.unloadModels(other);
      entry = { key, session: null, loading: null, users: new Set([connection]), lanes: emptyLanes() };
      connection.models = entry;
      this.loadedModels.set(key, entry);
      // Each window waiting for these models is told which file llama.cpp reads: if the process ends
      // now, that file is the one to blame (the window's quarantine, backend/modelQuarantine.ts).
      const onNativeLoad = (file: string) => {
        for (const user of entry.users) user.send({ v: PROTOCOL_VERSION, type: 'modelLoading', file });
      };
      entry.loading = InferenceSession.load(models, { ...DEFAULT_SPECULATION, ...speculation }, this.log, onNativeLoad);
      entry.loading.then(
        (session) => {
          entry.session = session;
          entry.loading = null;
          // Everyone left while it loaded.
          if (entry.users.size === 0) session.dispose().catch(() => undefined);
          else this.scheduler.warmUp(entry, session);
        },
        () => {
          entry.loading = null;
          if (this.loadedModels.get(key) === entry) this.loadedModels.delete(key);
        },
      );
    }
    const session = entry.session ?? (await entry.loading!);
    if (connection.models !== entry) throw Object.assign(new Error('superseded by another load'), { code: 'superseded' });
    // This window's settings, whoever loaded the models (a window that joins does not change the others').
    connection.speculation = { ...DEFAULT_SPECULATION, ...speculation, graphReplay: replaysGraphs(session.info) };
    connection.policy = new SpeculationPolicy(connection.speculation);
    connection.nextEditPolicy = new SpeculationPolicy(connection.speculation);
    // Documents that arrived while loading go into the index now.
    for (const n of connection.pendingDocuments.splice(0)) this.applyNotification(connection, n);
    return joined ? { ...session.info, sharedWith: entry.users.size - 1 } : session.info;
  }

  /**
   * Between two slices of indexing a big document: other messages first, then a running generation
   * (each of its steps would otherwise wait for a slice), for a bounded time.
   */
  private readonly betweenIndexingSlices = async (): Promise<void> => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    for (let waited = 0; this.scheduler.generations.running > 0 && waited < MAX_INDEXING_WAIT_MS; waited += 10) {
      await new Promise<void>((resolve) => setTimeout(resolve, 10));
    }
  };

  private applyNotification(connection: Connection, n: WorkerNotification): void {
    if (n.kind === 'cancel') {
      this.scheduler.cancel(connection, n.id);
      this.downloads.get(requestKey(connection, n.id))?.abort();
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
          // In slices: a large file takes seconds to tokenize, which completions must not wait for.
          session.documents.setDocumentInSlices(key, n.text, this.betweenIndexingSlices).catch((error: Error) => this.log('warn', `n-gram index: ${error.message}`));
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
      this.log('warn', `n-gram index: ${(error as Error).message}`);
    }
  }

  onClientMessage(connection: Connection, raw: ClientMessage): void {
    if (raw?.v !== PROTOCOL_VERSION) {
      if (raw && (raw as { type?: string }).type === 'request') {
        const id = (raw as { id: number }).id;
        connection.send({ v: PROTOCOL_VERSION, type: 'response', id, ok: false, error: { message: `protocol version ${String(raw.v)} is not ${PROTOCOL_VERSION}`, code: 'protocol' } });
      }
      return;
    }
    if (raw.type === 'notify') {
      this.applyNotification(connection, raw.notification);
      return;
    }
    const handler = this.handlers[raw.method] as Handler<keyof WorkerMethods> | undefined;
    if (!handler) {
      connection.send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: false, error: { message: `unknown method ${String(raw.method)}` } });
      return;
    }
    handler(raw.params as never, raw.id, connection).then(
      (result) => connection.send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: true, result }),
      (error: Error & { code?: string }) => connection.send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: false, error: { message: error?.message ?? String(error), code: error?.code } }),
    );
  }

  openConnection(send: (message: WorkerMessage) => void): Connection {
    const speculation = { ...DEFAULT_SPECULATION };
    const connection: Connection = {
      id: this.nextConnectionId++,
      send,
      models: null,
      documents: new Set(),
      pendingDocuments: [],
      speculation,
      policy: new SpeculationPolicy(speculation),
      nextEditPolicy: new SpeculationPolicy(speculation),
      jobs: { completion: null, nextEdit: null },
    };
    this.connections.add(connection);
    return connection;
  }

  /** The client went away: its requests stop, its documents leave the index, its models unload if nobody else uses them. */
  closeConnection(connection: Connection): void {
    if (!this.connections.delete(connection)) return;
    this.scheduler.cancelAll(connection);
    for (const [key, controller] of this.downloads) if (key.startsWith(`${connection.id}:`)) controller.abort();
    this.leaveModels(connection, this.sharing);
  }

  /** What each request method does. */
  private readonly handlers: { [M in keyof WorkerMethods]: Handler<M> } = {
    hello: async () => ({ protocol: PROTOCOL_VERSION, pid: process.pid }),
    load: async ({ models, speculation }, _id, connection) => this.loadModels(connection, models, speculation),
    complete: async ({ request }, id, connection) => {
      const current = requireSession(connection);
      const scoped = request.documentKey === undefined ? request : { ...request, documentKey: documentKey(connection, request.documentKey) };
      // Queued, or refused at once: a prefetch (CompletionRequest.prefetch) is `busy` while a real request is pending (the this.scheduler's priority rule).
      const answer = this.scheduler.enqueueCompletion(connection, connection.models!, id, scoped) as Promise<LocalCompletionResult>;
      // The document being completed in counts as recently used; if the index dropped it for room,
      // its text comes again and it is indexed (dropping the least recently used one instead).
      if (request.documentKey && scoped.documentKey && current.documents.useDocument(scoped.documentKey) === 'evicted') {
        connection.send({ v: PROTOCOL_VERSION, type: 'resync', key: request.documentKey });
      }
      return answer;
    },
    alternatives: async ({ request, count }, id, connection) => {
      requireSession(connection);
      // Asked by the user (cycling suggestions): a real request, never a prefetch.
      const real = { ...request, prefetch: false };
      const scoped = real.documentKey === undefined ? real : { ...real, documentKey: documentKey(connection, real.documentKey) };
      return this.scheduler.enqueueCompletion(connection, connection.models!, id, scoped, Math.max(0, Math.floor(count))) as Promise<AlternativesResult>;
    },
    nextEdit: async ({ request, model }, id, connection) => {
      const current = requireSession(connection);
      const scoped = request.documentKey === undefined ? request : { ...request, documentKey: documentKey(connection, request.documentKey) };
      if (request.documentKey && scoped.documentKey && current.documents.useDocument(scoped.documentKey) === 'evicted') {
        connection.send({ v: PROTOCOL_VERSION, type: 'resync', key: request.documentKey });
      }
      // Each final edit goes out at once: the editor may show it while the rest of the window decodes.
      const onEdit = (edit: TextReplacement, ms: number) => connection.send({ v: PROTOCOL_VERSION, type: 'nextEditPartial', id, edit, ms });
      return this.scheduler.enqueueNextEdit(connection, connection.models!, id, scoped, onEdit, model);
    },
    configure: async ({ speculation }, _id, connection) => {
      requireSession(connection);
      // This window's settings only; its policy holds the same object and sees the change at its next step.
      Object.assign(connection.speculation, speculation);
      return null;
    },
    unload: async (_params, _id, connection) => {
      this.leaveModels(connection);
      return null;
    },
    systemInfo: async () => {
      const llama = await getRuntime({ gpu: 'auto' }, 1, this.log);
      const vram = llama.gpu === false ? { total: 0, unifiedSize: 0 } : await llama.getVramState();
      return { backend: llama.gpu === false ? 'cpu' : llama.gpu, vramBytes: vram.total, ramBytes: os.totalmem(), unifiedMemory: vram.unifiedSize > 0 };
    },
    download: async ({ uris, dirPath, huggingFaceEndpoint, proxy }, id, connection) => {
      // Registered before the first await: a cancel that follows the request finds it.
      const controller = new AbortController();
      const key = requestKey(connection, id);
      this.downloads.set(key, controller);
      let sentAt = -Infinity;
      const onProgress = (progress: DownloadProgress) => {
        const now = performance.now();
        // Once the bytes are in, progress is the sha256 check's (every MiB): throttled like the download's.
        const done = progress.verifiedBytes ?? progress.downloadedBytes;
        const finished = progress.totalBytes > 0 && done >= progress.totalBytes;
        // A note (waiting, retrying) always goes: each says something new.
        if (!finished && progress.note === undefined && now - sentAt < PROGRESS_INTERVAL_MS) return;
        sentAt = now;
        connection.send({ v: PROTOCOL_VERSION, type: 'progress', id, progress });
      };
      try {
        // Fails with a DownloadError: its code ('cancelled' | 'failed' | 'invalid') goes back as the error code.
        return await downloadModels(uris, { dirPath, huggingFaceEndpoint, proxy, signal: controller.signal, onProgress });
      } finally {
        this.downloads.delete(key);
      }
    },
    diagnostics: async (_params, _id, connection) =>
      diagnosticsFor(connection, {
        sessions: [...this.loadedModels.values()].map((e) => e.session).filter((s): s is InferenceSession => s !== null),
        generations: this.scheduler.generations,
        clients: this.connections.size,
      }),
    crash: async () => {
      if (process.env.DRAFTLINE_TEST_HOOKS !== '1') throw new Error('test hooks are disabled');
      process.abort();
    },
  };
}

function requireSession(connection: Connection): InferenceSession {
  const entry = connection.models;
  if (!entry?.session) throw Object.assign(new Error(entry?.loading ? 'models are still loading' : 'no model is loaded'), { code: 'not_loaded' });
  return entry.session;
}

/** Private: one client, the extension host that forked this process. */
function serveParent(worker: WorkerProcess): void {
  const connection = worker.openConnection((message) => process.send?.(message));
  process.on('message', (raw: ClientMessage) => worker.onClientMessage(connection, raw));
  // The extension host went away: nothing left to serve.
  process.on('disconnect', () => process.exit(0));
}

function main(): void {
  const sharedSocket = process.env.DRAFTLINE_SHARED_SOCKET;
  const worker = new WorkerProcess(Boolean(sharedSocket));
  const { log } = worker;
  // Start the llama.cpp binding now, while the extension host is still sending the load request: it is
  // the slowest part of a cold start (library import, then getLlama's binary test in a child process)
  // and getRuntime keeps it for the load that follows (a different backend setting just loads anew).
  const preloadGpu = process.env.DRAFTLINE_PRELOAD_GPU as ModelSettings['gpu'] | undefined;
  if (preloadGpu) getRuntime({ gpu: preloadGpu }, 1, log).catch(() => undefined);
  if (sharedSocket) {
    serveSocket(sharedSocket, {
      open: (send) => worker.openConnection(send),
      onMessage: (connection, raw) => worker.onClientMessage(connection, raw),
      close: (connection) => worker.closeConnection(connection),
      clients: () => worker.connections.size,
      modelsLoaded: () => worker.loadedModels.size > 0,
      log,
    }).catch((error: Error) => {
      console.error(`shared inference worker: ${error.message}`);
      process.exit(1);
    });
  } else serveParent(worker);
  process.on('unhandledRejection', (reason) => log('error', `unhandled rejection: ${String((reason as Error)?.stack ?? reason)}`));
}

main();
