// Real source files nobody on the team wrote and the embedded models never saw (their training
// packages are listed in models/README.md): a pinned set of npm packages installed into a cache.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { documentWindow } from '../src/prompt/documentWindow';
import { mulberry32 } from '../test/support/ggufWriter';

export const CORPUS_PACKAGES = ['preact@11.2.0', 'immer@11.2.10', 'hono@4.13.19', 'valibot@1.5.0', 'zustand@5.1.0', 'mitt@3.0.1'];

export const CACHE = path.resolve(__dirname, 'cache');

export function ensureCorpus(): string {
  const dir = path.join(CACHE, 'corpus');
  const marker = path.join(dir, `.installed-${CORPUS_PACKAGES.join(',').replace(/[@/]/g, '_')}`);
  if (!fs.existsSync(marker)) {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"draftline-bench-corpus","private":true}\n');
    process.stderr.write(`installing the benchmark corpus: ${CORPUS_PACKAGES.join(' ')}\n`);
    execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--omit=peer', ...CORPUS_PACKAGES], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    fs.writeFileSync(marker, new Date().toISOString());
  }
  return path.join(dir, 'node_modules');
}

export interface SourceFile {
  name: string;
  text: string;
}

export function sourceFiles(root: string): SourceFile[] {
  const files: SourceFile[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== '.bin') walk(full);
      } else if (/\.(ts|tsx|js|mjs|cjs|jsx)$/.test(entry.name) && !/\.d\.[cm]?ts$|\.min\./.test(entry.name)) {
        const text = fs.readFileSync(full, 'utf8');
        // Skip minified or generated bundles: long lines mean nobody wrote it like that.
        const lines = text.split('\n');
        if (text.length < 800 || text.length > 200_000 || lines.some((l) => l.length > 400)) continue;
        files.push({ name: path.relative(root, full), text });
      }
    }
  };
  walk(root);
  return files;
}

export type CursorKind = 'mid-line' | 'end-of-line' | 'empty-line-in-block';

export interface BenchTask {
  id: number;
  file: string;
  kind: CursorKind;
  offset: number;
  /** The whole document and the cursor (the engine windows it exactly as the extension does). */
  text: string;
  /** The file's own continuation after the cursor (for the model-free n-gram bound). */
  truth: string;
}

/** Cursor positions sampled with a fixed seed, the three kinds in turn. */
export function sampleTasks(files: SourceFile[], count: number, seed: number): BenchTask[] {
  const rand = mulberry32(seed);
  const kinds: CursorKind[] = ['mid-line', 'end-of-line', 'empty-line-in-block'];
  const tasks: BenchTask[] = [];
  let guard = 0;
  while (tasks.length < count && guard++ < count * 200) {
    const file = files[Math.floor(rand() * files.length)];
    const kind = kinds[tasks.length % kinds.length];
    const lines = file.text.split('\n');
    const li = 3 + Math.floor(rand() * Math.max(1, lines.length - 6));
    const line = lines[li];
    if (line === undefined) continue;
    const lineStart = lines.slice(0, li).reduce((n, l) => n + l.length + 1, 0);
    let offset: number;
    let text = file.text;
    if (kind === 'mid-line') {
      const trimmed = line.trimStart();
      if (trimmed.length < 12) continue;
      const indent = line.length - trimmed.length;
      offset = lineStart + indent + 4 + Math.floor(rand() * (trimmed.length - 8));
    } else if (kind === 'end-of-line') {
      if (line.trim().length < 4) continue;
      offset = lineStart + line.length;
    } else {
      // An empty line inside a block: insert one after a line that opens or continues a block.
      const indent = /^\s*/.exec(line)![0];
      if (!indent || line.trim().length === 0) continue;
      text = file.text.slice(0, lineStart + line.length + 1) + indent + '\n' + file.text.slice(lineStart + line.length + 1);
      offset = lineStart + line.length + 1 + indent.length;
    }
    tasks.push({ id: tasks.length, file: file.name, kind, offset, text, truth: text.slice(offset, offset + 400) });
  }
  return tasks;
}

export { documentWindow };
