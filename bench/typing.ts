// The typing regime: a user typing, one character at a time, a completion asked at every keystroke,
// shallow in a file and deep in files over 10,000 characters, far enough to cross a step of the
// editor's window and several of the prompt's line blocks. What each keystroke evaluates, how soon
// its first token comes, with the cache shifted when the prompt's head moves and without (a fresh
// evaluation then), both sessions fed the same keystrokes in one run.
import type { EngineDocument } from '../src/engine/completionEngine';
import type { InferenceSession } from '../src/inference/inferenceSession';
import { WINDOW_START_STEP } from '../src/prompt/documentWindow';
import type { CompletionRequest, LocalCompletionResult } from '../src/shared/completion';
import { type BenchSessionOptions, benchSession } from './engineView';
import { fmt, median, percentile, Progress } from './stats';
import type { SourceFile } from './corpus';
import { lineOf, lineStarts } from '../src/nextEdit/textLines';

export type Depth = 'shallow' | 'deep';
export const SHIFTS = ['shift', 'fresh'] as const;
export type ShiftChoice = (typeof SHIFTS)[number];

/** A stretch of typing: `typed` characters of the file's own text, typed from `start` on. */
export interface TypingRun {
  file: string;
  depth: Depth;
  start: number;
  typed: number;
}

export interface KeystrokeFigures {
  evaluated: number[];
  shifted: number;
  ttftMs: number[];
  keystrokes: number;
  /** Keystrokes whose prompt was shifted into place (shift sessions only). */
  shiftedKeystrokes: number;
}

export interface TypingRow {
  depth: Depth;
  shift: ShiftChoice;
  keystrokes: number;
  evaluatedP50: number | null;
  evaluatedP90: number | null;
  evaluatedMax: number;
  ttftMedianMs: number | null;
  ttftP90Ms: number | null;
  shiftedKeystrokes: number;
}

/** Deep runs start past the editor's default prefix window (3,000 characters) and cross one of its steps. */
const DEEP_FROM = 8000;
const SHALLOW_AT = 1200;
export const MIN_FILE_CHARS = 10_000;

/** The runs: per file over MIN_FILE_CHARS, a shallow one and a deep one starting at a line's start. */
export function typingRuns(files: readonly SourceFile[], count: number, typed: number): TypingRun[] {
  const big = files.filter((f) => f.text.length >= MIN_FILE_CHARS + typed).slice(0, count);
  const lineStartAfter = (text: string, at: number) => text.indexOf('\n', at) + 1;
  return big.flatMap((f) => {
    // Deep: a little before a window step, so that the typed stretch crosses it.
    const step = Math.ceil((DEEP_FROM - 3000) / WINDOW_START_STEP) * WINDOW_START_STEP + 3000 - typed / 3;
    return [
      { file: f.name, depth: 'shallow' as const, start: lineStartAfter(f.text, SHALLOW_AT), typed },
      { file: f.name, depth: 'deep' as const, start: lineStartAfter(f.text, step), typed },
    ];
  });
}

/** The document the editor would show after `count` characters of the run were typed: the file up to there, then the file's rest after the typed stretch. */
function documentAt(text: string, run: TypingRun, count: number): EngineDocument {
  const end = run.start + run.typed;
  const doc = text.slice(0, run.start + count) + text.slice(end);
  const starts = lineStarts(doc);
  return {
    uri: `bench:${run.file}`,
    languageId: 'typescript',
    offset: run.start + count,
    tabSize: 2,
    insertSpaces: true,
    length: doc.length,
    slice: (s, e) => doc.slice(s, e),
    lineAt: (offset) => lineOf(starts, offset),
  };
}

export interface TypingResult {
  rows: TypingRow[];
  /** Completions at keystrokes whose prompt was shifted, and how many of them equal the fresh session's at the same keystroke. */
  afterShift: { completions: number; identical: number; firstLineIdentical: number };
}

