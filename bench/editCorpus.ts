// The `edits` regime's own corpus (issue #39): real next edits, the hunks between consecutive
// versions of npm packages that ship hand-written source. A case is one hunk as the next edit, the
// hunks before it in its file as the history (unified diffs, oldest first), and the window of
// WINDOW_LINES lines around it as the editable region; the same shape as ../shared/nes-cases/, so
// one loader serves both corpora. Tarballs are fetched once with `npm pack` into bench/cache.
//
// The packages are outside both embedded models' training corpora (../shared/models/README.md,
// recipe/RECIPE.md and recipe/gpu/README.md: the listed packages and their whole dependency trees,
// resolved with `npm install --package-lock-only` on 2026-11-25: 1,035 packages, none of these),
// outside the packages held out for evaluation (named by hash in recipe/gpu/build_corpus.py) and
// outside CORPUS_PACKAGES (bench/corpus.ts). bench/test/unit/editCorpus.test.ts checks the lists.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { structuredPatch } from 'diff';
import type { NesCase } from '../testbed/nesCases';
import { CACHE } from './corpus';

/**
 * `name@from..to`, consecutive releases. Chosen for source shipped as written or compiled file by
 * file by tsc (readable, one module a file: src/*.ts where the package ships it, else its .js and
 * .d.ts), small releases (fixes, a feature), and a spread of styles: query builders, state
 * libraries, functional libraries, a parser, a server toolkit, a state machine library.
 */
export const EDIT_PAIRS = [
  'kysely@0.29.7..0.29.8',
  'kysely@0.29.8..0.29.9',
  'jotai@2.19.1..2.20.0',
  'jotai@2.20.2..2.20.3',
  '@tanstack/query-core@5.105.1..5.105.2',
  'fp-ts@2.16.6..2.16.7',
  'io-ts@2.2.17..2.2.18',
  'io-ts@2.2.20..2.2.21',
  'valtio@2.2.0..2.3.0',
  'xstate@5.32.6..5.33.0',
  'yaml@2.8.1..2.8.2',
  'yaml@2.8.3..2.8.4',
  '@tanstack/table-core@9.2.6..9.2.8',
  '@tanstack/table-core@9.2.8..9.3.1',
  'h3@1.15.6..1.15.7',
];

/** Lines in the editable region (the issue's measurement: 21, ~233 Qwen2 tokens). */
export const WINDOW_LINES = 21;
/** A hunk changing more lines than this (on either side) is too big to be one next edit in the window. */
export const MAX_EDIT_LINES = 12;
/** History kept per case: the most recent hunks of the file before the edit. */
export const MAX_HISTORY = 8;
/** Cases kept per pair, evenly spaced over its hunks in file order. */
export const CASES_PER_PAIR = 27;

/** One next-edit case: the shape of ../shared/nes-cases/*.json (their loader's type, without its optional grading fields). */
export type EditCase = Pick<NesCase, 'id' | 'source' | 'language' | 'path' | 'events' | 'before' | 'cursorOffset' | 'regionStart' | 'regionEnd' | 'expected'>;

export interface EditPair {
  name: string;
  from: string;
  to: string;
}

export function parsePair(spec: string): EditPair {
  const m = /^(@?[^@]+)@([^.][^ ]*?)\.\.(.+)$/.exec(spec);
  if (!m) throw new Error(`edit pair "${spec}": write name@from..to`);
  return { name: m[1]!, from: m[2]!, to: m[3]! };
}

const SOURCE_EXT = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;

export function languageOf(file: string): string {
  return /\.(ts|tsx|mts|cts)$/.test(file) ? 'typescript' : 'javascript';
}

/** Whether a file reads as written by hand (not minified or bundled into long lines). */
function readable(text: string): boolean {
  const lines = text.split('\n');
  return text.length <= 200_000 && lines.length >= 5 && text.length / lines.length <= 90 && !lines.some((l) => l.length > 400);
}

/**
 * The files a package version contributes, path -> text (LF line ends, a final newline): its source
 * files, only those under src/ when it ships its TypeScript sources there (the compiled twins would
 * repeat every edit).
 */
