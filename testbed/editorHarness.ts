// End-to-end harness: a real VS Code (code-server 4.100.3, VS Code 1.100.3) started headless on
// 127.0.0.1 and driven in Debian's chromium by playwright-core: VS Code's own test runners download
// VS Code at run time, code-server runs offline and its extension host loads native addons.
//
// Install the prerequisites with `bash scripts/setup-e2e.sh` (apt packages + code-server into
// <repo>/.cache/code-server). Works the same whether tsx loads this file as CommonJS or ESM: it uses
// neither __dirname nor import.meta (the repo root is found from the working directory or
// $DRAFTLINE_REPO; the code-server binary can be overridden with $CODE_SERVER_BIN).
//
// Robustness rules kept throughout: every wait has a timeout, every error message carries the tail of
// the code-server log (and of the extension host log when there is one), processes are killed by pid
// (SIGTERM, SIGKILL after 5 s, then any descendant still alive), and whatever is still running when the
// node process exits is killed synchronously.

import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CODE_SERVER_VERSION = '4.100.3';
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SETUP_COMMAND = 'bash scripts/setup-e2e.sh';

// --------------------------------------------------------------------------------------- locations

/** The repository root: $DRAFTLINE_REPO, else the nearest ancestor of cwd holding scripts/setup-e2e.sh. */
export function repoRoot(): string {
  if (process.env.DRAFTLINE_REPO) return path.resolve(process.env.DRAFTLINE_REPO);
  let dir = process.cwd();
  for (;;) {
    if (fs.existsSync(path.join(dir, 'scripts', 'setup-e2e.sh'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

/** Path of the code-server launcher installed by scripts/setup-e2e.sh (or $CODE_SERVER_BIN). */
export function codeServerBin(): string {
  return process.env.CODE_SERVER_BIN ?? path.join(repoRoot(), '.cache', 'code-server', 'node_modules', '.bin', 'code-server');
}

/** Why the e2e prerequisites are not usable, or null when code-server and chromium are there. */
export function e2eUnavailableReason(): string | null {
  const bin = codeServerBin();
  if (!fs.existsSync(bin)) {
    return `code-server is not installed (${bin} missing). Install it with: ${SETUP_COMMAND}`;
  }
  if (!fs.existsSync(CHROMIUM_PATH)) {
    return `chromium is not installed (${CHROMIUM_PATH} missing). Install it with: ${SETUP_COMMAND}`;
  }
  return null;
}

// ------------------------------------------------------------------------------------ small utils

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Last `lines` lines of a text file ('' when it does not exist). */
export function tailFile(file: string, lines = 40): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text
      .split('\n')
      .slice(-lines - 1)
      .join('\n')
      .trimEnd();
  } catch {
    return '';
  }
}

/** Rejects with `message` when `p` takes longer than `ms`. */
export async function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${message} (timed out after ${ms} ms)`)), ms);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}

/**
 * Polls `probe` until it returns something other than undefined/false, or throws after `timeoutMs`
 * with `what` and `describe()` (called at the time of the failure) in the message.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  opts: { timeoutMs: number; intervalMs?: number; what: string; describe?: () => Promise<string> | string },
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v as T;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) break;
    await sleep(opts.intervalMs ?? 100);
  }
  let extra = '';
  if (opts.describe) {
    try {
      extra = await opts.describe();
    } catch (e) {
      extra = `(could not describe state: ${String(e)})`;
    }
  }
  const le = lastError ? `\nlast error: ${String((lastError as Error)?.message ?? lastError)}` : '';
  throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${opts.what}${le}${extra ? `\n${extra}` : ''}`);
}

// ---------------------------------------------------------------------------- process management

interface ProcInfo {
  pid: number;
  ppid: number;
  start: string;
}

function readProc(pid: number): ProcInfo | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // pid (comm) state ppid ... ; comm may contain spaces and parens: split after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(rest[1]), start: rest[19] ?? '' };
  } catch {
    return null;
  }
}

/** All live descendants of `root` (children, grandchildren, ...), read from /proc. */
export function descendants(root: number): ProcInfo[] {
  const byParent = new Map<number, ProcInfo[]>();
  let entries: string[] = [];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const info = readProc(Number(e));
    if (!info) continue;
    const list = byParent.get(info.ppid) ?? [];
    list.push(info);
    byParent.set(info.ppid, list);
  }
  const out: ProcInfo[] = [];
  const stack = [root];
  while (stack.length) {
    const p = stack.pop()!;
    for (const c of byParent.get(p) ?? []) {
      out.push(c);
      stack.push(c.pid);
    }
  }
  return out;
}

function alive(info: ProcInfo): boolean {
  const now = readProc(info.pid);
  return !!now && now.start === info.start && !isZombie(info.pid);
}

function isZombie(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return false;
  }
}

function kill(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* gone already */
  }
}

