// A next-edit model that cannot serve gives the same answer after every pause: said once in the log,
// shown in the status bar tooltip and Show Stats while it lasts (src/nextEditSession/modelProblem.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NextEditModelProblem } from '../../src/nextEditSession/modelProblem';
import { NextEditStats } from '../../src/nextEditSession/stats';

const notDownloaded = { reason: 'error' as const, detail: 'Next-edit model not downloaded: hf:sweepai/sweep-next-edit-1.5B (no network)' };
const noFormat = { reason: 'noFormat' as const, detail: 'draftline-code-target.gguf names no next-edit format' };

describe('a next-edit model that cannot serve', () => {
  it('is logged once, again only when the problem changes or comes back after the model served', () => {
    const problem = new NextEditModelProblem();
    const logged = [notDownloaded, notDownloaded, notDownloaded, noFormat, noFormat].map((answer) => problem.answered(answer));
    assert.deepEqual(logged, [true, false, false, true, false]);
    assert.equal(problem.problem, `noFormat: ${noFormat.detail}`);
    // The model decoded and found nothing to change: its own line, and the problem is over.
    assert.equal(problem.answered({ reason: 'unchanged', detail: 'the model kept the region' }), true);
    assert.equal(problem.problem, null);
    assert.equal(problem.answered(noFormat), true, 'back after the model served: said again');
    assert.equal(problem.answered(undefined), true);
    assert.equal(problem.problem, null, 'an answer with edits ends it');
  });

  it('every answer about the edit itself is logged, however often it repeats', () => {
    const problem = new NextEditModelProblem();
    const unparseable = { reason: 'unparseable' as const, detail: 'markers missing' };
    assert.deepEqual([problem.answered(unparseable), problem.answered(unparseable)], [true, true]);
  });

  it('the status bar tooltip and Show Stats say what stops next edits while it lasts', () => {
    const stats = new NextEditStats();
    stats.requested();
    stats.nothingToSuggest('error');
    stats.modelProblem.answered(notDownloaded);
    assert.equal(stats.tooltipLine(), `Next edits: no suggestions (error: ${notDownloaded.detail})`);
    assert.equal(Object.fromEntries(stats.section().rows)['no suggestions while the model cannot serve'], `error: ${notDownloaded.detail}`);
    stats.modelProblem.answered(undefined);
    assert.match(stats.tooltipLine() ?? '', /^Next edits: 0 shown/);
    assert.equal(Object.fromEntries(stats.section().rows)['no suggestions while the model cannot serve'], undefined);
  });
});
