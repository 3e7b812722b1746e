// The set-up the real-editor tests share: a fresh test-output/<name>/ holding a workspace of the test's
// files, code-server started with the test's settings and Draftline in it (the packaged linux-x64 .vsix
// installed as a user installs it, or this folder as the extension under development), the workbench
// open in chromium, and all of it closed after the suite.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before } from 'node:test';
import type { Page } from 'playwright-core';
import { closeWorkbench, type CodeServer, draftlineLogs, openWorkbench, repoRoot, type StartCodeServerOptions, startCodeServer, type Workbench } from '../../testbed/editorHarness';

export const ROOT = repoRoot();

/** Editor settings that keep typed text as typed: no auto-closing, no re-indenting, two-space indents. */
export const TYPED_AS_IS = {
  'editor.autoClosingBrackets': 'never',
  'editor.autoClosingQuotes': 'never',
  'editor.autoIndent': 'none',
  'editor.detectIndentation': false,
  'editor.tabSize': 2,
  'editor.insertSpaces': true,
};

/** A file where the embedded models are known to complete: the empty line 10 is average()'s body. */
export const MATH_UTILS = `export function sum(values: number[]): number {
  let total = 0;
  for (const value of values) {
    total += value;
  }
  return total;
}

export function average(values: number[]): number {
  
}
`;

/** A function the user has just started writing: line 3 is its empty body. */
export const UNFINISHED_SUM = 'export function sum(values: number[]): number {\n  let total = 0;\n  \n}\n';

/** test-output/<name>/ emptied, with workspace/ holding `files` (path in the workspace → content). */
export function freshOutput(name: string, files: Record<string, string | Buffer> = {}): { out: string; workspace: string } {
  const out = path.join(ROOT, 'test-output', name);
  const workspace = path.join(out, 'workspace');
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(workspace, { recursive: true });
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(workspace, file)), { recursive: true });
    fs.writeFileSync(path.join(workspace, file), content);
  }
  return { out, workspace };
}

export interface EditorSessionOptions {
  /** test-output/<name>/: the workspace, code-server's data, the test's screenshots. */
  name: string;
  /**
   * How Draftline gets into the editor: `vsix`, packaged for linux-x64 and installed as a user would;
   * `development`, this folder's dist/ as the extension under development (`build`: bundled first).
   */
  extension: 'vsix' | 'development';
  build?: boolean;
  /** The workspace's files (path → content). */
  files?: Record<string, string | Buffer>;
  /** Runs once the output folder is fresh, before code-server starts (a workspace a script writes, a server to reach). */
  prepare?(paths: { out: string; workspace: string }): void | Promise<void>;
  /** code-server's settings, environment, keybindings…; a function when they depend on what `prepare` started. */
  server?: CodeServerExtras | (() => CodeServerExtras);
  viewport?: { width: number; height: number };
}

type CodeServerExtras = Omit<StartCodeServerOptions, 'workspaceDir' | 'outDir' | 'vsixPaths'>;

export interface EditorSession {
  readonly out: string;
  readonly workspace: string;
  readonly server: CodeServer;
  readonly wb: Workbench;
  readonly page: Page;
  /** Draftline's log so far (its output channel's files under code-server's user data). */
  log(): string;
}

/** Starts the editor before the suite and closes it after; call it inside the describe(). */
export function editorSession(options: EditorSessionOptions): EditorSession {
  const out = path.join(ROOT, 'test-output', options.name);
  const workspace = path.join(out, 'workspace');
  let server: CodeServer | undefined;
  let wb: Workbench | undefined;
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the editor session has not started (use it inside its describe)');
    return value;
  };
  before(async () => {
    freshOutput(options.name, options.files);
    await options.prepare?.({ out, workspace });
    const vsixPaths: string[] = [];
    if (options.extension === 'vsix') {
      const vsix = path.join(out, 'draftline-linux-x64.vsix');
      execFileSync('node', ['scripts/package.mjs', '--target', 'linux-x64', '--out', vsix], { cwd: ROOT, stdio: 'ignore' });
      vsixPaths.push(vsix);
    } else if (options.build) {
      execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT, stdio: 'ignore' });
    }
    const extras = typeof options.server === 'function' ? options.server() : options.server;
    server = await startCodeServer({ ...extras, workspaceDir: workspace, outDir: path.join(out, 'server'), vsixPaths });
    wb = await openWorkbench(server, {
      folder: workspace,
      ...(options.extension === 'development' ? { extensionDevelopmentPath: ROOT } : {}),
      ...(options.viewport ? { viewport: options.viewport } : {}),
    });
  });
  after(async () => {
    await closeWorkbench(wb);
    await server?.stop();
  });
  return {
    out,
    workspace,
    get server() {
      return started(server);
    },
    get wb() {
      return started(wb);
    },
    get page() {
      return started(wb).page;
    },
    log: () =>
      draftlineLogs(started(server).userDataDir)
        .map((f) => fs.readFileSync(f, 'utf8'))
        .join('\n'),
  };
}
