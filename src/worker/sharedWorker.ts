// Finding, or starting, the one inference worker every window of this user shares (workerMain.ts,
// shared mode). Its socket lives in a directory only this user can enter, named after the worker
// build, so two versions of the extension never talk to each other's worker.
import { spawn } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

export interface SharedWorkerAddress {
  dir: string;
  socketPath: string;
  /** The detached worker's stdout and stderr (it has no parent to print to). */
  logPath: string;
}

/** Unix sockets only: a Windows named pipe is open to other users unless given an ACL (Node cannot). */
export function sharedWorkerSupported(): boolean {
  return process.platform !== 'win32';
}

/** Where the worker built as `workerPath` listens for this user ($DRAFTLINE_SHARED_WORKER_DIR moves it, for tests). */
export function sharedWorkerAddress(workerPath: string, dir = process.env.DRAFTLINE_SHARED_WORKER_DIR || path.join(os.tmpdir(), `draftline-${os.userInfo().uid}`)): SharedWorkerAddress {
  const build = crypto.createHash('sha256').update(fs.readFileSync(workerPath)).digest('hex').slice(0, 16);
  const socketPath = path.join(dir, `worker-${build}.sock`);
  // A unix socket's path has room for 107 bytes (104 on macOS).
  if (Buffer.byteLength(socketPath) > 100) throw new Error(`the socket path ${socketPath} is too long for a unix socket`);
  return { dir, socketPath, logPath: path.join(dir, `worker-${build}.log`) };
}

/**
 * Makes the directory if needed and checks that it is this user's alone: anyone who can reach the
 * socket can ask for completions of (and send) code, so a directory others can enter is refused.
 */
export function ensurePrivateDirectory(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = fs.lstatSync(dir);
  const uid = process.getuid?.();
  if (!stat.isDirectory()) throw new Error(`${dir} is not a directory`);
  if (uid !== undefined && stat.uid !== uid) throw new Error(`${dir} belongs to another user (uid ${stat.uid})`);
  if ((stat.mode & 0o077) !== 0) throw new Error(`${dir} is open to other users (mode ${(stat.mode & 0o777).toString(8)})`);
}

/** A connection to whatever listens on the socket (rejects with the error code, e.g. ENOENT or ECONNREFUSED). */
export function connectSocket(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    socket.once('connect', () => {
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

const NOT_LISTENING = new Set(['ENOENT', 'ECONNREFUSED']);
/** Keep the worker's log file from growing without end: it is started again on each start. */
const MAX_LOG_BYTES = 1024 * 1024;

/**
 * A connection to the shared worker: the one already running, or one started now (detached, so it
 * outlives this window). Two windows starting at once may both start one; the second sees the
 * first listening and leaves, and both windows connect to the first.
 */
export async function connectSharedWorker(options: { workerPath: string; address: SharedWorkerAddress; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<{ socket: net.Socket; started: boolean }> {
  const { address } = options;
  ensurePrivateDirectory(address.dir);
  try {
    return { socket: await connectSocket(address.socketPath), started: false };
  } catch (error) {
    if (!NOT_LISTENING.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
  }
  try {
    if (fs.statSync(address.logPath).size > MAX_LOG_BYTES) fs.truncateSync(address.logPath, 0);
  } catch {}
  const logFd = fs.openSync(address.logPath, 'a', 0o600);
  let exit: string | null = null;
  try {
    const child = spawn(process.execPath, [options.workerPath], {
      // Inside Electron (desktop VS Code) the same binary runs as plain Node with this flag.
      env: { ...process.env, ...options.env, ELECTRON_RUN_AS_NODE: '1', DRAFTLINE_SHARED_SOCKET: address.socketPath },
      detached: true,
      // Not the first window's folder: the worker outlives it, and must not hold it open.
      cwd: address.dir,
      stdio: ['ignore', logFd, logFd],
    });
    child.on('exit', (code, signal) => {
      exit = signal ? `killed by ${signal}` : `exited with code ${code}`;
    });
    child.on('error', (error) => {
      exit = error.message;
    });
    child.unref();
  } finally {
    fs.closeSync(logFd);
  }
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    try {
      return { socket: await connectSocket(address.socketPath), started: true };
    } catch (error) {
      if (!NOT_LISTENING.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
    }
    // Exit code 0: another worker was listening when ours started; it serves, keep connecting.
    if ((exit && exit !== 'exited with code 0') || Date.now() > deadline) {
      throw new Error(`the shared inference worker did not start (${exit ?? 'no answer'}); its log: ${logTail(address.logPath)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function logTail(logPath: string): string {
  try {
    const text = fs.readFileSync(logPath, 'utf8').trim();
    return text ? text.slice(-600) : `(empty) ${logPath}`;
  } catch {
    return `(none) ${logPath}`;
  }
}
