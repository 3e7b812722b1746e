// Issue #27 item 1: where the time between an edit and its ghost text goes (stats/ghostTextTimeline.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeSlowGhostText, SLOW_GHOST_TEXT_MS, timelineRows, totalMs } from '../../src/stats/ghostTextTimeline';
import { StatsCollector } from '../../src/stats/statsCollector';
import { statsReport } from '../../src/stats/statsReport';

describe('ghost-text timeline', () => {
  it('says nothing when the user waited less than the threshold', () => {
    assert.equal(describeSlowGhostText({ askedAfterEditMs: 300, answeredInMs: SLOW_GHOST_TEXT_MS - 301, waitMs: 150, modelMs: 500, fromCache: false }), null);
  });

  it("blames the editor when most of the wait came before VS Code asked, and gives Draftline's part split", () => {
    // The figures of the 3 MB minified file in code-server (test/e2e/bigFile.e2e.test.ts).
    const t = { askedAfterEditMs: 26_700, answeredInMs: 7_900, waitMs: 150, modelMs: 7_700, fromCache: false };
    assert.equal(totalMs(t), 34_600);
    const line = describeSlowGhostText(t);
    assert.ok(line);
    assert.match(line, /^slow ghost text: 34\.6 s from the edit reaching Draftline to the answer: most of it before VS Code asked/);
    assert.match(line, /VS Code asked 26\.7 s after the edit; Draftline answered in 7\.9 s \(150 ms waiting for typing to pause, 7.7 s in the model\)$/);
  });

  it('does not blame the editor when Draftline took most of it', () => {
    const line = describeSlowGhostText({ askedAfterEditMs: 40, answeredInMs: 2_600, waitMs: 150, modelMs: 2_450, fromCache: false });
    assert.ok(line);
    assert.doesNotMatch(line, /editor was busy/);
    assert.match(line, /VS Code asked 40 ms after the edit; Draftline answered in 2.6 s/);
  });

  it("without an edit (an explicit request) only Draftline's part is told", () => {
    assert.equal(describeSlowGhostText({ askedAfterEditMs: null, answeredInMs: 1_500, fromCache: true }), 'slow ghost text: Draftline answered from its cache in 1.5 s');
  });

  it('Show Stats has the two steps of the last ghost text', () => {
    const t = { askedAfterEditMs: 12, answeredInMs: 3, fromCache: true };
    assert.deepEqual(timelineRows(t), ['| VS Code asked, after the edit reached Draftline | 12 ms |', '| Draftline answered, after VS Code asked | 3 ms (from the cache) |']);
    const report = statsReport(new StatsCollector(), 'hybrid', null, undefined, undefined, t);
    assert.ok(report.includes('## The last ghost text, in the editor'));
    assert.ok(report.includes(timelineRows(t)[0]!));
    assert.ok(!statsReport(new StatsCollector(), 'hybrid', null).includes('in the editor'));
  });
});
