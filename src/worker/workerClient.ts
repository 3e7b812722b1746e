import type { DownloadProgress } from '../models/downloadIndex';
import type { TextReplacement } from '../nextEdit/types';
import { PROTOCOL_VERSION, type WorkerMessage, type WorkerMethods, type WorkerNotification } from './protocol';
import { connectSharedWorker, type SharedWorkerAddress } from './sharedWorker';
import { type Channel, type ChannelEvents, forkChannel, socketChannel } from './workerChannels';

export interface WorkerClientOptions {
  /** The bundled worker script (dist/worker.js). */
  workerPath: string;
  env?: NodeJS.ProcessEnv;
  log?: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
  /**
   * Called when the worker died unexpectedly; `restartInMs` is the backoff before the next start (it
   * doubles with each crash in a row, see restartStatus for the time left).
   */
  onCrash?: (description: string, restartInMs: number, crashesInARow: number, during: CrashContext) => void;
  /** Called after a restart, once the new worker answers (reload models here). */
  onRestart?: () => void;
  /** The worker asks for a document's full text again. */
  onResync?: (key: string) => void;
  requestTimeoutMs?: Partial<Record<keyof WorkerMethods, number>>;
  backoff?: { initialMs: number; maxMs: number; stableAfterMs: number };
  /**
   * Use the worker all windows share (started if none runs) instead of a private child process:
   * models another window loaded are ready at once. Its end looks like a crash to every client.
   */
  shared?: SharedWorkerAddress;
}

/** What this client had the worker do when it ended (for the model quarantine). */
export interface CrashContext {
  /** Its requests still unanswered, by method (a 'load' or 'complete' in flight ran native code for it). */
  pending: (keyof WorkerMethods)[];
  /** The model file llama.cpp was reading for a pending load (the worker's last `modelLoading`), if any. */
  loadingFile: string | null;
  /** The worker that ended (its pid from the handshake), if it answered one. */
  workerPid: number | undefined;
}

/** A restart scheduled after a crash. */
export interface RestartStatus {
  /** How the worker ended. */
  description: string;
  remainingMs: number;
  crashesInARow: number;
}

export class WorkerError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

interface Pending {
  method: keyof WorkerMethods;
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
  onProgress?: (progress: DownloadProgress) => void;
  onEdit?: (edit: TextReplacement, ms: number) => void;
}

/** What a request's messages before its answer go to: a download's progress, a next-edit request's final edits. */
export interface RequestCallbacks {
  onProgress?: (progress: DownloadProgress) => void;
  /** A final edit of a `nextEdit` request, as soon as the worker has it; `ms` from the request's start there. */
  onEdit?: (edit: TextReplacement, ms: number) => void;
}

const DEFAULT_TIMEOUTS: Record<keyof WorkerMethods, number> = {
  hello: 20_000,
  load: 10 * 60_000,
  complete: 120_000,
  // Two or three completions' worth, on the same models.
  alternatives: 180_000,
  // A window of ~20 lines rewritten: a few hundred tokens, after any completions.
  nextEdit: 120_000,
  configure: 10_000,
  unload: 30_000,
  systemInfo: 60_000,
  // A multi-GB model pair on a slow line takes hours; a cancel (or a worker crash) ends it sooner.
  download: 24 * 60 * 60_000,
  diagnostics: 10_000,
  crash: 10_000,
};

/**
 * Talks to the inference worker over IPC: typed requests, cancellation, and restart with backoff
 * when the process dies (a native abort in llama.cpp ends the worker, never the extension host).
 */
export class WorkerClient {
  private channel: Channel | null = null;
  /** The file the worker said it was reading for a load (`modelLoading`), until that load answers. */
  private loadingFile: string | null = null;
  /** The worker's own pid, from its hello (the shared worker is no child of this process). */
  private workerPid: number | undefined;
  private ready: Promise<void> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private disposed = false;
  private crashes = 0;
  private startedAt = 0;
  private restart: { timer: NodeJS.Timeout; at: number; description: string } | null = null;
  /** Count of worker processes started, for tests and the log. */
  starts = 0;
  /** The shared worker this client uses now (useSharedWorker moves it), undefined for a private one. */
  private sharedAddress: SharedWorkerAddress | undefined;

  constructor(private readonly options: WorkerClientOptions) {
    this.sharedAddress = options.shared;
  }

  /** The shared worker's address this client connects to (undefined: a private worker). */
  get shared(): SharedWorkerAddress | undefined {
    return this.sharedAddress;
  }

