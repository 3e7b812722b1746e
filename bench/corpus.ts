// Real source files nobody on the team wrote and the embedded models never saw (their training
// packages are listed in models/README.md): a pinned set of npm packages installed into a cache.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mulberry32 } from '../testbed/ggufWriter';
import { firstContentLineEnd } from './quality';

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

export type CursorKind = 'mid-line' | 'end-of-line' | 'empty-line-in-block' | 'before-auto-closed';

export interface BenchTask {
  id: number;
  file: string;
  kind: CursorKind;
  offset: number;
  /**
   * The document as the editor shows it at the cursor: the file without the text the user is about
   * to write (the first `hiddenChars` of `truth`). The engine windows it exactly as the extension does.
   */
  text: string;
  /**
   * The file's own continuation after the cursor (up to 400 characters), hidden part included: what
   * completions are scored against, and what the model-free n-gram bound replays.
   */
  truth: string;
  /** How much of `truth` is missing from `text`: the rest of the first line with content. */
  hiddenChars: number;
  /**
   * before-auto-closed only: what the editor inserted after the cursor by itself (the closers of the
   * brackets and the quote open at the cursor on its line, innermost first), in `text` at `offset`
   * in place of the hidden rest of the line.
   */
  autoClosed?: string;
}

/** The file as it is on disk: the document with the hidden continuation put back at the cursor. */
export function fileTextOf(task: BenchTask): string {
  return task.text.slice(0, task.offset) + task.truth.slice(0, task.hiddenChars) + task.text.slice(task.offset + (task.autoClosed?.length ?? 0));
}

/**
 * Cursor positions sampled with a fixed seed, the three kinds in turn. The text to write next is
 * taken out of the document (else the ideal completion is empty, the model can copy the answer from
 * the suffix, and the post-processing trims a right answer away as a repeat of the suffix): the rest
 * of the first line with content after the cursor, as `firstContentLineEnd` (bench/quality.ts) cuts it.
 * - mid-line: inside a line's text; the rest of that line is to be written.
 * - end-of-line: at the end of a line; the next line with content is to be written.
 * - empty-line-in-block: on an indented line left empty but for its indentation (as after Enter in
 *   a block); the line that belongs there is to be written.
 */
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
    const indent = /^\s*/.exec(line)![0];
    let offset: number;
    if (kind === 'mid-line') {
      const trimmed = line.trimStart();
      if (trimmed.length < 12) continue;
      offset = lineStart + indent.length + 4 + Math.floor(rand() * (trimmed.length - 8));
    } else if (kind === 'end-of-line') {
      if (line.trim().length < 4) continue;
      offset = lineStart + line.length;
    } else {
      if (!indent || line.trim().length === 0) continue;
      offset = lineStart + indent.length;
    }
    const continuation = file.text.slice(offset);
    const hiddenChars = firstContentLineEnd(continuation);
    // Nothing left to write, or more than the truth keeps (lines are under 400 characters: rare).
    if (continuation.slice(0, hiddenChars).trim() === '' || hiddenChars > 400) continue;
    const text = file.text.slice(0, offset) + continuation.slice(hiddenChars);
    tasks.push({ id: tasks.length, file: file.name, kind, offset, text, truth: continuation.slice(0, 400), hiddenChars });
  }
  return tasks;
}

const CLOSER_OF: Record<string, string> = { '(': ')', '[': ']', '{': '}' };

/**
 * The closers still owed at each offset of a line that balances on itself (every bracket and quote
 * it opens it closes), innermost first: what an editor that auto-closes pairs shows after the cursor
 * there while the line is typed left to right. Null for a line that does not balance or that a
 * simple scan cannot read (template literals, comments, regular expressions, escapes).
 */
export function owedClosers(line: string): string[] | null {
  if (/[`\\/]/.test(line)) return null;
  const owed: string[] = [];
  const stack: string[] = [];
  for (const char of line) {
    owed.push([...stack].reverse().join(''));
    const quote = stack[stack.length - 1] === '"' || stack[stack.length - 1] === "'";
    if (quote) {
      if (char === stack[stack.length - 1]) stack.pop();
    } else if (char === '"' || char === "'") stack.push(char);
    else if (CLOSER_OF[char]) stack.push(CLOSER_OF[char]!);
    else if (char === ')' || char === ']' || char === '}') {
      if (stack.pop() !== char) return null;
    }
  }
  return stack.length === 0 ? owed : null;
}

/** The innermost closer a before-auto-closed task's editor inserted: the groups its tasks rotate over. */
export type AutoClosedKind = ')' | ']' | '}' | 'quote';
export const AUTO_CLOSED_KINDS: readonly AutoClosedKind[] = [')', ']', '}', 'quote'];
export const autoClosedKindOf = (autoClosed: string): AutoClosedKind => (autoClosed[0] === '"' || autoClosed[0] === "'" ? 'quote' : (autoClosed[0] as AutoClosedKind));

/**
 * before-auto-closed tasks (issue #41): the cursor inside a line, where the editor shows after it only
 * what it auto-closed for the brackets and quote open there (`if (n === 0|)`, `[a, |]`, `{ a: |}`,
 * `'|'`): the most common place a person types in. The rest of the real line is what is to be
 * written; the document shows the auto-closed characters in its place, as the editor would. The
 * innermost closer rotates over `)`, `]`, `}` and a quote. Sampled with their own seed, after the
 * other kinds, so adding them leaves those tasks as they were; ids go on from `firstId`.
 */
export function sampleAutoClosedTasks(files: SourceFile[], count: number, seed: number, firstId = 0): BenchTask[] {
  const rand = mulberry32(seed);
  const tasks: BenchTask[] = [];
  let guard = 0;
  while (tasks.length < count && guard++ < count * 2000) {
    const file = files[Math.floor(rand() * files.length)]!;
    const want = AUTO_CLOSED_KINDS[tasks.length % AUTO_CLOSED_KINDS.length]!;
    const lines = file.text.split('\n');
    const li = 3 + Math.floor(rand() * Math.max(1, lines.length - 6));
    const line = lines[li];
    // Not in a comment's text (a JSDoc line): nobody's editor auto-closes there as in code.
    if (line === undefined || line.trim().length < 8 || /^\s*\*/.test(line)) continue;
    const owed = owedClosers(line);
    if (!owed) continue;
    const indent = line.length - line.trimStart().length;
    // Cursors inside the line's text with something owed, whose innermost closer is the kind wanted,
    // and with more to write than the closers themselves.
    const cursors: number[] = [];
    for (let c = indent + 1; c < line.length; c++) {
      const closers = owed[c]!;
      if (closers !== '' && autoClosedKindOf(closers) === want && line.slice(c) !== closers) cursors.push(c);
    }
    if (!cursors.length) continue;
    const column = cursors[Math.floor(rand() * cursors.length)]!;
    const lineStart = lines.slice(0, li).reduce((n, l) => n + l.length + 1, 0);
    const offset = lineStart + column;
    const autoClosed = owed[column]!;
    const hiddenChars = line.length - column;
    const text = file.text.slice(0, offset) + autoClosed + file.text.slice(lineStart + line.length);
    tasks.push({ id: firstId + tasks.length, file: file.name, kind: 'before-auto-closed', offset, text, truth: file.text.slice(offset, offset + 400), hiddenChars, autoClosed });
  }
  return tasks;
}