/** SIGTERM `pid`, SIGKILL it after `graceMs`, then SIGKILL every descendant seen that is still alive. */
export async function killTree(pid: number, graceMs = 5000): Promise<void> {
  const root = readProc(pid);
  if (!root) return;
  const seen = new Map<number, ProcInfo>();
  const snapshot = () => {
    for (const d of descendants(pid)) if (!seen.has(d.pid)) seen.set(d.pid, d);
  };
  snapshot();
  kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && alive(root)) {
    snapshot(); // children may be spawned/reparented while shutting down
    await sleep(100);
  }
  if (alive(root)) {
    snapshot();
    kill(pid, 'SIGKILL');
  }
  for (const d of seen.values()) if (alive(d)) kill(d.pid, 'SIGKILL');
}

/** Synchronous last-resort variant for process 'exit': SIGKILL the tree at once. */
function killTreeSync(pid: number): void {
  const root = readProc(pid);
  if (!root) return;
  const ds = descendants(pid);
  kill(-pid, 'SIGKILL'); // its process group (spawned detached), then the tree by pid
  kill(pid, 'SIGKILL');
  for (const d of ds) if (alive(d)) kill(d.pid, 'SIGKILL');
}

const liveServers = new Set<CodeServer>();
const liveBrowsers = new Set<Browser>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const s of liveServers) killTreeSync(s.pid);
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      for (const s of liveServers) killTreeSync(s.pid);
      process.exit(128 + (sig === 'SIGINT' ? 2 : sig === 'SIGTERM' ? 15 : 1));
    });
  }
}

/** Closes every browser and stops every code-server this harness started and that is still running. */
export async function stopAll(): Promise<void> {
  await Promise.allSettled([...liveBrowsers].map((b) => closeBrowser(b)));
  await Promise.allSettled([...liveServers].map((s) => s.stop()));
}

/** Strips variables that would make code-server talk to an enclosing VS Code / change its config. */
function cleanEnv(base: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) {
    if (v === undefined) continue;
    if (k.startsWith('VSCODE_') || k.startsWith('ELECTRON_') || k.startsWith('CODE_SERVER_')) continue;
    if (['PASSWORD', 'HASHED_PASSWORD', 'PORT', 'NODE_OPTIONS', 'NODE_TEST_CONTEXT'].includes(k)) continue;
    env[k] = v;
  }
  return env;
}

interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion (stdin closed, so nothing can prompt) with a hard timeout. */
export function runProcess(cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      void killTree(child.pid!, 2000);
      reject(new Error(`${cmd} ${args.join(' ')} timed out after ${opts.timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, opts.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

// ----------------------------------------------------------------------------------- code-server

export interface StartCodeServerOptions {
  /** Folder opened by default (openWorkbench's `folder` defaults to it). */
  workspaceDir: string;
  /** Everything this run writes goes under it: config, log, XDG dirs, user data, extensions. */
  outDir: string;
  extensionsDir?: string;
  userDataDir?: string;
  /**
   * Merged over the harness defaults into <userDataDir>/User/settings.json; Draftline's machine-scoped
   * settings go to <userDataDir>/Machine/settings.json instead, the Remote settings of code-server's
   * remote window, the only place VS Code applies them there (issue #41).
   */
  settings?: Record<string, unknown>;
  /** Written into the User settings whatever their scope (a test of machine settings where VS Code ignores them). */
  userSettingsVerbatim?: Record<string, unknown>;
  /** The user's own keybindings (<userDataDir>/User/keybindings.json). */
  keybindings?: { key: string; command: string; when?: string }[];
  /** Extra environment for code-server (and so for the extension host). */
  env?: Record<string, string>;
  /** .vsix files installed into extensionsDir before the server starts. */
  vsixPaths?: string[];
  /** Default 60 s. */
  startTimeoutMs?: number;
  /** The server is killed after this long whatever happens (default 15 min): a forgotten stop() can't leak. */
  maxLifetimeMs?: number;
  extraArgs?: string[];
}

export interface CodeServer {
  url: string;
  port: number;
  pid: number;
  logPath: string;
  outDir: string;
  workspaceDir: string;
  userDataDir: string;
  extensionsDir: string;
  /** SIGTERM, SIGKILL after 5 s, then any descendant still alive. Idempotent. */
  stop(): Promise<void>;
  /** code-server --install-extension with this server's dirs; resolves to the CLI's output. */
  installExtension(vsixPath: string): Promise<string>;
  /** Tail of the code-server log plus the newest extension host log, for error messages. */
  logTail(lines?: number): string;
}

export const DEFAULT_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'editor.quickSuggestions': { other: 'off', comments: 'off', strings: 'off' },
  'editor.suggestOnTriggerCharacters': false,
  'editor.inlineSuggest.enabled': true,
  'editor.minimap.enabled': false,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'update.mode': 'none',
  'telemetry.telemetryLevel': 'off',
  'security.workspace.trust.enabled': false,
  'files.autoSave': 'off',
  'git.enabled': false,
  'chat.commandCenter.enabled': false,
};

/** Settings split into the User settings and, for the keys package.json declares machine-scoped, the Remote (Machine) settings. */
export function splitMachineSettings(settings: Record<string, unknown>): { user: Record<string, unknown>; machine: Record<string, unknown> } {
  const declared = JSON.parse(fs.readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')).contributes.configuration.properties as Record<string, { scope?: string }>;
  const user: Record<string, unknown> = {};
  const machine: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings)) {
    if (['machine', 'machine-overridable'].includes(declared[key]?.scope ?? '')) machine[key] = value;
    else user[key] = value;
  }
  return { user, machine };
}

function userDataDirs(opts: { outDir: string; userDataDir?: string; extensionsDir?: string }) {
  const outDir = path.resolve(opts.outDir);
  return {
    outDir,
    userDataDir: path.resolve(opts.userDataDir ?? path.join(outDir, 'user-data')),
    extensionsDir: path.resolve(opts.extensionsDir ?? path.join(outDir, 'extensions')),
    xdgConfig: path.join(outDir, 'xdg', 'config'),
    xdgData: path.join(outDir, 'xdg', 'data'),
    xdgCache: path.join(outDir, 'xdg', 'cache'),
    configPath: path.join(outDir, 'code-server.yaml'),
  };
}

function codeServerEnv(dirs: ReturnType<typeof userDataDirs>, extra?: Record<string, string>): Record<string, string> {
  return {
    ...cleanEnv(process.env),
    XDG_CONFIG_HOME: dirs.xdgConfig,
    XDG_DATA_HOME: dirs.xdgData,
    XDG_CACHE_HOME: dirs.xdgCache,
    // Each server its own shared inference worker (a test starts cold), which leaves soon after
    // the server's windows are gone rather than 10 minutes later.
    DRAFTLINE_SHARED_WORKER_DIR: path.join(dirs.outDir, 'shared-worker'),
    DRAFTLINE_SHARED_IDLE_MS: '3000',
    ...(extra ?? {}),
  };
}

/** Installs a .vsix with code-server's CLI into the given dirs (no server needed). */
export async function installExtensionInto(opts: { outDir: string; userDataDir?: string; extensionsDir?: string; env?: Record<string, string> }, vsixPath: string): Promise<string> {
  const dirs = userDataDirs(opts);
  for (const d of [dirs.userDataDir, dirs.extensionsDir, dirs.xdgConfig, dirs.xdgData, dirs.xdgCache]) {
    fs.mkdirSync(d, { recursive: true });
  }
  const vsix = path.resolve(vsixPath);
  if (!fs.existsSync(vsix)) throw new Error(`installExtension: ${vsix} does not exist`);
  const r = await runProcess(codeServerBin(), ['--install-extension', vsix, '--force', '--extensions-dir', dirs.extensionsDir, '--user-data-dir', dirs.userDataDir], {
    env: codeServerEnv(dirs, opts.env),
    timeoutMs: 120_000,
  });
  const out = `${r.stdout}${r.stderr}`.trim();
  if (r.code !== 0 || !/successfully installed/i.test(out)) {
    throw new Error(`code-server --install-extension ${vsix} failed (exit ${r.code}):\n${out}`);
  }
  return out;
}

/** Starts code-server on 127.0.0.1 with a free port and returns once it listens. */
export async function startCodeServer(opts: StartCodeServerOptions): Promise<CodeServer> {
  const reason = e2eUnavailableReason();
  if (reason) throw new Error(reason);
  installExitHook();
  const dirs = userDataDirs(opts);
  const workspaceDir = path.resolve(opts.workspaceDir);
  for (const d of [dirs.outDir, dirs.userDataDir, dirs.extensionsDir, dirs.xdgConfig, dirs.xdgData, dirs.xdgCache]) {
    fs.mkdirSync(d, { recursive: true });
  }
  if (!fs.existsSync(workspaceDir)) throw new Error(`startCodeServer: workspaceDir ${workspaceDir} does not exist`);

  fs.writeFileSync(dirs.configPath, 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n');
  const userDir = path.join(dirs.userDataDir, 'User');
  fs.mkdirSync(userDir, { recursive: true });
  const settingsPath = path.join(userDir, 'settings.json');
  const { user, machine } = splitMachineSettings({ ...DEFAULT_SETTINGS, ...(opts.settings ?? {}) });
  fs.writeFileSync(settingsPath, JSON.stringify({ ...user, ...(opts.userSettingsVerbatim ?? {}) }, null, 2));
  if (opts.keybindings) fs.writeFileSync(path.join(userDir, 'keybindings.json'), JSON.stringify(opts.keybindings, null, 2));
  if (Object.keys(machine).length > 0) {
    fs.mkdirSync(path.join(dirs.userDataDir, 'Machine'), { recursive: true });
    fs.writeFileSync(path.join(dirs.userDataDir, 'Machine', 'settings.json'), JSON.stringify(machine, null, 2));
  }

  for (const vsix of opts.vsixPaths ?? []) await installExtensionInto({ ...opts }, vsix);

  const logPath = path.join(dirs.outDir, 'code-server.log');
  const logFd = fs.openSync(logPath, 'a');
  const args = [
    '--config',
    dirs.configPath,
    '--auth',
    'none',
    '--bind-addr',
    '127.0.0.1:0',
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    '--ignore-last-opened',
    '--user-data-dir',
    dirs.userDataDir,
    '--extensions-dir',
    dirs.extensionsDir,
    ...(opts.extraArgs ?? []),
    workspaceDir,
  ];
  fs.writeSync(logFd, `[harness] ${new Date().toISOString()} ${codeServerBin()} ${args.join(' ')}\n`);
  let child: ChildProcess;
  try {
    child = spawn(codeServerBin(), args, {
      cwd: workspaceDir,
      env: codeServerEnv(dirs, opts.env),
      stdio: ['ignore', logFd, logFd],
      detached: true, // own process group; we kill by pid anyway
    });
  } finally {
    fs.closeSync(logFd);
  }
  child.unref(); // never keeps the test process alive; the exit hook kills it
  if (child.pid) startWatchdog(child.pid);
  let exited: string | null = null;
  child.on('exit', (code, signal) => (exited = `exited with code ${code} signal ${signal}`));
  child.on('error', (e) => (exited = `failed to spawn: ${e.message}`));

  const pid = child.pid ?? -1;
  let stopped: Promise<void> | null = null;
  let lifetimeTimer: NodeJS.Timeout | undefined;
  const server: CodeServer = {
    url: '',
    port: 0,
    pid,
    logPath,
    outDir: dirs.outDir,
    workspaceDir,
    userDataDir: dirs.userDataDir,
    extensionsDir: dirs.extensionsDir,
    stop() {
      if (!stopped) {
        if (lifetimeTimer) clearTimeout(lifetimeTimer);
        stopped = (pid > 0 ? killTree(pid, 5000) : Promise.resolve()).finally(() => liveServers.delete(server));
      }
      return stopped;
    },
    installExtension(vsixPath: string) {
      return installExtensionInto({ outDir: dirs.outDir, userDataDir: dirs.userDataDir, extensionsDir: dirs.extensionsDir, env: opts.env }, vsixPath);
    },
    logTail(lines = 40) {
      let s = `--- code-server log (${logPath}), last ${lines} lines ---\n${tailFile(logPath, lines)}`;
      const exthost = newestExtHostLog(dirs.userDataDir);
      if (exthost) s += `\n--- extension host log (${exthost}), last ${lines} lines ---\n${tailFile(exthost, lines)}`;
      return s;
    },
  };
  if (pid > 0) liveServers.add(server);
  lifetimeTimer = setTimeout(() => void server.stop(), opts.maxLifetimeMs ?? 15 * 60_000);
  lifetimeTimer.unref();

  try {
    const port = await waitFor(
      () => {
        if (exited) throw new Error(`code-server ${exited}`);
        const m = /HTTP server listening on https?:\/\/127\.0\.0\.1:(\d+)\//.exec(tailFile(logPath, 200));
        return m ? Number(m[1]) : undefined;
      },
      {
        timeoutMs: opts.startTimeoutMs ?? 60_000,
        what: 'code-server to listen ("HTTP server listening on ...")',
        describe: () => (exited ? `code-server ${exited}\n` : '') + server.logTail(),
      },
    );
    if (exited) throw new Error(`code-server ${exited}\n${server.logTail()}`);
    server.port = port;
    server.url = `http://127.0.0.1:${port}`;
    return server;
  } catch (e) {
    await server.stop();
    throw e;
  }
}

/**
 * A sleeping `sh` that outlives a SIGKILLed test process: when this node process is gone it kills
 * code-server's process group (code-server, its entry process, file watcher and extension hosts all
 * stay in the group the harness created with detached: true). Exits by itself once code-server is gone.
 */
function startWatchdog(csPid: number): void {
  const script =
    `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${csPid} 2>/dev/null; do sleep 2; done; ` +
    `if kill -0 ${csPid} 2>/dev/null; then kill -TERM -${csPid} 2>/dev/null; sleep 5; kill -KILL -${csPid} 2>/dev/null; fi`;
  try {
    const w = spawn('/bin/sh', ['-c', script], { stdio: 'ignore', detached: true });
    w.on('error', () => undefined);
    w.unref();
  } catch {
    /* best effort */
  }
}

function newestExtHostLog(userDataDir: string): string | null {
  // <userDataDir>/logs/<session>/exthost<N>/remoteexthost.log (code-server) or .../exthost.log
  const logsDir = path.join(userDataDir, 'logs');
  let best: { file: string; mtime: number } | null = null;
  const visit = (dir: string, depth: number) => {
    let entries: fs.Dirent[] = [];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.isDirectory() && depth < 3) visit(p, depth + 1);
      else if (e.isFile() && /exthost\.log$/i.test(e.name)) {
        const mtime = fs.statSync(p).mtimeMs;
        if (!best || mtime > best.mtime) best = { file: p, mtime };
      }
    }
  };
  visit(logsDir, 0);
  return (best as { file: string } | null)?.file ?? null;
}