  /**
   * Moves a shared-worker client to the worker at `address` (another model pair's, see
   * sharedWorker.ts isolatedAddress): the models it loaded where it is now are unloaded there (other
   * windows may still use them), its connection closes, and the next request connects to `address`.
   * Requests still waiting on the old worker fail ('moved'). Nothing happens for the same address or
   * a private worker.
   */
  async useSharedWorker(address: SharedWorkerAddress): Promise<void> {
    if (!this.sharedAddress || this.sharedAddress.socketPath === address.socketPath) return;
    this.sharedAddress = address;
    const ready = this.ready;
    const channel = this.channel;
    if (!ready || !channel) return;
    // Not kept for a window that comes back (as a closed connection's are): this window went elsewhere.
    // Only on the connection it was loaded through (request() would otherwise open one to `address`).
    await ready.then(() => (this.channel === channel ? this.request('unload', {}) : undefined)).catch(() => undefined);
    if (this.channel !== channel) return;
    this.channel = null;
    this.ready = null;
    this.failAll(new WorkerError('the window moved to another model pair’s inference worker', 'moved'));
    channel.close();
  }

  get pid(): number | undefined {
    return this.channel ? this.workerPid : undefined;
  }

  /**
   * Starts the worker if it is not running; resolves when it answered the handshake. During the
   * backoff after a crash it is refused ('restarting'): the restart happens when the wait is over,
   * not at the next request.
   */
  start(): Promise<void> {
    if (this.disposed) return Promise.reject(new WorkerError('worker client is disposed', 'disposed'));
    const restart = this.restartStatus();
    if (restart) {
      return Promise.reject(new WorkerError(`${restart.description}; restarting in ${Math.ceil(restart.remainingMs / 1000)} s`, 'restarting'));
    }
    this.ready ??= this.spawn();
    return this.ready;
  }

  /** The restart scheduled after a crash, while it waits; null when none is. */
  restartStatus(): RestartStatus | null {
    if (!this.restart) return null;
    return { description: this.restart.description, remainingMs: Math.max(0, this.restart.at - Date.now()), crashesInARow: this.crashes };
  }

  /**
   * Sends a request, starting the worker first if it is not running (the handshake itself goes out on
   * the channel spawn() just opened); `signal` cancels it in the worker (which still answers, e.g. a
   * partial completion or a 'cancelled' error), and the callbacks get the messages that come before its
   * answer: a download's progress (`onProgress`, or `callbacks` itself), a next edit's final edits
   * (`onEdit`; the result holds them all, and a cancel is answered with noSuggestion 'cancelled').
   */
  async request<M extends keyof WorkerMethods>(
    method: M,
    params: WorkerMethods[M][0],
    signal?: AbortSignal,
    callbacks?: ((progress: DownloadProgress) => void) | RequestCallbacks,
  ): Promise<WorkerMethods[M][1]> {
    await this.start();
    return this.exchange(method, params, signal, callbacks);
  }

