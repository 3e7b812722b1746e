// The time-budget regime's figures (bench/timeBudget.ts) on hand-made runs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { linesWithCode, summarizeTimeBudget, type TimeBudgetRun, timeBudgetReport } from '../../timeBudget';

const run = (task: number, arm: TimeBudgetRun['arm'], ms: number, linesShown: number, over: Partial<TimeBudgetRun> = {}): TimeBudgetRun => ({
  task,
  arm,
  ms,
  ttftMs: 100,
  tokens: 10,
  linesShown,
  linesWritten: linesShown + 1,
  chars: 20,
  stopReason: arm === 'budget' ? 'timeBudget' : 'maxTokens',
  prefixOfWhole: arm === 'budget' ? true : null,
  ...over,
});

describe('the time-budget regime', () => {
  it('counts the lines with code a ghost text shows', () => {
    assert.deepEqual(['', 'a', 'a\n', 'a\n\n  b();\n  ', '\n  x'].map(linesWithCode), [0, 1, 1, 2, 1]);
  });

  it('sums up each arm, and the report puts them side by side with their ratios', () => {
    const runs = [run(1, 'no budget', 6000, 5), run(1, 'budget', 1200, 2), run(2, 'no budget', 7000, 4), run(2, 'budget', 1400, 1, { stopReason: 'eos' })];
    const [none, budget] = summarizeTimeBudget(runs);
    assert.deepEqual([none!.msMedian, none!.linesMean, none!.endedByBudget], [6500, 4.5, 0]);
    assert.deepEqual([budget!.msMedian, budget!.linesMean, budget!.endedByBudget], [1300, 1.5, 1]);
    const report = timeBudgetReport({ info: { target: { name: 'random-target-1.5b-lines' } } as never, runs }, { budgetMs: 1000, maxTokens: 64, threads: 1, targetNote: 'random, 1.5B-shaped' });
    assert.equal(report.violations, 0);
    const text = report.md.join('\n');
    assert.match(text, /\| no budget \| 2 \| 6500 \/ 7000 ms \|/);
    assert.match(text, /time to ghost text 0\.20x \(median\)/);
    assert.match(text, /lines shown 0\.33x, lines written 0\.45x \(means\)/);
    assert.match(text, /The 2 tasks whose whole completion took longer than the budget/);
    assert.match(text, /the start of the whole one, token for token: 2\/2/);
  });

  it('a budgeted ghost text that is not the start of the whole one is a violation; the long tasks are reported apart', () => {
    const runs = [run(1, 'no budget', 6000, 5), run(1, 'budget', 1200, 2, { prefixOfWhole: false }), run(2, 'no budget', 300, 1), run(2, 'budget', 300, 1, { stopReason: 'eos' })];
    const report = timeBudgetReport({ info: { target: { name: 'x' } } as never, runs }, { budgetMs: 1000, maxTokens: 64, threads: 1, targetNote: '' });
    assert.equal(report.violations, 1);
    assert.deepEqual(report.json.longTasks, [1], 'only the task whose whole completion took longer than the budget');
  });
});
