// Entry of the inference child process. A native abort in llama.cpp ends this process, never the
// extension host; the client restarts it.
import * as os from 'node:os';
import { DEFAULT_SPECULATION, InferenceSession } from '../inference/inferenceSession';
import { getRuntime } from '../inference/llamaRuntime';
import { PROTOCOL_VERSION, type ClientMessage, type WorkerMessage, type WorkerMethods, type WorkerNotification } from './protocol';

let session: InferenceSession | null = null;
let loading: Promise<InferenceSession> | null = null;
const running = new Map<number, AbortController>();
const pendingDocuments: WorkerNotification[] = [];

function send(message: WorkerMessage): void {
  process.send?.(message);
}

function log(level: 'debug' | 'info' | 'warn' | 'error', message: string): void {
  send({ v: PROTOCOL_VERSION, type: 'log', level, message });
}

type Handler<M extends keyof WorkerMethods> = (params: WorkerMethods[M][0], id: number) => Promise<WorkerMethods[M][1]>;

const handlers: { [M in keyof WorkerMethods]: Handler<M> } = {
  hello: async () => ({ protocol: PROTOCOL_VERSION, pid: process.pid }),
  load: async ({ models, speculation }) => {
    const previous = session;
    session = null;
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
    try {
      return await current.complete(request, controller.signal);
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
  crash: async () => {
    if (process.env.DRAFTLINE_TEST_HOOKS !== '1') throw new Error('test hooks are disabled');
    process.abort();
  },
};

function requireSession(): InferenceSession {
  if (!session) throw Object.assign(new Error(loading ? 'models are still loading' : 'no model is loaded'), { code: 'not_loaded' });
  return session;
}

function applyNotification(n: WorkerNotification): void {
  if (n.kind === 'cancel') {
    running.get(n.id)?.abort();
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
        session.documents.setDocument(n.key, n.text);
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
    (error: Error & { code?: string }) =>
      send({ v: PROTOCOL_VERSION, type: 'response', id: raw.id, ok: false, error: { message: error?.message ?? String(error), code: error?.code } }),
  );
});

// The extension host went away: nothing left to serve.
process.on('disconnect', () => process.exit(0));
process.on('unhandledRejection', (reason) => log('error', `unhandled rejection: ${String((reason as Error)?.stack ?? reason)}`));