export async function regimeTyping(files: readonly SourceFile[], runs: TypingRun[], pair: { target: string; draft: string }, opts: BenchSessionOptions): Promise<TypingResult> {
  const sessions = {} as Record<ShiftChoice, { session: InferenceSession; build: (doc: EngineDocument) => CompletionRequest }>;
  for (const shift of SHIFTS) {
    const { session, engine } = await benchSession(pair, { ...opts, models: { shiftPromptCache: shift === 'shift' } });
    sessions[shift] = { session, build: (doc) => ({ ...(engine.buildRequest(doc) as CompletionRequest), mode: 'hybrid' }) };
  }
  const figures = new Map<string, KeystrokeFigures>();
  const key = (depth: Depth, shift: ShiftChoice) => `${depth}/${shift}`;
  for (const depth of ['shallow', 'deep'] as Depth[]) for (const shift of SHIFTS) figures.set(key(depth, shift), { evaluated: [], shifted: 0, ttftMs: [], keystrokes: 0, shiftedKeystrokes: 0 });
  const afterShift = { completions: 0, identical: 0, firstLineIdentical: 0 };
  const progress = new Progress(runs.length * SHIFTS.length, 'typing');
  const texts = new Map(files.map((f) => [f.name, f.text]));
  for (const [i, run] of runs.entries()) {
    const text = texts.get(run.file)!;
    const outputs = {} as Record<ShiftChoice, LocalCompletionResult[]>;
    // Alternate which session types first, so that neither always meets the warmer machine.
    for (const shift of i % 2 === 0 ? SHIFTS : [...SHIFTS].reverse()) {
      const { session, build } = sessions[shift];
      await session.resetCaches();
      const f = figures.get(key(run.depth, shift))!;
      outputs[shift] = [];
      for (let count = 0; count <= run.typed; count++) {
        const r = await session.complete(build(documentAt(text, run, count)));
        outputs[shift].push(r);
        // The first request of a run evaluates its whole prompt: the run's cold start, not a keystroke.
        if (count === 0) continue;
        f.keystrokes++;
        f.evaluated.push(r.stats.promptTokensEvaluated ?? r.stats.promptTokens - r.stats.reusedPromptTokens);
        f.ttftMs.push(r.stats.timeToFirstTokenMs);
        if (r.stats.shiftedPromptTokens) {
          f.shiftedKeystrokes++;
          f.shifted += r.stats.shiftedPromptTokens;
        }
      }
      progress.tick(`${run.depth} ${shift}`);
    }
    for (const [k, r] of outputs.shift.entries()) {
      if (!r.stats.shiftedPromptTokens) continue;
      const fresh = outputs.fresh[k]!;
      afterShift.completions++;
      if (r.text === fresh.text) afterShift.identical++;
      if (r.text.split('\n', 1)[0] === fresh.text.split('\n', 1)[0]) afterShift.firstLineIdentical++;
    }
  }
  for (const shift of SHIFTS) await sessions[shift].session.dispose();
  const rows: TypingRow[] = [];
  for (const depth of ['shallow', 'deep'] as Depth[]) {
    for (const shift of SHIFTS) {
      const f = figures.get(key(depth, shift))!;
      rows.push({
        depth,
        shift,
        keystrokes: f.keystrokes,
        evaluatedP50: median(f.evaluated),
        evaluatedP90: percentile(f.evaluated, 0.9),
        evaluatedMax: Math.max(0, ...f.evaluated),
        ttftMedianMs: median(f.ttftMs),
        ttftP90Ms: percentile(f.ttftMs, 0.9),
        shiftedKeystrokes: f.shiftedKeystrokes,
      });
    }
  }
  return { rows, afterShift };
}

export function typingTable(r: TypingResult): string {
  const lines = [
    '| cursor | moved head | keystrokes | prompt tokens evaluated p50 / p90 / max | time to first token median / p90 (ms) | keystrokes shifted |',
    '|---|---|---|---|---|---|',
    ...r.rows.map(
      (row) =>
        `| ${row.depth} | ${row.shift === 'shift' ? 'shifted' : 'evaluated afresh'} | ${row.keystrokes} | ${fmt(row.evaluatedP50, 0)} / ${fmt(row.evaluatedP90, 0)} / ${row.evaluatedMax} | ${fmt(row.ttftMedianMs)} / ${fmt(row.ttftP90Ms)} | ${row.shiftedKeystrokes} |`,
    ),
  ];
  const ttft = (depth: Depth, shift: ShiftChoice) => r.rows.find((row) => row.depth === depth && row.shift === shift)?.ttftMedianMs ?? null;
  const ratio = (shift: ShiftChoice) => {
    const deep = ttft('deep', shift);
    const shallow = ttft('shallow', shift);
    return deep !== null && shallow ? `${fmt(deep / shallow, 2)}x` : '-';
  };
  const a = r.afterShift;
  lines.push(
    '',
    `Time to first token, deep / shallow (medians): ${ratio('shift')} with the shift, ${ratio('fresh')} evaluating afresh.`,
    `Completions right after a shift: ${a.completions}; the same text as the fresh session's at that keystroke: ${a.identical} (${a.completions ? fmt((100 * a.identical) / a.completions, 0) : '-'}%), the same first line: ${a.firstLineIdentical}.`,
  );
  return lines.join('\n');
}
