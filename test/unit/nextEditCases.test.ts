// Every public next-edit case in ../shared/nes-cases (Zed's evals, Copilot's NES recordings, the NEP test
// set; read from there, never copied here): the expected region reduced to edits and applied to `before`
// gives `before` with the region replaced by `expected`, and the case's events parse as unified diffs
// the way the history and the prompt formats read them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unifiedDiff } from '../../src/nextEdit/editHistory';
import { hunkSides, hunksOnly, parseEvent, recountHunks } from '../../src/nextEdit/eventDiffs';
import { applyReplacements, reduceToEdits } from '../../src/nextEdit/outputToEdit';
import { loadNesCases, NES_CASES_DIR, nesCasesAvailable } from '../../testbed/nesCases';

const available = nesCasesAvailable();

describe('public next-edit cases', { skip: available ? false : `no cases at ${NES_CASES_DIR} (../shared/nes-cases is absent in this checkout)` }, () => {
  const cases = available ? loadNesCases() : [];

  it('loads every case with the README fields', () => {
    assert.equal(cases.length, 246);
    for (const c of cases) {
      assert.ok(c.regionStart >= 0 && c.regionStart <= c.regionEnd && c.regionEnd <= c.before.length, c.id);
      assert.ok(c.cursorOffset >= 0 && c.cursorOffset <= c.before.length, c.id);
      assert.ok(Array.isArray(c.events) && typeof c.expected === 'string', c.id);
    }
  });

  it('reduces each expected region to edits that give the expected text, all inside the region', () => {
    let edits = 0;
    let unchanged = 0;
    for (const c of cases) {
      const region = c.before.slice(c.regionStart, c.regionEnd);
      const reduced = reduceToEdits(region, c.expected, c.regionStart);
      for (const e of reduced) assert.ok(e.start >= c.regionStart && e.end <= c.regionEnd, `${c.id}: edit [${e.start}, ${e.end}) inside the region`);
      const want = c.before.slice(0, c.regionStart) + c.expected + c.before.slice(c.regionEnd);
      assert.equal(applyReplacements(c.before, reduced), want, c.id);
      if (reduced.length === 0) unchanged++;
      edits += reduced.length;
    }
    // Copilot's two "expects no change" recordings give no edit; every other case gives some.
    assert.equal(unchanged, cases.filter((c) => c.expected === c.before.slice(c.regionStart, c.regionEnd)).length);
    assert.ok(edits >= cases.length - unchanged);
  });

  it('parses every event as a unified diff with hunks, as the history writes and the formats read them', () => {
    let events = 0;
    for (const c of cases) {
      for (const diff of c.events) {
        const event = { path: c.path, diff };
        const patches = parseEvent(event);
        assert.ok(patches, `${c.id}: the event parses and has hunks`);
        assert.ok(hunksOnly(diff).startsWith('@@'), `${c.id}: hunks found`);
        assert.ok(hunkSides(event).length > 0, `${c.id}: hunk sides`);
        events++;
      }
    }
    assert.ok(events >= cases.length, `${events} events`);
  });

  it('reads hand-written diffs leniently (blank context lines without their space) and leaves well-formed ones alone', () => {
    const wellFormed = unifiedDiff('a.py', 'x\n\ny\n', 'x\n\nz\n')!;
    assert.equal(recountHunks(wellFormed), wellFormed);
    const handWritten = '--- a/a.py\n+++ b/a.py\n@@ -1,9 +1,9 @@\n x\n\n-y\n+z\n';
    assert.equal(recountHunks(handWritten), '--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n x\n \n-y\n+z\n');
    assert.ok(parseEvent({ path: 'a.py', diff: handWritten }));
  });
});