export function selectFiles(files: ReadonlyMap<string, string>): Map<string, string> {
  // UMD and SystemJS builds wrap the same modules again.
  const paths = [...files.keys()].filter((p) => SOURCE_EXT.test(p) && !/\.min\.|(^|\/)(node_modules|umd|system)\//.test(p));
  const hasSrc = paths.some((p) => /^src\/.*\.tsx?$/.test(p) && !p.endsWith('.d.ts'));
  const out = new Map<string, string>();
  for (const p of paths.sort()) {
    if (hasSrc && !p.startsWith('src/')) continue;
    let text = files.get(p)!.replace(/\r\n/g, '\n');
    if (!text.endsWith('\n')) text += '\n';
    if (readable(text)) out.set(p, text);
  }
  return out;
}

const linesOf = (text: string) => text.slice(0, -1).split('\n');
const textOf = (lines: readonly string[]) => (lines.length ? `${lines.join('\n')}\n` : '');

/** A unified diff of one file's change, headers as in ../shared/nes-cases (`--- a/path`, `+++ b/path`), 3 lines of context. */
export function unifiedDiff(file: string, oldText: string, newText: string): string {
  const patch = structuredPatch(`a/${file}`, `b/${file}`, oldText, newText, undefined, undefined, { context: 3 });
  let out = `--- a/${file}\n+++ b/${file}\n`;
  for (const h of patch.hunks) {
    out += `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@\n`;
    for (const line of h.lines) out += `${line}\n`;
  }
  return out;
}

/** One change of a file: old lines [start, start + oldCount) replaced by `newLines` (coordinates of the old file). */
interface Change {
  start: number;
  oldCount: number;
  newLines: string[];
}

/** The file's diff hunks (unified, 3 lines of context), each trimmed to its changed lines. */
function changesOf(oldText: string, newText: string): Change[] {
  const patch = structuredPatch('a', 'b', oldText, newText, undefined, undefined, { context: 3 });
  return patch.hunks.map((h) => {
    const lines = h.lines.filter((l) => !l.startsWith('\\'));
    const first = lines.findIndex((l) => l[0] === '-' || l[0] === '+');
    let last = lines.length - 1;
    while (last > first && lines[last]![0] === ' ') last--;
    const core = lines.slice(first, last + 1);
    // oldStart is 1-based, or the line before an insertion when the hunk removes nothing (oldLines 0).
    const oldFirst = h.oldLines === 0 ? h.oldStart : h.oldStart - 1;
    return {
      start: oldFirst + lines.slice(0, first).length,
      oldCount: core.filter((l) => l[0] !== '+').length,
      newLines: core.filter((l) => l[0] !== '-').map((l) => l.slice(1)),
    };
  });
}

/**
 * The cases of one file's change between two versions, in order: hunk k is the next edit of the
 * file with hunks 0..k-1 already made (the last MAX_HISTORY of them are the history). The region is
 * WINDOW_LINES whole lines with the edit's lines in the middle (clamped to the file); the cursor is
 * at the end of the previous edit when that lies in the region, else on the edit's first line (its
 * first non-blank character). Skipped: hunks larger than MAX_EDIT_LINES, that change only
 * whitespace, or whose lines are over 400 characters.
 */
export function fileCases(opts: { source: string; idPrefix: string; file: string; oldText: string; newText: string }): EditCase[] {
  return keyedFileCases(opts).map((x) => x.editCase);
}

/** fileCases, each with its edit's key (the old and new lines, trimmed): twins in compiled copies share it. */
function keyedFileCases(opts: { source: string; idPrefix: string; file: string; oldText: string; newText: string }): { editCase: EditCase; key: string }[] {
  const { file } = opts;
  const changes = changesOf(opts.oldText, opts.newText);
  const cases: { editCase: EditCase; key: string }[] = [];
  let lines = linesOf(opts.oldText);
  let delta = 0;
  const events: string[] = [];
  let previousEnd: { line: number; column: number } | null = null;
  changes.forEach((change, k) => {
    const start = change.start + delta;
    const oldLines = lines.slice(start, start + change.oldCount);
    const before = textOf(lines);
    const afterLines = [...lines.slice(0, start), ...change.newLines, ...lines.slice(start + change.oldCount)];
    const huge = change.oldCount > MAX_EDIT_LINES || change.newLines.length > MAX_EDIT_LINES;
    const whitespaceOnly = oldLines.join('\n').replace(/\s+/g, '') === change.newLines.join('\n').replace(/\s+/g, '');
    const long = [...oldLines, ...change.newLines].some((l) => l.length > 400);
    if (!huge && !whitespaceOnly && !long && lines.length > 0) {
      const n = lines.length;
      const r0 = Math.max(0, Math.min(start - Math.floor((WINDOW_LINES - change.oldCount) / 2), n - WINDOW_LINES));
      const r1 = Math.min(n, r0 + WINDOW_LINES);
      const offsetOfLine = (line: number) => lines.slice(0, line).reduce((sum, l) => sum + l.length + 1, 0);
      const regionStart = offsetOfLine(r0);
      const regionEnd = offsetOfLine(r1);
      const expected = textOf([...lines.slice(r0, start), ...change.newLines, ...lines.slice(start + change.oldCount, r1)]);
      let cursorOffset: number;
      if (previousEnd && previousEnd.line >= r0 && previousEnd.line < r1) cursorOffset = offsetOfLine(previousEnd.line) + previousEnd.column;
      else {
        const line = Math.min(start, n - 1);
        cursorOffset = offsetOfLine(line) + (/^\s*/.exec(lines[line]!)?.[0].length ?? 0);
      }
      const key = `${oldLines.map((l) => l.trim()).join('\n')}\u0000${change.newLines.map((l) => l.trim()).join('\n')}`;
      const editCase: EditCase = {
        id: `${opts.idPrefix}:${file}#${k}`,
        source: opts.source,
        language: languageOf(file),
        path: file,
        events: events.slice(-MAX_HISTORY),
        before,
        cursorOffset,
        regionStart,
        regionEnd,
        expected,
      };
      cases.push({ editCase, key });
    }
    // The user makes this edit: it joins the history of the next.
    events.push(unifiedDiff(file, before, textOf(afterLines)));
    const lastNew = change.newLines.length ? start + change.newLines.length - 1 : Math.max(0, start - 1);
    previousEnd = { line: lastNew, column: afterLines[lastNew]?.length ?? 0 };
    lines = afterLines;
    delta += change.newLines.length - change.oldCount;
  });
  return cases;
}

/**
 * The cases of a pair of package versions (path -> text of each; files in one version only are
 * left out, as whole-file edits), files in path order; an edit seen already in the pair (the same
 * old and new lines, trimmed, as in a compiled twin: CommonJS beside ESM, .d.ts beside .d.mts) is
 * kept once; then at most `perPair`, evenly spaced.
 */
export function casesFromVersions(pair: EditPair, oldFiles: ReadonlyMap<string, string>, newFiles: ReadonlyMap<string, string>, perPair = CASES_PER_PAIR): EditCase[] {
  const a = selectFiles(oldFiles);
  const b = selectFiles(newFiles);
  const label = `${pair.name}@${pair.from}..${pair.to}`;
  const seen = new Set<string>();
  const all: EditCase[] = [];
  for (const [file, oldText] of a) {
    const newText = b.get(file);
    if (newText === undefined || newText === oldText) continue;
    for (const { editCase, key } of keyedFileCases({ source: `npm:${label}`, idPrefix: label, file, oldText, newText })) {
      if (seen.has(key)) continue;
      seen.add(key);
      all.push(editCase);
    }
  }
  if (all.length <= perPair) return all;
  return Array.from({ length: perPair }, (_, i) => all[Math.floor((i * all.length) / perPair)]!);
}

const EDIT_CACHE = path.join(CACHE, 'edit-corpus');
export const EDIT_TARBALLS = path.join(EDIT_CACHE, 'tarballs');

/** The file name `npm pack` gives a version's tarball (`@scope/name` -> `scope-name-1.2.3.tgz`). */
export const tarballName = (name: string, version: string) => `${name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`;

/** The package version's files (path -> text), `npm pack`ed once into bench/cache/edit-corpus (a tarball already there, as in the bench kit, is used as it is). */
export function packageVersionFiles(name: string, version: string): Map<string, string> {
  const dir = path.join(EDIT_CACHE, 'unpacked', `${name.replace('/', '+')}@${version}`);
  if (!fs.existsSync(path.join(dir, '.done'))) {
    fs.mkdirSync(EDIT_TARBALLS, { recursive: true });
    let tarball = path.join(EDIT_TARBALLS, tarballName(name, version));
    if (!fs.existsSync(tarball)) {
      const out = execFileSync('npm', ['pack', `${name}@${version}`, '--json', '--pack-destination', EDIT_TARBALLS], { cwd: EDIT_TARBALLS, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      tarball = path.join(EDIT_TARBALLS, path.basename((JSON.parse(out) as { filename: string }[])[0]!.filename));
    }
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    execFileSync('tar', ['-xzf', tarball, '-C', dir, '--strip-components=1']);
    fs.writeFileSync(path.join(dir, '.done'), '');
  }
  const files = new Map<string, string>();
  const walk = (sub: string) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true }).sort((x, y) => x.name.localeCompare(y.name))) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (SOURCE_EXT.test(entry.name)) files.set(rel, fs.readFileSync(path.join(dir, rel), 'utf8'));
    }
  };
  walk('');
  return files;
}

