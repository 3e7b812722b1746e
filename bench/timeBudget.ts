// Regime time-budget (`npm run bench -- --regimes time-budget`): the time budget
// (draftline.timeBudgetMs) on a slow target, side by side in one run: each task completed without a
// budget and with one, in turn (the order rotated per task), each from the same KV cache (the spot
// one character earlier completed just before, untimed, as in the editor). Measured: the time to
// ghost text (the model request, post-processing included; the editor adds its debounce), the lines
// shown, and that the budgeted ghost text's tokens are the start of the whole one's (lossless).
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS } from '../src/engine/completionEngine';
import { DEFAULT_SPECULATION } from '../src/inference/inferenceSession';
import type { LoadedModelsInfo } from '../src/shared/backendInfo';
import type { CompletionRequest } from '../src/shared/completion';
import type { ModelSettings } from '../src/shared/settings';
import type { BenchTask } from './corpus';
import { loadBenchSession } from './decodePath';
import { engineDocument, shownText } from './engineView';
import { fmt, median, percentile, Progress } from './stats';

export const TIME_BUDGET_ARMS = ['no budget', 'budget'] as const;
export type TimeBudgetArm = (typeof TIME_BUDGET_ARMS)[number];

export interface TimeBudgetRun {
  task: number;
  arm: TimeBudgetArm;
  /** Request to ghost text (the model request and post-processing), ms. */
  ms: number;
  /** Of it, the prompt's evaluation (to the first token). */
  ttftMs: number;
  tokens: number;
  /** Lines of the ghost text with code on them. */
  linesShown: number;
  /** Lines with code the model wrote (before post-processing, which cuts a random model's text further). */
  linesWritten: number;
  chars: number;
  stopReason: string;
  /** The budgeted run's tokens are the first of the run without one (null for that run itself). */
  prefixOfWhole: boolean | null;
}

export interface TimeBudgetOptions {
  target: string;
  threads: number;
  gpu: ModelSettings['gpu'];
  flashAttention: ModelSettings['flashAttention'];
  budgetMs: number;
  maxTokens: number;
  log: (level: string, message: string) => void;
}

/** Lines with code in a ghost text. */
export const linesWithCode = (text: string): number => text.split('\n').filter((line) => line.trim() !== '').length;

export async function regimeTimeBudget(tasks: BenchTask[], opts: TimeBudgetOptions): Promise<{ info: LoadedModelsInfo; runs: TimeBudgetRun[] }> {
  const session = await loadBenchSession(
    { targetModel: opts.target, draftModel: '', gpu: opts.gpu, gpuLayers: 'auto', threads: opts.threads, contextSize: 2048, flashAttention: opts.flashAttention },
    DEFAULT_SPECULATION,
    opts.log,
  );
  // The editor's request (the default mode: speculation on, here without a draft), the budget set per arm.
  const engine = new CompletionEngine(
    { complete: () => Promise.reject(new Error('unused')) },
    { ...DEFAULT_ENGINE_SETTINGS, maxTokens: opts.maxTokens, maxPrefixChars: 1500, maxSuffixChars: 400, timeBudgetMs: 0 },
  );
  const runs: TimeBudgetRun[] = [];
  const progress = new Progress(tasks.length * TIME_BUDGET_ARMS.length, `time budget (${session.info.target.name})`);
  try {
    for (const [index, task] of tasks.entries()) {
      const doc = engineDocument(task);
      const request = engine.buildRequest(doc) as CompletionRequest;
      session.documents.setDocument(doc.uri, task.text);
      const earlier = { ...request, prefix: request.prefix.slice(0, -1), maxTokens: 1 };
      const order = TIME_BUDGET_ARMS.map((_, i) => TIME_BUDGET_ARMS[(i + index) % TIME_BUDGET_ARMS.length]!);
      const byArm = new Map<TimeBudgetArm, { run: TimeBudgetRun; tokens: readonly number[] }>();
      for (const arm of order) {
        // Each arm from the same cache: the prompt up to one character earlier evaluated, untimed.
        await session.complete(earlier);
        const t0 = performance.now();
        const result = await session.complete(arm === 'budget' ? { ...request, timeBudgetMs: opts.budgetMs } : request);
        const shown = shownText(result.text, request, doc, engine.settings.maxLines).text;
        const ms = performance.now() - t0;
        const s = result.stats;
        byArm.set(arm, {
          run: {
            task: task.id,
            arm,
            ms,
            ttftMs: s.timeToFirstTokenMs,
            tokens: s.generatedTokens,
            linesShown: linesWithCode(shown),
            linesWritten: linesWithCode(result.text),
            chars: shown.length,
            stopReason: s.stopReason,
            prefixOfWhole: null,
          },
          tokens: result.tokens,
        });
        progress.tick();
      }
      const whole = byArm.get('no budget')!;
      const budgeted = byArm.get('budget')!;
      budgeted.run.prefixOfWhole = budgeted.tokens.every((token, i) => token === whole.tokens[i]);
      runs.push(whole.run, budgeted.run);
    }
  } finally {
    await session.dispose();
  }
  return { info: session.info, runs };
}