// --------------------------------------------------------------------------------------- browser

export interface Workbench {
  browser: Browser;
  page: Page;
  server: CodeServer;
  /** Console errors and page errors seen in the workbench, for diagnostics. */
  consoleErrors: string[];
}

const serverOfPage = new WeakMap<Page, CodeServer>();

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-dev-shm-usage',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-default-apps',
  '--disable-sync',
  '--disable-extensions',
  '--no-first-run',
  '--no-default-browser-check',
  '--metrics-recording-only',
  '--mute-audio',
  '--disable-crash-reporter',
  '--disable-breakpad',
  '--password-store=basic',
  '--use-mock-keychain',
  '--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication',
];

/** Launches headless chromium (fresh profile) on the workbench and waits for `.monaco-workbench`. */
export async function openWorkbench(
  server: CodeServer,
  opts: { folder?: string; extensionDevelopmentPath?: string; timeoutMs?: number; viewport?: { width: number; height: number } } = {},
): Promise<Workbench> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const folder = path.resolve(opts.folder ?? server.workspaceDir);
  let url = `${server.url}/?folder=${encodeURIComponent(folder)}`;
  if (opts.extensionDevelopmentPath) {
    const dev = `vscode-remote://127.0.0.1:${server.port}${path.resolve(opts.extensionDevelopmentPath)}`;
    url += `&payload=${encodeURIComponent(JSON.stringify([['extensionDevelopmentPath', dev]]))}`;
  }
  const browser = await withTimeout(
    chromium.launch({
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 60_000,
      // Debian's chromium (and its crashpad handler) writes under $XDG_CONFIG_HOME/chromium: keep it in outDir.
      env: {
        ...cleanEnv(process.env),
        XDG_CONFIG_HOME: path.join(server.outDir, 'xdg', 'chromium-config'),
        XDG_CACHE_HOME: path.join(server.outDir, 'xdg', 'chromium-cache'),
      },
    }),
    70_000,
    `launching ${CHROMIUM_PATH}`,
  );
  liveBrowsers.add(browser);
  browser.on('disconnected', () => liveBrowsers.delete(browser));
  const consoleErrors: string[] = [];
  try {
    const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1280, height: 800 } });
    // tsx (esbuild, keepNames) wraps named functions in __name(...): give functions passed to
    // page.evaluate() that helper in the page too, or they fail with "__name is not defined".
    await context.addInitScript('globalThis.__name = globalThis.__name || ((f) => f);');
    const page = await context.newPage();
    page.setDefaultTimeout(30_000);
    page.setDefaultNavigationTimeout(timeoutMs);
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
    serverOfPage.set(page, server);
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: timeoutMs });
    await page.waitForSelector('.monaco-workbench', { state: 'visible', timeout: timeoutMs }).catch((e: Error) => {
      throw new Error(`workbench did not appear at ${url}: ${e.message}\nconsole errors:\n${consoleErrors.slice(-10).join('\n')}\n${server.logTail()}`);
    });
    return { browser, page, server, consoleErrors };
  } catch (e) {
    await closeBrowser(browser);
    throw e;
  }
}