/** Every case of `pairs` (EDIT_PAIRS by default), in their order; fetches what bench/cache lacks. */
export function editCases(pairs: readonly string[] = EDIT_PAIRS, perPair = CASES_PER_PAIR): EditCase[] {
  return pairs.flatMap((spec) => {
    const pair = parsePair(spec);
    return casesFromVersions(pair, packageVersionFiles(pair.name, pair.from), packageVersionFiles(pair.name, pair.to), perPair);
  });
}

// Bundled into the bench kit's run.js, require.main === module holds there too: the script's own name decides.
if (require.main === module && /editCorpus\.[cm]?[tj]s$/.test(process.argv[1] ?? '')) {
  // npx tsx bench/editCorpus.ts [pair ...]: fetch and count.
  const pairs = process.argv.length > 2 ? process.argv.slice(2) : EDIT_PAIRS;
  for (const spec of pairs) {
    const pair = parsePair(spec);
    const all = casesFromVersions(pair, packageVersionFiles(pair.name, pair.from), packageVersionFiles(pair.name, pair.to), Number.POSITIVE_INFINITY);
    const files = new Set(all.map((c) => c.path));
    console.log(`${spec}: ${all.length} hunks as cases in ${files.size} files -> ${Math.min(all.length, CASES_PER_PAIR)} kept; ${[...files].slice(0, 4).join(', ')}`);
  }
}
