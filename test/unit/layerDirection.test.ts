// Issue #49 item 3: layers point one way. Every src folder has a place in ONE ordered table of
// layers (LAYERS, top first); a file may import its own layer or one below it, never one above, and
// the folders may not import each other in a cycle (same layer or not). Type-only imports count the
// same: a type that a lower layer needs belongs at or below that layer. A src folder missing from the
// table fails too, so a new folder gets its place when it is made. Files may not import each other in a
// cycle either, type-only or not. (The process boundary, what may
// reach node-llama-cpp, is test/integration/hostBoundary.test.ts.)
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { filesUnder, relativeImports } from '../support/relativeImports';

export interface Layer {
  name: string;
  /** Folders under src/ (a subfolder may sit in another layer than its parent; src/ keeps each folder in one). */
  folders: string[];
  why: string;
}

/** Top first: a layer may import only itself and the layers after it. */
export const LAYERS: Layer[] = [
  { name: 'editor', folders: ['vscode', 'statsView'], why: "VS Code's API, commands and webviews: the one place that may import 'vscode'; nothing imports it." },
  {
    name: 'engine',
    folders: ['engine', 'nextEditSession'],
    why: 'What the editor does, without the editor: the completion engine, and the next-edit session (its state machine, shapes, chains and stats) over the core next-edit code.',
  },
  { name: 'backend', folders: ['backend', 'remote'], why: "The seam the engine calls: Draftline's own worker (through its client) or an inference server over HTTP." },
  { name: 'worker', folders: ['worker'], why: 'The inference process and its client: protocol, scheduling, the shared worker; it runs inference.' },
  { name: 'inference', folders: ['inference'], why: "node-llama-cpp sessions, loads and downloads, inside the worker only, through the library's public API." },
  {
    name: 'llama',
    folders: ['llama'],
    why: "Everything below node-llama-cpp's public API: its private fields and lock (the direct decode, the native and device reads, the sequence evaluator) and the native addon on llama.cpp's C API (llama/native/). A node-llama-cpp upgrade touches this folder and nothing else.",
  },
  {
    name: 'settings & stats',
    folders: ['settings', 'stats'],
    why: "Plain TS every process reads: the declared settings (the worker's defaults) and the stats and status texts (the worker's load log).",
  },
  { name: 'models', folders: ['models'], why: 'Which models exist and where they lie: catalog, download index, embedded pair; no process of its own.' },
  {
    name: 'core',
    folders: ['nextEdit', 'speculation', 'stopping', 'prompt', 'postprocess', 'ngram', 'gguf'],
    why: 'Algorithms on plain data: decoding, prompts, post-processing, next edits (formats, edit history, output to edits), GGUF reading.',
  },
  { name: 'shared', folders: ['shared'], why: 'The plain data types that cross IPC: they import nothing of src.' },
];

export interface Edge {
  /** Both paths relative to src/, with '/'. */
  from: string;
  to: string;
}

/** The table entry (folder) a file belongs to: the longest folder of the table that holds it. */
export function folderOf(file: string, layers: Layer[]): string | undefined {
  let best: string | undefined;
  for (const folder of layers.flatMap((l) => l.folders)) {
    if (file.startsWith(`${folder}/`) && (!best || folder.length > best.length)) best = folder;
  }
  return best;
}

export interface Findings {
  /** "from → to (layer → higher layer)" for each import of a higher layer. */
  upward: string[];
  /** One line per cycle between folders: the folders, and one import that makes each step. */
  cycles: string[];
  /** One line per cycle between files (within a folder or across): the files. */
  fileCycles: string[];
  /** Files (or folders) that no table entry holds. */
  unplaced: string[];
}

/** What is wrong with these imports under this table. */
export function checkLayers(edges: Edge[], layers: Layer[], files: string[] = []): Findings {
  const rank = new Map<string, number>();
  layers.forEach((layer, i) => {
    for (const folder of layer.folders) rank.set(folder, i);
  });
  const unplaced = new Set<string>();
  const upward: string[] = [];
  /** folder → imported folder → one import that does it. */
  const graph = new Map<string, Map<string, Edge>>();
  const fileGraph = new Map<string, Map<string, Edge>>();
  for (const file of files) if (!folderOf(file, layers)) unplaced.add(file);
  for (const edge of edges) {
    const from = folderOf(edge.from, layers);
    const to = folderOf(edge.to, layers);
    if (!fileGraph.has(edge.from)) fileGraph.set(edge.from, new Map());
    fileGraph.get(edge.from)!.set(edge.to, edge);
    if (!from) unplaced.add(edge.from);
    if (!to) unplaced.add(edge.to);
    if (!from || !to || from === to) continue;
    const a = rank.get(from)!;
    const b = rank.get(to)!;
    if (b < a) upward.push(`${edge.from} → ${edge.to} (${layers[a].name} imports ${layers[b].name})`);
    if (!graph.has(from)) graph.set(from, new Map());
    if (!graph.get(from)!.has(to)) graph.get(from)!.set(to, edge);
  }
  return { upward, cycles: cyclesOf(graph, true), fileCycles: cyclesOf(fileGraph, false), unplaced: [...unplaced].sort() };
}