async function closeBrowser(browser: Browser): Promise<void> {
  liveBrowsers.delete(browser);
  // Playwright kills the chromium process itself when close() cannot finish cleanly.
  await withTimeout(browser.close(), 15_000, 'closing chromium').catch(() => undefined);
}

/** Closes the browser of a workbench (never throws, never hangs). */
export async function closeWorkbench(wb: Pick<Workbench, 'browser'> | null | undefined): Promise<void> {
  if (wb?.browser) await closeBrowser(wb.browser);
}

function diag(page: Page): string {
  const s = serverOfPage.get(page);
  return s ? `\n${s.logTail(30)}` : '';
}

// ------------------------------------------------------------------------------------ page helpers

const QUICK_INPUT = '.quick-input-widget';
const QUICK_ROWS = '.quick-input-list .monaco-list-row';
const ACTIVE_EDITOR = '.part.editor .editor-group-container.active .monaco-editor';

async function quickInputVisible(page: Page): Promise<boolean> {
  return page
    .locator(QUICK_INPUT)
    .isVisible()
    .catch(() => false);
}

async function waitQuickInput(page: Page, visible: boolean, what: string, timeoutMs = 10_000): Promise<void> {
  await waitFor(async () => (await quickInputVisible(page)) === visible, {
    timeoutMs,
    what: `${what}: quick input ${visible ? 'to open' : 'to close'}`,
    describe: async () => `quick pick rows: ${JSON.stringify(await quickPickRows(page))}${diag(page)}`,
  });
}

/** Escapes from any open quick input (palette, quick open). */
export async function closeQuickInput(page: Page): Promise<void> {
  for (let i = 0; i < 3 && (await quickInputVisible(page)); i++) {
    await page.keyboard.press('Escape');
    await sleep(150);
  }
}