  /** A request on the channel as it is (the handshake goes out on the one spawn() just opened). */
  private exchange<M extends keyof WorkerMethods>(
    method: M,
    params: WorkerMethods[M][0],
    signal?: AbortSignal,
    callbacks?: ((progress: DownloadProgress) => void) | RequestCallbacks,
  ): Promise<WorkerMethods[M][1]> {
    const listeners = typeof callbacks === 'function' ? { onProgress: callbacks } : callbacks;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timeoutMs = this.options.requestTimeoutMs?.[method] ?? DEFAULT_TIMEOUTS[method];
      const cancel = () => this.notify({ kind: 'cancel', id });
      const settled = () => signal?.removeEventListener('abort', cancel);
      const timer = setTimeout(() => {
        this.pending.delete(id);
        settled();
        // The worker stops what nobody waits for any more (a download would go on for hours).
        cancel();
        reject(new WorkerError(`worker did not answer ${method} within ${Math.round(timeoutMs / 1000)} s`, 'timeout'));
      }, timeoutMs);
      this.pending.set(id, {
        method,
        resolve: (value) => (settled(), resolve(value as WorkerMethods[M][1])),
        reject: (error) => (settled(), reject(error)),
        timer,
        ...listeners,
      });
      if (!this.channel?.send({ v: PROTOCOL_VERSION, type: 'request', id, method, params })) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new WorkerError('worker is not running', 'not_running'));
        return;
      }
      // After the request, so that the worker knows the id a cancel names (messages arrive in order).
      if (signal) {
        if (signal.aborted) cancel();
        else signal.addEventListener('abort', cancel, { once: true });
      }
    });
  }

  notify(notification: WorkerNotification): void {
    this.channel?.send({ v: PROTOCOL_VERSION, type: 'notify', notification });
  }

  dispose(): void {
    this.disposed = true;
    if (this.restart) clearTimeout(this.restart.timer);
    this.restart = null;
    this.failAll(new WorkerError('worker stopped', 'disposed'));
    const channel = this.channel;
    this.channel = null;
    channel?.close();
  }

  private async spawn(): Promise<void> {
    const shared = this.sharedAddress;
    let started = true;
    this.workerPid = undefined;
    try {
      if (shared) {
        const connection = await connectSharedWorker({ workerPath: this.options.workerPath, address: shared, env: this.options.env ?? {}, timeoutMs: DEFAULT_TIMEOUTS.hello });
        if (this.disposed) {
          connection.socket.destroy();
          throw new WorkerError('worker client is disposed', 'disposed');
        }
        started = connection.started;
        this.channel = socketChannel(connection.socket, shared, this.channelEvents, (channel) => (this.channel === channel ? this.workerPid : undefined));
      } else {
        this.channel = forkChannel(this.options.workerPath, this.options.env, this.channelEvents);
      }
      this.starts++;
      this.startedAt = Date.now();
      const hello = await this.exchange('hello', {});
      if (hello.protocol !== PROTOCOL_VERSION) throw new WorkerError(`worker speaks protocol ${hello.protocol}, expected ${PROTOCOL_VERSION}`, 'protocol');
      this.workerPid = hello.pid;
      const how = !shared ? 'inference worker started' : started ? 'shared inference worker started' : 'connected to the shared inference worker';
      this.options.log?.('info', `${how} (pid ${hello.pid})`);
    } catch (error) {
      // Nothing half-open stays behind (a connection kept open would keep a shared worker from idling out).
      const channel = this.channel;
      this.channel = null;
      channel?.close();
      this.ready = null;
      throw error;
    }
  }

  /** Where the channels deliver the worker's messages and its end. */
  private get channelEvents(): ChannelEvents {
    return { onMessage: (message) => this.onMessage(message), onExit: (channel, description) => this.onExit(channel, description), log: this.options.log };
  }

  private onMessage(message: WorkerMessage): void {
    if (message?.v !== PROTOCOL_VERSION) return;
    if (message.type === 'log') {
      this.options.log?.(message.level, message.message);
      return;
    }
    if (message.type === 'modelLoading') {
      this.loadingFile = message.file;
      return;
    }
    if (message.type === 'resync') {
      this.options.onResync?.(message.key);
      return;
    }
    if (message.type === 'progress') {
      try {
        this.pending.get(message.id)?.onProgress?.(message.progress);
      } catch (error) {
        this.options.log?.('warn', `progress callback failed: ${(error as Error).message}`);
      }
      return;
    }
    if (message.type === 'nextEditPartial') {
      try {
        this.pending.get(message.id)?.onEdit?.(message.edit, message.ms);
      } catch (error) {
        this.options.log?.('warn', `next-edit callback failed: ${(error as Error).message}`);
      }
      return;
    }
    const pending = this.pending.get(message.id);
    if (!pending) return;
    this.pending.delete(message.id);
    clearTimeout(pending.timer);
    // A next-edit request may load the next-edit model (its `modelLoading` came to this window only).
    if (pending.method === 'load' || pending.method === 'nextEdit') this.loadingFile = null;
    if (message.ok) pending.resolve(message.result);
    else pending.reject(new WorkerError(message.error.message, message.error.code));
  }

  /** The worker ended (`channel` is the one that ended), or a restart failed (null): back off, then start again. */
  private onExit(channel: Channel | null, description: string): void {
    if (channel && this.channel !== channel) return;
    this.channel = null;
    this.ready = null;
    const during: CrashContext = { pending: [...this.pending.values()].map((p) => p.method), loadingFile: this.loadingFile, workerPid: this.workerPid };
    this.loadingFile = null;
    this.failAll(new WorkerError(description, 'crashed'));
    if (this.disposed) return;
    // Back off so a model that kills the worker at every load does not spin the machine.
    const { initialMs, maxMs, stableAfterMs } = this.options.backoff ?? { initialMs: 1000, maxMs: 30_000, stableAfterMs: 60_000 };
    if (Date.now() - this.startedAt > stableAfterMs) this.crashes = 0;
    const delay = Math.min(maxMs, initialMs * 2 ** this.crashes);
    this.crashes++;
    this.options.log?.('error', `${description}; restarting in ${delay} ms`);
    const timer = setTimeout(() => {
      this.restart = null;
      if (this.disposed) return;
      this.start().then(
        () => this.options.onRestart?.(),
        // Not left broken until a reload: the next try waits longer (a shared worker that did not
        // start, or another window's that died while this one connected).
        (error: Error) => !this.disposed && this.onExit(null, `worker restart failed: ${error.message}`),
      );
    }, delay);
    this.restart = { timer, at: Date.now() + delay, description };
    this.options.onCrash?.(description, delay, this.crashes, during);
  }

  private failAll(error: Error): void {
    for (const [id, pending] of this.pending) {
      clearTimeout(pending.timer);
      pending.reject(error);
      this.pending.delete(id);
    }
  }
}
