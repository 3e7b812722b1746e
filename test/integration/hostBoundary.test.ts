// node-llama-cpp (native binaries, ESM with top-level await, hundreds of MB of address space) is
// loaded by the inference worker only: src/inference/, src/llama/ and src/worker/workerMain.ts, which
// the worker bundle runs. The extension host (src/vscode/extension.ts and everything it imports) must never
// reach it, model downloads included (they go through the worker's `download` method).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');
const SRC = path.join(ROOT, 'src');
const HOST_ENTRY = path.join(SRC, 'vscode/extension.ts');
const WORKER_ENTRY = path.join(SRC, 'worker/workerMain.ts');
/** Folders of host code (or code shared with the host): none of their files may import the runtime. */
const HOST_DIRS = ['vscode', 'engine', 'settings', 'stats', 'models', 'backend', 'remote', 'shared', 'prompt', 'postprocess'];
const WORKER_ONLY_DIRS = ['inference', 'llama'].map((d) => path.join(SRC, d) + path.sep);

const rel = (file: string) => path.relative(ROOT, file).split(path.sep).join('/');
const isRuntimePackage = (specifier: string) => /^@?node-llama-cpp(\/|$)/.test(specifier);
const isWorkerOnly = (file: string) => WORKER_ONLY_DIRS.some((dir) => file.startsWith(dir)) || file === WORKER_ENTRY;

interface Import {
  specifier: string;
  /** The source file a relative import resolves to (undefined for packages and node: modules). */
  file?: string;
}

/** Every import of a file: static, type-only, re-exports, import() and require(), read by TypeScript's own scanner. */
function importsOf(file: string): Import[] {
  if (!file.endsWith('.ts')) return [];
  const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
  return info.importedFiles.map(({ fileName: specifier }) => {
    if (!specifier.startsWith('.')) return { specifier };
    const base = path.resolve(path.dirname(file), specifier);
    const file_ = [`${base}.ts`, path.join(base, 'index.ts'), base].find((f) => fs.existsSync(f) && fs.statSync(f).isFile());
    assert.ok(file_, `${rel(file)}: cannot resolve ${specifier}`);
    return { specifier, file: file_ };
  });
}

/** The files reachable from an entry, and for each the import that first reached it. */
function importGraph(entry: string): Map<string, string[]> {
  const chains = new Map<string, string[]>([[entry, [rel(entry)]]]);
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const imported of importsOf(file)) {
      if (!imported.file || chains.has(imported.file)) continue;
      chains.set(imported.file, [...chains.get(file)!, rel(imported.file)]);
      queue.push(imported.file);
    }
  }
  return chains;
}

function tsFilesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? tsFilesUnder(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

/** The runtime imports of these files: node-llama-cpp itself, or any file of the worker only. */
function runtimeImports(files: Iterable<string>): string[] {
  const found: string[] = [];
  for (const file of files) {
    for (const imported of importsOf(file)) {
      if (isRuntimePackage(imported.specifier) || (imported.file && isWorkerOnly(imported.file))) found.push(`${rel(file)} imports '${imported.specifier}'`);
    }
  }
  return found;
}

describe('node-llama-cpp stays out of the extension host', () => {
  it('no file of the host folders imports node-llama-cpp, src/inference/ or src/llama/', () => {
    const files = HOST_DIRS.flatMap((d) => tsFilesUnder(path.join(SRC, d)));
    assert.ok(files.length > 30, `found only ${files.length} host files`);
    assert.deepEqual(runtimeImports(files), []);
  });

  it('nothing reachable from src/vscode/extension.ts imports it, directly or not', () => {
    const graph = importGraph(HOST_ENTRY);
    assert.ok(graph.has(path.join(SRC, 'vscode/modelDownloads.ts')) && graph.has(path.join(SRC, 'worker/workerClient.ts')), 'the walk follows the host imports');
    const reached = [...graph].filter(([file]) => isWorkerOnly(file)).map(([, chain]) => chain.join(' -> '));
    assert.deepEqual(reached, []);
    assert.deepEqual(runtimeImports(graph.keys()), []);
  });

  it('the same walk does find the runtime from the worker entry (the check is not vacuous)', () => {
    const graph = importGraph(WORKER_ENTRY);
    assert.ok(graph.has(path.join(SRC, 'inference/modelDownloader.ts')), 'the worker runs the downloader');
    assert.ok(runtimeImports(graph.keys()).some((i) => i.endsWith("imports 'node-llama-cpp'")));
  });

  // `npm test` (scripts/test.sh) builds with `node esbuild.mjs` before running the tests.
  it('the bundled host, dist/extension.js, contains no node-llama-cpp and no src/inference/ or src/llama/ code', () => {
    const bundle = path.join(ROOT, 'dist/extension.js');
    assert.ok(fs.existsSync(bundle), 'dist/extension.js is missing: run `node esbuild.mjs` (npm test does)');
    const sources = [...importGraph(HOST_ENTRY).keys(), path.join(ROOT, 'esbuild.mjs')];
    const newest = sources.reduce((a, b) => (fs.statSync(a).mtimeMs >= fs.statSync(b).mtimeMs ? a : b));
    assert.ok(fs.statSync(bundle).mtimeMs >= fs.statSync(newest).mtimeMs, `dist/extension.js is older than ${rel(newest)}: run \`node esbuild.mjs\` (npm test does)`);
    const text = fs.readFileSync(bundle, 'utf8');
    // Loading it, in any form esbuild writes (user-facing text may name the library: "node-llama-cpp's path").
    const load = /(?:require|import)\(\s*["'`]@?node-llama-cpp|from\s*["']@?node-llama-cpp/.exec(text);
    assert.equal(load, null, `dist/extension.js loads node-llama-cpp: …${load ? text.slice(Math.max(0, load.index - 120), load.index + 40) : ''}…`);
    // The source map names every file esbuild put into the bundle.
    const map = JSON.parse(fs.readFileSync(`${bundle}.map`, 'utf8')) as { sources: string[] };
    assert.ok(map.sources.some((s) => s.endsWith('src/vscode/extension.ts')));
    assert.deepEqual(
      map.sources.filter((s) => /(^|\/)src\/(inference|llama)\/|node-llama-cpp|src\/worker\/workerMain\.ts$/.test(s)),
      [],
    );
    // And the worker bundle does load it (with import(), kept external): the same text check would see it.
    assert.match(fs.readFileSync(path.join(ROOT, 'dist/worker.js'), 'utf8'), /import\("node-llama-cpp"\)/);
  });
});
