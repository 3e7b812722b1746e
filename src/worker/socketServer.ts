// The shared worker's transport: the unix socket every window of this user and build connects to
// (sharedWorker.ts chose it), the lock that lets only one worker listen on it, and the idle timer
// that ends the worker a while after its last window left. Messages go to workerMain's handlers.
import * as fs from 'node:fs';
import * as net from 'node:net';
import { readFrames, writeFrame } from './frames';
import type { ClientMessage, WorkerMessage } from './protocol';
import { connectSocket } from './sharedWorker';

/** What the socket server asks of the worker for each client connection. */
export interface SocketClients<C> {
  open(send: (message: WorkerMessage) => void): C;
  onMessage(connection: C, raw: ClientMessage): void;
  close(connection: C): void;
  /** Clients connected now. */
  clients(): number;
  /** Whether models are loaded (kept for a window that comes back, or loading). */
  modelsLoaded(): boolean;
  log(level: 'warn', message: string): void;
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
export async function serveSocket<C>(socketPath: string, clients: SocketClients<C>): Promise<void> {
  const { open: openConnection, onMessage: onClientMessage, close: closeConnection, log } = clients;
  const lockDir = `${socketPath}.lock`;
  // Another worker serves (or is starting): exit 0 tells the client that started this one to connect there.
  if (!(await takeLock(lockDir, socketPath))) process.exit(0);
  let idleTimer: NodeJS.Timeout | null = null;
  let served = false;
  const idle = () => {
    if (idleTimer) clearTimeout(idleTimer);
    if (clients.clients() > 0) served = true;
    // Before its first client the window that started it is still connecting (an idle time of 0 must not end it then).
    // After, it idles on only for models kept for a window that comes back: with none (a load that
    // failed, a window that moved to another pair's worker) it is a process nobody needs.
    const wait = !served ? Math.max(SHARED_IDLE_MS, FIRST_CLIENT_WAIT_MS) : clients.modelsLoaded() ? SHARED_IDLE_MS : 0;
    idleTimer = clients.clients() > 0 ? null : setTimeout(() => shutDown(), wait);
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
    if (clients.clients() > 0 && !force) return;
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
