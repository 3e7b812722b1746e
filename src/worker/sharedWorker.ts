// Finding, or starting, the inference worker that the windows of this user share (workerMain.ts,
// shared mode). Its socket lives in a directory only this user can enter, named after the worker
// build, so two versions of the extension never talk to each other's worker, and after what the
// worker is for: the variables that choose its GPU or network, and the model pair it loads
// (isolatedAddress), so that a model that aborts llama.cpp ends only the windows that load it.
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

/**
 * Variables the worker is started with, by name or prefix: only what it needs. Everything else of the
 * window's environment (its terminals' settings, tokens of other tools, NODE_OPTIONS with a debugger)
 * stays out of a process that other windows use too.
 */
const WORKER_ENV_NAMES = new Set([
  // The process itself: where programs, libraries, home, temporary files and the locale are.
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'TMPDIR',
  'TMP',
  'TEMP',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'XDG_CACHE_HOME',
  'XDG_RUNTIME_DIR',
  'LD_LIBRARY_PATH',
  'DYLD_LIBRARY_PATH',
  'DYLD_FALLBACK_LIBRARY_PATH',
  // Windows: without these, crypto, temporary files and the GPU drivers' loading fail.
  'SystemRoot',
  'SYSTEMROOT',
  'windir',
  'WINDIR',
  'ComSpec',
  'USERPROFILE',
  'APPDATA',
  'LOCALAPPDATA',
  'PROGRAMDATA',
  'ProgramData',
  'ProgramFiles',
  'PATHEXT',
  // Where GPU toolkits are installed (the llama.cpp binding's CUDA, ROCm and Vulkan builds look there).
  'CUDA_PATH',
  'CUDA_HOME',
  'ROCM_PATH',
  'HIP_PATH',
  'VULKAN_SDK',
]);
const WORKER_ENV_PREFIXES = ['DRAFTLINE_', 'NODE_LLAMA_CPP_', 'GGML_', 'LLAMA_'];

/**
 * The variables that change which GPU the worker uses (and how) or which network it reaches (and as
 * whom): two windows share a worker only when these are the same in both. They are passed on too.
 */
const ISOLATING_ENV_NAMES = new Set([
  'CUDA_VISIBLE_DEVICES',
  'CUDA_DEVICE_ORDER',
  'HIP_VISIBLE_DEVICES',
  'ROCR_VISIBLE_DEVICES',
  'GPU_DEVICE_ORDINAL',
  'HSA_OVERRIDE_GFX_VERSION',
  'ONEAPI_DEVICE_SELECTOR',
  'VK_ICD_FILENAMES',
  'VK_DRIVER_FILES',
  'VK_LOADER_DRIVERS_SELECT',
  'MESA_VK_DEVICE_SELECT',
  'DRI_PRIME',
  'LD_LIBRARY_PATH',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  'all_proxy',
  'HF_ENDPOINT',
  'HF_TOKEN',
  'HUGGING_FACE_HUB_TOKEN',
  'HF_HOME',
  'NODE_EXTRA_CA_CERTS',
  'NODE_TLS_REJECT_UNAUTHORIZED',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
]);
/** GGML_ (e.g. GGML_VK_VISIBLE_DEVICES) and the llama.cpp binding's own (NODE_LLAMA_CPP_) variables choose or tune the GPU backend. */
const ISOLATING_ENV_PREFIXES = ['GGML_', 'NODE_LLAMA_CPP_'];

const isolating = (name: string) => ISOLATING_ENV_NAMES.has(name) || ISOLATING_ENV_PREFIXES.some((p) => name.startsWith(p));

/** The worker's whole environment, taken from `from` (the window's): see WORKER_ENV_NAMES and ISOLATING_ENV_NAMES. */
export function workerEnvironment(from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(from)) {
    if (value === undefined) continue;
    if (WORKER_ENV_NAMES.has(name) || isolating(name) || WORKER_ENV_PREFIXES.some((p) => name.startsWith(p))) env[name] = value;
  }
  return env;
}