/** The strongly connected groups (Tarjan), each written as its members and, for folders, the imports between them. */
function cyclesOf(graph: Map<string, Map<string, Edge>>, withSteps: boolean): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[] = [];
  let next = 0;
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const group: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length < 2) return;
    if (!withSteps) return void found.push(group.sort().join(' ⇄ '));
    const members = new Set(group);
    const steps = group.flatMap((f) => [...(graph.get(f) ?? new Map<string, Edge>())].filter(([to]) => members.has(to)).map(([, e]) => `${e.from} → ${e.to}`));
    found.push(`${group.sort().join(' ⇄ ')}: ${steps.sort().join('; ')}`);
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

const SRC = path.resolve(__dirname, '../../src');
const rel = (file: string) => path.relative(SRC, file).split(path.sep).join('/');

/** Every relative import of every src file that lands in src (type-only, re-exports and import() included). */
function srcImports(files: string[]): Edge[] {
  return files.flatMap((file) =>
    relativeImports(file).flatMap(({ specifier, target }) => {
      assert.ok(target, `${rel(file)}: cannot resolve ${specifier}`);
      return target.startsWith(SRC + path.sep) && target.endsWith('.ts') ? [{ from: rel(file), to: rel(target) }] : [];
    }),
  );
}

describe('the checker', () => {
  const layers: Layer[] = [
    { name: 'top', folders: ['app'], why: '' },
    { name: 'middle', folders: ['engine', 'app/core', 'cache'], why: '' },
    { name: 'bottom', folders: ['base'], why: '' },
  ];

  it('passes imports that point down or stay in their layer', () => {
    const edges = [
      { from: 'app/main.ts', to: 'engine/run.ts' },
      { from: 'engine/run.ts', to: 'cache/lru.ts' },
      { from: 'app/core/x.ts', to: 'base/types.ts' },
      { from: 'app/main.ts', to: 'app/core/x.ts' },
    ];
    assert.deepEqual(checkLayers(edges, layers, ['app/main.ts']), { upward: [], cycles: [], fileCycles: [], unplaced: [] });
  });

  it('fails an upward import, type-only or not, naming both files', () => {
    const found = checkLayers([{ from: 'base/types.ts', to: 'engine/run.ts' }], layers);
    assert.deepEqual(found.upward, ['base/types.ts → engine/run.ts (bottom imports middle)']);
  });

  it('places a subfolder by its own entry, not its parent’s', () => {
    assert.equal(folderOf('app/core/deep/x.ts', layers), 'app/core');
    assert.deepEqual(checkLayers([{ from: 'app/core/x.ts', to: 'app/main.ts' }], layers).upward, ['app/core/x.ts → app/main.ts (middle imports top)']);
  });

  it('fails a cycle between folders of one layer', () => {
    const found = checkLayers(
      [
        { from: 'engine/run.ts', to: 'cache/lru.ts' },
        { from: 'cache/lru.ts', to: 'engine/types.ts' },
      ],
      layers,
    );
    assert.deepEqual(found.upward, []);
    assert.deepEqual(found.cycles, ['cache ⇄ engine: cache/lru.ts → engine/types.ts; engine/run.ts → cache/lru.ts']);
    assert.deepEqual(found.fileCycles, []);
  });

  it('fails a cycle between files of one folder (a type-only one too)', () => {
    const found = checkLayers(
      [
        { from: 'engine/run.ts', to: 'engine/cache.ts' },
        { from: 'engine/cache.ts', to: 'engine/run.ts' },
      ],
      layers,
    );
    assert.deepEqual(found, { upward: [], cycles: [], fileCycles: ['engine/cache.ts ⇄ engine/run.ts'], unplaced: [] });
  });

  it('fails a file in a folder the table does not name', () => {
    assert.deepEqual(checkLayers([{ from: 'app/main.ts', to: 'extras/x.ts' }], layers, ['extras/y.ts']).unplaced, ['extras/x.ts', 'extras/y.ts']);
  });
});

describe('src/ layers point one way', () => {
  const files = filesUnder(SRC, /\.ts$/);
  const edges = srcImports(files);

  it('reads the whole tree', () => {
    assert.ok(files.length > 100, `found only ${files.length} files`);
    assert.ok(edges.length > 300, `found only ${edges.length} imports`);
  });

  it('every src folder with TypeScript has a place in the table, and every table folder exists', () => {
    const findings = checkLayers([], LAYERS, files.map(rel));
    assert.deepEqual(findings.unplaced, [], 'add these folders to LAYERS (test/unit/layerDirection.test.ts), with why they sit there');
    const stale = LAYERS.flatMap((l) => l.folders).filter((f) => !fs.existsSync(path.join(SRC, f)));
    assert.deepEqual(stale, [], 'LAYERS names folders that are gone');
  });

  it('no file imports a layer above its own', () => {
    assert.deepEqual(checkLayers(edges, LAYERS).upward, []);
  });

  it('no folders import each other in a cycle', () => {
    assert.deepEqual(checkLayers(edges, LAYERS).cycles, []);
  });

  it('no files import each other in a cycle', () => {
    assert.deepEqual(checkLayers(edges, LAYERS).fileCycles, []);
  });
});
