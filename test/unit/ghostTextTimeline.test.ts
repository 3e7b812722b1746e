// Issue #27 item 1: where the time between an edit and its ghost text goes (stats/ghostTextTimeline.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeSlowGhostText, SLOW_GHOST_TEXT_MS, timelineRows, totalMs } from '../../src/stats/ghostTextTimeline';
import { ModelReadiness, NOT_READY_CAUSES } from '../../src/stats/modelReadiness';
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
    assert.equal(describeSlowGhostText({ askedAfterEditMs: null, answeredInMs: 1_500, fromCache: true }), 'slow ghost text: Draftline answered from the cache in 1.5 s');
  });

  it('Show Stats has the two steps of the last ghost text', () => {
    const t = { askedAfterEditMs: 12, answeredInMs: 3, fromCache: true };
    assert.deepEqual(timelineRows(t), ['| VS Code asked, after the edit reached Draftline | 12 ms |', '| Draftline answered, after VS Code asked | 3 ms (from the cache) |']);
    const report = statsReport(new StatsCollector(), 'hybrid', null, undefined, undefined, t);
    assert.ok(report.includes('## The last ghost text, in the editor'));
    assert.ok(report.includes(timelineRows(t)[0]!));
    assert.ok(!statsReport(new StatsCollector(), 'hybrid', null).includes('in the editor'));
  });

  it('after a worker crash, the wait for the restart and the model load is said to be that, not the editor', () => {
    // A 30-line file: the edit at 1.0 s, the worker crashed at 1.1 s and served again at 7.2 s; VS
    // Code asked again (the controller's trigger once the models were back) at 7.25 s.
    let now = 0;
    const readiness = new ModelReadiness(() => now);
    now = 500;
    readiness.ready();
    now = 1_100;
    readiness.notReady(NOT_READY_CAUSES.workerRestart);
    now = 7_200;
    readiness.ready();
    const waited = readiness.notReadyBetween(1_000, 7_250);
    assert.deepEqual(waited, { ms: 6_100, cause: NOT_READY_CAUSES.workerRestart });
    const line = describeSlowGhostText({ askedAfterEditMs: 6_250, answeredInMs: 450, waitMs: 150, modelMs: 300, fromCache: false, waitedForModels: waited! });
    assert.ok(line);
    assert.doesNotMatch(line, /editor was busy/);
    assert.match(
      line,
      /^slow ghost text: 6\.7 s from the edit reaching Draftline to the answer: most of it waiting for the models \(the inference worker restarting after a crash and loading the models again: 6\.1 s\), after which VS Code asked again — VS Code asked 6\.3 s after the edit \(6\.1 s of it waiting for the inference worker restarting/,
    );
  });

  it('a short wait for the models is told apart from a busy editor that took the rest', () => {
    const line = describeSlowGhostText({ askedAfterEditMs: 9_000, answeredInMs: 500, fromCache: false, waitedForModels: { ms: 1_000, cause: NOT_READY_CAUSES.loading } });
    assert.ok(line);
    assert.match(line, /: most of it before VS Code asked \(the editor was busy/);
    assert.match(line, /VS Code asked 9\.0 s after the edit \(1\.0 s of it waiting for the models loading\)/);
  });

  it('the models ready throughout: no wait is theirs; a span keeps the cause it began with', () => {
    let now = 0;
    const readiness = new ModelReadiness(() => now);
    now = 2_000;
    readiness.ready();
    assert.equal(readiness.notReadyBetween(2_500, 4_000), null);
    assert.deepEqual(readiness.notReadyBetween(1_500, 4_000), { ms: 500, cause: NOT_READY_CAUSES.loading });
    now = 5_000;
    readiness.notReady(NOT_READY_CAUSES.workerRestart);
    now = 5_500;
    // The load that follows the crash failed too: still the crash's wait.
    readiness.notReady(NOT_READY_CAUSES.loadFailed);
    now = 8_000;
    // Still down: the wait counts up to the moment asked about.
    assert.deepEqual(readiness.notReadyBetween(4_000, 8_000), { ms: 3_000, cause: NOT_READY_CAUSES.workerRestart });
  });

  it("Show Stats' steps name the wait for the models", () => {
    const rows = timelineRows({ askedAfterEditMs: 6_250, answeredInMs: 450, fromCache: false, waitedForModels: { ms: 6_100, cause: NOT_READY_CAUSES.workerRestart } });
    assert.deepEqual(rows[1], `| of which waiting for the models (${NOT_READY_CAUSES.workerRestart}) | 6.1 s |`);
  });
});