/** The text (aria-label, else text) of the visible quick pick rows; [] when no quick input is open. */
export async function quickPickRows(page: Page): Promise<string[]> {
  if (!(await quickInputVisible(page))) return [];
  return page.$$eval(QUICK_ROWS, (rows) => rows.map((r) => (r.getAttribute('aria-label') || r.textContent || '').replace(/\u00a0/g, ' ').trim()));
}

/** Quick Open (Ctrl+P) the file `name` (a workspace-relative path or a basename) and wait for its tab. */
export async function openFile(page: Page, name: string, timeoutMs = 20_000): Promise<void> {
  const base = path.basename(name);
  await closeQuickInput(page);
  await page.keyboard.press('Control+P');
  await waitQuickInput(page, true, `openFile(${name})`);
  await page.keyboard.type(name, { delay: 10 });
  // Wait until file search lists it first (it is empty for a moment while the index loads, and a
  // recently opened file with a similar name can rank first until the search settles: Enter would open that one).
  await waitFor(async () => (await quickPickRows(page))[0]?.includes(base) ?? false, {
    timeoutMs,
    what: `quick open to list ${name}`,
    describe: async () => `rows: ${JSON.stringify(await quickPickRows(page))}${diag(page)}`,
  });
  await page.keyboard.press('Enter');
  await waitFor(
    async () =>
      page.evaluate(
        ([sel, b]) => {
          const tab = (globalThis as any).document.querySelector('.part.editor .editor-group-container.active .tab.active');
          const label = tab?.getAttribute('aria-label') ?? tab?.textContent ?? '';
          const editor = (globalThis as any).document.querySelector(sel);
          return label.includes(b) && !!editor;
        },
        [ACTIVE_EDITOR, base] as const,
      ),
    { timeoutMs, what: `an active editor tab for ${name}`, describe: () => diag(page) },
  );
  await waitQuickInput(page, false, `openFile(${name})`);
  await focusEditor(page);
}

/** Makes sure keyboard input goes to the active text editor. */
export async function focusEditor(page: Page): Promise<void> {
  const focused = await page.evaluate((sel) => {
    const ed = (globalThis as any).document.querySelector(sel);
    return !!ed && ed.contains((globalThis as any).document.activeElement);
  }, ACTIVE_EDITOR);
  if (!focused) {
    // workbench.action.focusActiveEditorGroup
    await page.keyboard.press('Control+1');
    await sleep(100);
  }
}

/** The "Ln X, Col Y" of the status bar (null when not shown). */
export async function cursorPosition(page: Page): Promise<{ line: number; column: number } | null> {
  const text = await page
    .locator('[id="status.editor.selection"] .statusbar-item-label')
    .first()
    .textContent({ timeout: 2000 })
    .catch(() => null);
  const m = text ? /Ln (\d+), Col (\d+)/.exec(text) : null;
  return m ? { line: Number(m[1]), column: Number(m[2]) } : null;
}

/** Moves the cursor with Go to Line (Ctrl+G, `line:column`) and waits for the status bar to agree. */
export async function placeCursor(page: Page, line: number, column = 1): Promise<void> {
  await closeQuickInput(page);
  await focusEditor(page);
  await page.keyboard.press('Control+G');
  await waitQuickInput(page, true, `placeCursor(${line}, ${column})`);
  await page.keyboard.type(`${line}:${column}`, { delay: 10 });
  await sleep(100);
  await page.keyboard.press('Enter');
  await waitQuickInput(page, false, `placeCursor(${line}, ${column})`);
  await waitFor(
    async () => {
      const p = await cursorPosition(page);
      return !!p && p.line === line && (p.column === column || column === Number.MAX_SAFE_INTEGER);
    },
    {
      timeoutMs: 5000,
      what: `cursor at Ln ${line}, Col ${column} (is the line that long?)`,
      describe: async () => `status bar says ${JSON.stringify(await cursorPosition(page))}`,
    },
  );
}

/** Puts the cursor at the end of `line` (1-based). */
export async function gotoLineEnd(page: Page, line: number): Promise<void> {
  await placeCursor(page, line, 1);
  await page.keyboard.press('End');
  await waitFor(async () => (await cursorPosition(page))?.line === line, { timeoutMs: 3000, what: `cursor on line ${line}` });
}

/** Types `text` key by key with `delayMs` between keys ('\n' presses Enter). */
export async function typeLikeAPerson(page: Page, text: string, delayMs = 60): Promise<void> {
  await focusEditor(page);
  await page.keyboard.type(text, { delay: delayMs });
}

/**
 * The inline completion ghost text shown in the active editor: the ghost spans on the cursor line,
 * then the lines of the preview view zone below it, joined with '\n' (\u00a0 read as a space).
 * '' when none is shown.
 */