export interface TimeBudgetSummary {
  arm: TimeBudgetArm;
  tasks: number;
  msMedian: number | null;
  msP90: number | null;
  ttftMedian: number | null;
  tokensMedian: number | null;
  linesMedian: number | null;
  linesMean: number | null;
  linesWrittenMean: number | null;
  /** Tasks with a ghost text (any line with code). */
  withGhostText: number;
  endedByBudget: number;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

export function summarizeTimeBudget(runs: readonly TimeBudgetRun[]): TimeBudgetSummary[] {
  return TIME_BUDGET_ARMS.map((arm) => {
    const rs = runs.filter((r) => r.arm === arm);
    const lines = rs.map((r) => r.linesShown);
    return {
      arm,
      tasks: rs.length,
      msMedian: median(rs.map((r) => r.ms)),
      msP90: percentile(
        rs.map((r) => r.ms),
        0.9,
      ),
      ttftMedian: median(rs.map((r) => r.ttftMs)),
      tokensMedian: median(rs.map((r) => r.tokens)),
      linesMedian: median(lines),
      linesMean: mean(lines),
      linesWrittenMean: mean(rs.map((r) => r.linesWritten)),
      withGhostText: rs.filter((r) => r.linesShown > 0).length,
      endedByBudget: rs.filter((r) => r.stopReason === 'timeBudget').length,
    };
  });
}

/** The section of report.md and what results.json keeps; `violations`: budgeted runs whose tokens are not the start of the whole run's. */
export function timeBudgetReport(r: { info: LoadedModelsInfo; runs: TimeBudgetRun[] }, opts: Pick<TimeBudgetOptions, 'budgetMs' | 'maxTokens' | 'threads'> & { targetNote: string }) {
  const rows = summarizeTimeBudget(r.runs);
  // The tasks the budget can act on: those whose whole completion took longer than the budget.
  const long = new Set(r.runs.filter((x) => x.arm === 'no budget' && x.ms > opts.budgetMs).map((x) => x.task));
  const longRows = summarizeTimeBudget(r.runs.filter((x) => long.has(x.task)));
  const violations = r.runs.filter((x) => x.prefixOfWhole === false).length;
  const ratio = (a: number | null, b: number | null) => (a !== null && b !== null && b > 0 ? `${(a / b).toFixed(2)}x` : '-');
  const table = (summaries: TimeBudgetSummary[]) => [
    '| arm | tasks | time to ghost text, median / p90 | prompt (to first token), median | tokens, median | lines shown, median (mean) | lines written, mean | with ghost text | ended by the budget |',
    '|---|---|---|---|---|---|---|---|---|',
    ...summaries.map(
      (x) =>
        `| ${x.arm} | ${x.tasks} | ${fmt(x.msMedian, 0)} / ${fmt(x.msP90, 0)} ms | ${fmt(x.ttftMedian, 0)} ms | ${fmt(x.tokensMedian, 0)} | ${fmt(x.linesMedian, 1)} (${fmt(x.linesMean, 1)}) | ${fmt(x.linesWrittenMean, 1)} | ${x.withGhostText} | ${x.endedByBudget} |`,
    ),
  ];
  const compare = (summaries: TimeBudgetSummary[]) => {
    const [none, budget] = summaries as [TimeBudgetSummary, TimeBudgetSummary];
    return `time to ghost text ${ratio(budget.msMedian, none.msMedian)} (median), ${ratio(budget.msP90, none.msP90)} (p90); lines shown ${ratio(budget.linesMean, none.linesMean)}, lines written ${ratio(budget.linesWrittenMean, none.linesWrittenMean)} (means)`;
  };
  const budgeted = rows.find((x) => x.arm === 'budget')!;
  const md = [
    `## Time budget: ${r.info.target.name} (${opts.targetNote}), ${opts.threads} thread${opts.threads === 1 ? '' : 's'}, budget ${opts.budgetMs} ms, max ${opts.maxTokens} tokens`,
    '',
    'All tasks:',
    '',
    ...table(rows),
    '',
    `With the budget against without, side by side: ${compare(rows)}.`,
    '',
    `The ${long.size} task${long.size === 1 ? '' : 's'} whose whole completion took longer than the budget (the others end before it: a short completion, a single line, the end of the block):`,
    '',
    ...(long.size ? [...table(longRows), '', `With the budget against without: ${compare(longRows)}.`, ''] : []),
    `Budgeted ghost texts that are the start of the whole one, token for token: ${r.runs.filter((x) => x.prefixOfWhole === true).length}/${budgeted.tasks}.`,
    '',
    'Time to ghost text: the model request (the prompt from the KV cache of the spot one character earlier, completed untimed just before, as in the editor) and post-processing; the editor adds its debounce. Lines shown: lines with code in the ghost text after post-processing; lines written: before it.',
    '',
  ];
  return { md, json: { models: r.info, budgetMs: opts.budgetMs, maxTokens: opts.maxTokens, rows, longTasks: [...long], longRows, runs: r.runs, violations }, violations };
}
