// Regime 6: extra context (issue #14). Plain decoding of one pair, per task, with and without
// chunks of the user's other code in the prompt, where the other code is what a user would have
// open: the files the task's file imports (relative imports, in order), then other files of its
// folder; each as the extension's ring keeps it (prompt/extraContextRing.ts: up to 64 lines).
// Quality against the file's own continuation, and the cost: prompt tokens and TTFT, cold (empty
// caches) and on a keystroke (the same spot one character earlier completed just before).
import * as path from 'node:path';
import { ExtraContextRing } from '../src/prompt/extraContextRing';
import type { CompletionRequest, ExtraContext } from '../src/shared/completion';
import type { BenchTask, SourceFile } from './corpus';
import { type BenchSessionOptions, benchSession, engineDocument, timedCompletion } from './engineView';
import { summarizeTimed, type TimedCompletion, type TimedSummary } from './quality';
import { Progress } from './stats';

/** Other files a task gets, at most. */
const CONTEXT_FILES = 4;
export const EXTRA_CONTEXT_TOKENS = 256;

type Variant = 'none' | 'extra';
type Case = 'cold' | 'keystroke';

interface Run extends TimedCompletion {
  task: number;
  variant: Variant;
  case: Case;
}

export interface ExtraContextRow extends TimedSummary {
  variant: Variant;
  case: Case;
}

const IMPORT = /(?:from\s+|import\s*\(\s*|require\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g;
const EXTENSIONS = ['', '.ts', '.tsx', '.js', '.mjs', '.cjs', '.jsx', '/index.ts', '/index.js', '/index.tsx'];

/** The files a user would have open next to `task.file`: its relative imports first, then its folder's other files. */
export function contextFilesFor(task: BenchTask, files: readonly SourceFile[], fileText: string): SourceFile[] {
  const byName = new Map(files.map((f) => [f.name, f]));
  const dir = path.posix.dirname(task.file);
  const chosen: SourceFile[] = [];
  const add = (f: SourceFile | undefined) => {
    if (f && f.name !== task.file && !chosen.includes(f) && chosen.length < CONTEXT_FILES) chosen.push(f);
  };
  for (const m of fileText.matchAll(IMPORT)) {
    const base = path.posix.normalize(path.posix.join(dir, m[1]));
    // TypeScript sources import './x.js' meaning './x.ts'.
    const stem = base.replace(/\.(m|c)?js$/, '');
    add(EXTENSIONS.map((ext) => byName.get(stem + ext) ?? byName.get(base + ext)).find(Boolean));
  }
  for (const f of files) if (path.posix.dirname(f.name) === dir) add(f);
  return chosen;
}

export async function regimeExtraContext(tasks: BenchTask[], files: readonly SourceFile[], fileTextOf: (t: BenchTask) => string, pair: { target: string; draft: string }, opts: BenchSessionOptions) {
  const { session, engine } = await benchSession(pair, opts);
  const runs: Run[] = [];
  const progress = new Progress(tasks.length * 2, `extra context (${session.info.target.name})`);
  let filesUsed = 0;
  for (const task of tasks) {
    const doc = engineDocument(task);
    const base = { ...(engine.buildRequest(doc) as CompletionRequest), mode: 'plain' as const };
    const ring = new ExtraContextRing();
    for (const f of contextFilesFor(task, files, fileTextOf(task))) ring.add(f.name, f.text, 0);
    filesUsed += ring.chunks.length;
    const extra: ExtraContext | undefined = ring.chunks.length ? { files: [...ring.chunks], path: task.file, repoName: task.file.split('/')[0], maxTokens: EXTRA_CONTEXT_TOKENS } : undefined;
    for (let i = 0; i < 2; i++) {
      const variant: Variant = (i + task.id) % 2 === 0 ? 'none' : 'extra';
      const request: CompletionRequest = variant === 'extra' ? { ...base, extraContext: extra } : base;
      const earlier = { ...request, prefix: request.prefix.slice(0, -1) };
      const measure = async (kase: Case) => {
        runs.push({ task: task.id, variant, case: kase, ...(await timedCompletion(session, request, doc, task, engine.settings.maxLines)) });
      };
      await session.resetCaches();
      await measure('cold');
      await session.resetCaches();
      await session.complete(earlier);
      await measure('keystroke');
      progress.tick(variant);
    }
  }
  const info = session.info;
  await session.dispose();
  const rows: ExtraContextRow[] = [];
  for (const kase of ['cold', 'keystroke'] as Case[]) {
    for (const variant of ['none', 'extra'] as Variant[]) rows.push({ variant, case: kase, ...summarizeTimed(runs.filter((r) => r.variant === variant && r.case === kase)) });
  }
  return { info, rows, runs, filesPerTask: filesUsed / tasks.length };
}