export async function readGhostText(page: Page): Promise<string> {
  // No named inner functions here: tsx/esbuild would wrap them in __name(), which the page lacks.
  return page.evaluate((activeSel) => {
    const doc = (globalThis as any).document;
    const editor = doc.querySelector(activeSel) ?? doc.querySelector('.monaco-editor');
    if (!editor) return '';
    const spans: any[] = Array.from(editor.querySelectorAll('.view-lines .ghost-text-decoration, .view-lines .ghost-text-decoration-preview'));
    const first = spans
      .map((x: any) => String(x.textContent ?? ''))
      .join('')
      .replace(/\u00a0/g, ' ');
    const zoneLines: any[] = Array.from(editor.querySelectorAll('.view-zones .suggest-preview-text .view-line'));
    zoneLines.sort((a: any, b: any) => (parseFloat(a.style.top) || 0) - (parseFloat(b.style.top) || 0));
    const rest = zoneLines.map((l: any) => String(l.textContent ?? '').replace(/\u00a0/g, ' '));
    if (!first && rest.length === 0) return '';
    return [first, ...rest].join('\n');
  }, ACTIVE_EDITOR);
}

/**
 * Waits until ghost text is shown (and satisfies `predicate`, default: non-empty) and has stayed the
 * same for `stableMs` (default 200 ms: the cursor-line spans and the view zone below are not always
 * painted in the same frame); returns it.
 */
export async function waitForGhostText(page: Page, opts: { timeoutMs?: number; predicate?: (ghost: string) => boolean; stableMs?: number } = {}): Promise<string> {
  const pred = opts.predicate ?? ((g: string) => g.length > 0);
  const stableMs = opts.stableMs ?? 200;
  let last = '';
  let since = 0;
  return waitFor(
    async () => {
      const now = await readGhostText(page);
      if (now !== last) {
        last = now;
        since = Date.now();
      }
      return pred(now) && Date.now() - since >= stableMs ? now : undefined;
    },
    {
      timeoutMs: opts.timeoutMs ?? 20_000,
      intervalMs: 50,
      what: `ghost text${opts.predicate ? ' matching the predicate' : ''}, stable for ${stableMs} ms`,
      describe: () => `last ghost text read: ${JSON.stringify(last)}${diag(page)}`,
    },
  );
}

/** Runs a command through the palette (F1, type the title, pick the row with that title). */
export async function runCommand(page: Page, title: string, timeoutMs = 15_000): Promise<void> {
  await closeQuickInput(page);
  await page.keyboard.press('F1');
  await waitQuickInput(page, true, `runCommand(${title})`);
  await page.keyboard.type(title, { delay: 10 });
  const want = title.toLowerCase();
  const index = await waitFor(
    async () => {
      const rows = await quickPickRows(page);
      // Row aria-labels are the title, sometimes followed by ", <keybinding>" or ", recently used".
      const exact = rows.findIndex((r) => r.toLowerCase() === want || r.toLowerCase().startsWith(`${want},`));
      if (exact >= 0) return exact;
      const partial = rows.filter((r) => r.toLowerCase().includes(want));
      return partial.length === 1 ? rows.indexOf(partial[0]!) : undefined;
    },
    {
      timeoutMs,
      what: `a command palette row "${title}" (is the extension active / the command contributed?)`,
      describe: async () => `rows: ${JSON.stringify(await quickPickRows(page))}${diag(page)}`,
    },
  );
  await page.locator(QUICK_ROWS).nth(index).click();
  // The palette closes, or a command that opens a quick pick of its own replaces it at once (then
  // the widget may never be seen closed).
  await waitFor(
    async () => {
      if (!(await quickInputVisible(page))) return true;
      const rows = await quickPickRows(page);
      return rows.some((r) => r.toLowerCase().startsWith(want)) ? undefined : true;
    },
    { timeoutMs: 10_000, what: `runCommand(${title}): the palette to close`, describe: async () => `rows: ${JSON.stringify(await quickPickRows(page))}${diag(page)}` },
  );
}

export interface StatusBarItem {
  text: string;
  ariaLabel: string | null;
  /** Only filled when asked for with { hover: true } (the tooltip is a hover widget, not an attribute). */
  tooltip: string | null;
}

/**
 * Reads the status bar item with the full id `<publisher>.<name>.<itemId>` (null when it is not shown).
 * With { hover: true } it hovers the item and reads the tooltip from the hover widget.
 */
export async function readStatusBarItem(page: Page, id: string, opts: { hover?: boolean } = {}): Promise<StatusBarItem | null> {
  const item = page.locator(`[id="${id}"]`);
  if ((await item.count()) === 0) return null;
  const label = item.locator('.statusbar-item-label').first();
  const text = ((await label.textContent({ timeout: 5000 }).catch(() => null)) ?? '').replace(/\u00a0/g, ' ').trim();
  const ariaLabel = (await label.getAttribute('aria-label').catch(() => null)) ?? (await item.getAttribute('aria-label').catch(() => null));
  let tooltip: string | null = null;
  if (opts.hover) {
    await label.hover({ timeout: 5000 });
    tooltip = await waitFor(
      async () => {
        const t = await page
          .locator('.workbench-hover, .monaco-hover')
          .filter({ visible: true })
          .first()
          .textContent({ timeout: 500 })
          .catch(() => null);
        return t?.trim() ? t.replace(/\u00a0/g, ' ').trim() : undefined;
      },
      { timeoutMs: 5000, what: `the tooltip of status bar item ${id}` },
    ).catch(() => null);
    await page.mouse.move(0, 0);
  }
  return { text, ariaLabel, tooltip };
}

