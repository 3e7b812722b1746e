// npm run bench:startup [-- --vsix a.vsix,b.vsix] [--runs N]
// Cold start in a real VS Code (code-server + chromium): from the extension's activation to "models
// loaded", read from the extension's own log timestamps, for a first window and for a second window
// opened while the first is still open. Each run starts from fresh user data (first run after
// install), the OS page cache warm (as after a reboot's first use it would not be: see the README).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeWorkbench, e2eUnavailableReason, openFile, openWorkbench, repoRoot, startCodeServer, waitFor, type CodeServer } from '../testbed/editorHarness';
import { median } from './stats';

const ROOT = repoRoot();
const argv = process.argv.slice(2);
const opt = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};

interface WindowStartup {
  /** activate() to models loaded, as the extension's "ready N ms after activation" line says (older versions: from the log's clock). */
  activationToReadyMs: number;
  /** The worker's breakdown line, when this version logs one. */
  breakdown: string;
}

/** Log lines of VS Code's LogOutputChannel: "2026-11-23 04:17:05.123 [info] text". */
function logEvents(file: string): { at: number; text: string }[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \[\w+\] (.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ at: Date.parse(`${m[1].replace(' ', 'T')}Z`), text: m[2] }));
}

/** Every Draftline log file of this server (one per window: each window has its own extension host). */
function draftlineLogs(server: CodeServer): string[] {
  const found: string[] = [];
  const visit = (dir: string) => {
    for (const e of fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }) : []) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) visit(p);
      else if (/Draftline\.log$/.test(e.name)) found.push(p);
    }
  };
  visit(path.join(server.userDataDir, 'logs'));
  return found.sort();
}

function startupOf(file: string): WindowStartup | undefined {
  const events = logEvents(file);
  const start = events.find((e) => e.text.startsWith('loading models (startup)'));
  // The extension's own "ready" line; versions before it had only the worker's "loaded" line (a
  // window that finds its models loaded in the shared worker has no such line).
  const ready = events.find((e) => /^ready \d+ ms after activation/.test(e.text)) ?? events.find((e) => /^loaded .* on \w+/.test(e.text));
  if (!start || !ready) return undefined;
  const shared = /already loaded in the shared worker/.test(ready.text) ? 'models already loaded in the shared worker' : '';
  // The extension's own clock from activate() (the first log line comes a little later).
  const own = /^ready (\d+) ms after activation/.exec(ready.text);
  return { activationToReadyMs: own ? Number(own[1]) : ready.at - start.at, breakdown: shared || (/(headers [^)]*)\)?$/.exec(ready.text)?.[1] ?? '') };
}

async function measure(vsix: string, run: number): Promise<WindowStartup[]> {
  const outDir = path.join(ROOT, 'test-output', 'startup', `${path.basename(vsix, '.vsix')}-${run}`);
  fs.rmSync(outDir, { recursive: true, force: true });
  const workspaceDir = path.join(outDir, 'workspace');
  fs.mkdirSync(workspaceDir, { recursive: true });
  fs.writeFileSync(path.join(workspaceDir, 'example.ts'), 'export function average(values: number[]): number {\n  \n}\n');
  const server = await startCodeServer({ workspaceDir, outDir, vsixPaths: [vsix] });
  const windows: WindowStartup[] = [];
  const workbenches: Awaited<ReturnType<typeof openWorkbench>>[] = [];
  try {
    for (let w = 0; w < 2; w++) {
      const wb = await openWorkbench(server);
      workbenches.push(wb);
      await openFile(wb.page, 'example.ts');
      const got = await waitFor(
        () => {
          const logs = draftlineLogs(server);
          return logs.length > w ? startupOf(logs[w]) : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 250, what: `window ${w + 1} models loaded` },
      );
      windows.push(got);
      // The first window stays open while the second starts (two windows of one editor).
    }
  } finally {
    // Both browsers: a renderer left running would load the machine in every later run.
    for (const wb of workbenches) await closeWorkbench(wb);
    await server.stop();
  }
  return windows;
}

async function main() {
  const reason = e2eUnavailableReason();
  if (reason) throw new Error(reason);
  const vsixes = opt('vsix', '').split(',').filter(Boolean);
  if (vsixes.length === 0) throw new Error('--vsix a.vsix[,b.vsix] (build with npm run package)');
  const runs = Number(opt('runs', '3'));
  const rows: string[] = ['| package | window | activation to models loaded, median ms (runs) | breakdown (last run) |', '|---|---|---|---|'];
  for (const vsix of vsixes) {
    const all: WindowStartup[][] = [];
    for (let r = 0; r < runs; r++) {
      all.push(await measure(path.resolve(vsix), r));
      process.stderr.write(
        `${path.basename(vsix)} run ${r + 1}: ${all
          .at(-1)!
          .map((w) => w.activationToReadyMs)
          .join(' / ')} ms\n`,
      );
    }
    for (const w of [0, 1]) {
      const ms = all.map((a) => a[w].activationToReadyMs);
      rows.push(`| ${path.basename(vsix)} | ${w === 0 ? 'first' : 'second (first still open)'} | ${median(ms)} (${ms.join(', ')}) | ${all.at(-1)![w].breakdown || '-'} |`);
    }
  }
  console.log(rows.join('\n'));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