/** The part of `from` that decides whether two windows may share a worker (sorted, so order does not matter). */
export function isolatingEnvironment(from: NodeJS.ProcessEnv = process.env): [string, string][] {
  return Object.entries(from)
    .filter((e): e is [string, string] => e[1] !== undefined && isolating(e[0]))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const shortHash = (text: string) => crypto.createHash('sha256').update(text).digest('hex').slice(0, 12);

/**
 * Where the worker built as `workerPath` listens for this user and this environment `env` (its
 * isolating variables are in the name: windows started with another CUDA_VISIBLE_DEVICES or proxy get
 * a worker of their own). $DRAFTLINE_SHARED_WORKER_DIR moves it, for tests.
 */
export function sharedWorkerAddress(
  workerPath: string,
  dir = process.env.DRAFTLINE_SHARED_WORKER_DIR || path.join(os.tmpdir(), `draftline-${os.userInfo().uid}`),
  env: NodeJS.ProcessEnv = process.env,
): SharedWorkerAddress {
  const build = crypto.createHash('sha256').update(fs.readFileSync(workerPath)).digest('hex').slice(0, 16);
  const isolating = isolatingEnvironment(env);
  return addressIn(dir, isolating.length === 0 ? `worker-${build}` : `worker-${build}-e${shortHash(JSON.stringify(isolating))}`);
}

/**
 * The worker of `base` that serves one model pair (`pairKey`: the models' settings as the worker
 * keys them): windows share a worker only when they load the same pair, so a model file that aborts
 * the process takes down the windows that load it, no others.
 */
export function isolatedAddress(base: SharedWorkerAddress, pairKey: string): SharedWorkerAddress {
  // One hash of the base's name (build and environment) and the pair: a socket path has little room.
  return addressIn(base.dir, `pair-${shortHash(JSON.stringify([path.basename(base.socketPath, '.sock'), pairKey]))}`);
}

function addressIn(dir: string, name: string): SharedWorkerAddress {
  const socketPath = path.join(dir, `${name}.sock`);
  // A unix socket's path has room for 107 bytes (104 on macOS).
  if (Buffer.byteLength(socketPath) > 100) throw new Error(`the socket path ${socketPath} is too long for a unix socket`);
  return { dir, socketPath, logPath: path.join(dir, `${name}.log`) };
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

/**
 * Where the window that started a shared worker writes how the worker ended ("killed by SIGABRT",
 * "exited with code 0"): only a process's parent learns that, and the other windows see no more than
 * their connection close. The model quarantine needs it to tell a crash in llama.cpp (a model's
 * fault) from a kill from outside (the OOM killer, the user's kill -9).
 */
export function workerEndRecordPath(address: SharedWorkerAddress, pid: number): string {
  return path.join(address.dir, `${path.basename(address.socketPath, '.sock')}.ended-${pid}`);
}

/** Records older than this are a former worker's whose pid came round again: ignored, and removed at the next start. */
const END_RECORD_MAX_AGE_MS = 60_000;

/**
 * How the shared worker `pid` ended, as the window that started it recorded it, waiting up to
 * `waitMs` for that window to hear of it; null when no record comes (that window is gone, or the
 * worker is still running): how it ended is then not known.
 */
export async function sharedWorkerEnd(address: SharedWorkerAddress, pid: number, waitMs = 1000): Promise<string | null> {
  const file = workerEndRecordPath(address, pid);
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      if (Date.now() - fs.statSync(file).mtimeMs < END_RECORD_MAX_AGE_MS) return fs.readFileSync(file, 'utf8').trim() || null;
    } catch {}
    if (Date.now() >= deadline) return null;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function removeOldEndRecords(dir: string): void {
  try {
    for (const name of fs.readdirSync(dir)) {
      if (!/\.ended-\d+$/.test(name)) continue;
      const file = path.join(dir, name);
      if (Date.now() - fs.statSync(file).mtimeMs > END_RECORD_MAX_AGE_MS) fs.rmSync(file, { force: true });
    }
  } catch {}
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
  removeOldEndRecords(address.dir);
  const logFd = fs.openSync(address.logPath, 'a', 0o600);
  let exit: string | null = null;
  try {
    const child = spawn(process.execPath, [options.workerPath], {
      // Inside Electron (desktop VS Code) the same binary runs as plain Node with this flag.
      // An explicit environment: what the worker needs, not the first window's whole one (the
      // variables that tell windows apart are in the address: every window here has the same).
      env: { ...workerEnvironment(), ...options.env, ELECTRON_RUN_AS_NODE: '1', DRAFTLINE_SHARED_SOCKET: address.socketPath },
      detached: true,
      // Not the first window's folder: the worker outlives it, and must not hold it open.
      cwd: address.dir,
      stdio: ['ignore', logFd, logFd],
    });
    child.on('exit', (code, signal) => {
      exit = signal ? `killed by ${signal}` : `exited with code ${code}`;
      try {
        if (child.pid !== undefined) fs.writeFileSync(workerEndRecordPath(address, child.pid), exit, { mode: 0o600 });
      } catch {}
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