/** The messages of the notification toasts currently shown. */
export async function readNotifications(page: Page): Promise<string[]> {
  return page.$$eval('.notifications-toasts .notification-toast', (toasts) =>
    toasts.map((t) => {
      const msg = t.querySelector('.notification-list-item-message');
      return (msg?.textContent ?? t.textContent ?? '').replace(/\u00a0/g, ' ').trim();
    }),
  );
}

/** Waits for a notification toast whose message contains `text` (or matches it); returns the message. */
export async function waitForNotification(page: Page, text: string | RegExp, timeoutMs = 15_000): Promise<string> {
  const match = (m: string) => (typeof text === 'string' ? m.includes(text) : text.test(m));
  return waitFor(async () => (await readNotifications(page)).find(match), {
    timeoutMs,
    what: `a notification matching ${String(text)}`,
    describe: async () => `notifications: ${JSON.stringify(await readNotifications(page))}${diag(page)}`,
  });
}

/** Saves a PNG of the page as <outDir>/<name>.png and returns its path. */
export async function screenshot(page: Page, outDir: string, name: string): Promise<string> {
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, name.endsWith('.png') ? name : `${name}.png`);
  await page.screenshot({ path: file, timeout: 15_000 });
  return file;
}

/**
 * A screenshot cropped to the union of the visible elements the selectors match, with a margin, at most
 * `maxHeight` tall: the README's images (media/screenshot-*.png), small enough to commit.
 */
export async function screenshotOf(page: Page, outDir: string, name: string, selectors: string[], opts: { margin?: number; maxHeight?: number } = {}): Promise<string> {
  const margin = opts.margin ?? 8;
  const boxes = [];
  for (const selector of selectors) {
    const box = await page.locator(selector).filter({ visible: true }).first().boundingBox({ timeout: 5000 });
    if (!box) throw new Error(`nothing visible matches ${selector}`);
    boxes.push(box);
  }
  const viewport = page.viewportSize() ?? { width: 1280, height: 800 };
  const x = Math.max(0, Math.min(...boxes.map((b) => b.x)) - margin);
  const y = Math.max(0, Math.min(...boxes.map((b) => b.y)) - margin);
  const right = Math.min(viewport.width, Math.max(...boxes.map((b) => b.x + b.width)) + margin);
  const bottom = Math.min(viewport.height, Math.max(...boxes.map((b) => b.y + b.height)) + margin, y + (opts.maxHeight ?? viewport.height));
  fs.mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `${name}.png`);
  await page.screenshot({ path: file, clip: { x, y, width: right - x, height: bottom - y }, timeout: 15_000 });
  return file;
}

/** Ctrl+S in the active editor; waits until its tab is no longer dirty. */
export async function saveActiveFile(page: Page, timeoutMs = 10_000): Promise<void> {
  await focusEditor(page);
  await page.keyboard.press('Control+S');
  await waitFor(
    async () =>
      page.evaluate(() => {
        const tab = (globalThis as any).document.querySelector('.part.editor .editor-group-container.active .tab.active');
        return !!tab && !tab.classList.contains('dirty');
      }),
    { timeoutMs, what: 'the active tab to be saved (not dirty)', describe: () => diag(page) },
  );
}

/** Clicks the button labelled `label` on a notification toast (waits for it to be shown). */
export async function clickNotificationButton(page: Page, label: RegExp, timeoutMs = 60_000): Promise<void> {
  const button = await waitFor(
    async () => {
      const buttons = await page.$$('.notifications-toasts .notification-toast .monaco-button');
      for (const b of buttons) if (label.test((await b.textContent()) ?? '')) return b;
      return undefined;
    },
    { timeoutMs, what: `a notification button ${label}`, describe: async () => `notifications: ${JSON.stringify(await readNotifications(page))}` },
  );
  await button.click();
}

/** The Draftline output channel's log file(s) under code-server's user data. */
export function draftlineLogs(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...draftlineLogs(p));
    else if (entry.name === 'Draftline.log') found.push(p);
  }
  return found;
}

/** Adds settings to the User and Remote (Machine) settings files of code-server's user data; VS Code reads them again. */
export function writeSettings(userDataDir: string, settings: Record<string, unknown>): void {
  const { user, machine } = splitMachineSettings(settings);
  for (const [dir, values] of [
    ['User', user],
    ['Machine', machine],
  ] as const) {
    if (Object.keys(values).length === 0) continue;
    const file = path.join(userDataDir, dir, 'settings.json');
    const current = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8') || '{}') as Record<string, unknown>) : {};
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ ...current, ...values }, null, 2));
  }
}
