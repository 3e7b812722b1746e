// The edit history: keystrokes close in time and place coalesce into one unified diff; a pause, another
// place or another file starts a new event; the history is bounded in count and characters.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePatch } from 'diff';
import { type DocumentChange, EditHistory, unifiedDiff } from '../../src/nextEdit/editHistory';

/** Types `text` at `offset` one character at a time, `gapMs` apart, recording each keystroke. */
function typeText(history: EditHistory, path: string, doc: string, offset: number, text: string, startAt: number, gapMs = 100): { doc: string; at: number } {
  let at = startAt;
  for (let i = 0; i < text.length; i++) {
    const change: DocumentChange = { offset: offset + i, deleteCount: 0, text: text[i]! };
    history.record(path, doc, change, at);
    doc = doc.slice(0, offset + i) + text[i] + doc.slice(offset + i);
    at += gapMs;
  }
  return { doc, at };
}

const FILE = 'function a() {\n  return 1;\n}\n\nfunction b() {\n  return 2;\n}\n\nfunction c() {\n  return 3;\n}\n';

describe('edit history', () => {
  it('coalesces a word typed on one line into one event, as a unified diff with a/ b/ headers', () => {
    const h = new EditHistory();
    typeText(h, 'src/x.ts', FILE, FILE.indexOf('1;'), '10 + ', 0);
    const events = h.events();
    assert.equal(events.length, 1);
    assert.equal(events[0]!.path, 'src/x.ts');
    assert.equal(events[0]!.diff, '--- a/src/x.ts\n+++ b/src/x.ts\n@@ -1,5 +1,5 @@\n function a() {\n-  return 1;\n+  return 10 + 1;\n }\n \n function b() {\n');
    assert.equal(events[0]!.at, 400);
  });

  it('starts a new event after a pause, on a far line, or in another file', () => {
    const h = new EditHistory();
    let r = typeText(h, 'src/x.ts', FILE, FILE.indexOf('1;'), 'x', 0);
    // A pause of 1.5 s or more.
    r = typeText(h, 'src/x.ts', r.doc, r.doc.indexOf('1;'), 'y', r.at + 1500);
    // A line far away, right after.
    r = typeText(h, 'src/x.ts', r.doc, r.doc.indexOf('3;'), 'z', r.at);
    // Another file.
    typeText(h, 'README.md', '# T\n', 3, '!', r.at);
    const events = h.events();
    assert.deepEqual(
      events.map((e) => e.path),
      ['src/x.ts', 'src/x.ts', 'src/x.ts', 'README.md'],
    );
    assert.match(events[0]!.diff, /\+ {2}return x1;/);
    assert.match(events[1]!.diff, /- {2}return x1;\n\+ {2}return xy1;/);
    assert.match(events[2]!.diff, /\+ {2}return z3;/);
    assert.match(events[3]!.diff, /^--- a\/README.md\n\+\+\+ b\/README.md\n/);
  });

  it('coalesces edits on adjacent lines (a new line typed under the one just edited)', () => {
    const h = new EditHistory();
    const r = typeText(h, 'x.ts', FILE, FILE.indexOf('1;') + 2, '\n  log();', 0);
    assert.equal(h.events().length, 1);
    assert.match(h.events()[0]!.diff, /\+ {2}log\(\);/);
    // And the line under that one, still within the window.
    typeText(h, 'x.ts', r.doc, r.doc.indexOf('log();') + 6, '\n  more();', r.at);
    assert.equal(h.events().length, 1);
  });

  it('drops an event that typed and deleted the same text (nothing changed)', () => {
    const h = new EditHistory();
    const at = FILE.indexOf('1;');
    h.record('x.ts', FILE, { offset: at, deleteCount: 0, text: 'q' }, 0);
    const typed = `${FILE.slice(0, at)}q${FILE.slice(at)}`;
    h.record('x.ts', typed, { offset: at, deleteCount: 1, text: '' }, 100);
    assert.deepEqual(h.events(), []);
    // And it does not block the next event.
    typeText(h, 'x.ts', FILE, at, 'w', 5000);
    assert.equal(h.events().length, 1);
  });

  it('starts afresh when the document changed behind its back (an unrecorded change)', () => {
    const h = new EditHistory();
    typeText(h, 'x.ts', FILE, FILE.indexOf('1;'), 'a', 0);
    const elsewhere = FILE.replace('2;', '22;');
    typeText(h, 'x.ts', elsewhere, elsewhere.indexOf('1;'), 'b', 100);
    assert.equal(h.events().length, 2);
  });

  it('keeps the newest events within the count and character bounds', () => {
    const h = new EditHistory({ maxEvents: 3 });
    let doc = FILE;
    let at = 0;
    for (let i = 0; i < 6; i++) {
      const r = typeText(h, 'x.ts', doc, doc.indexOf('return 1'), `${i}`, at);
      doc = r.doc;
      at = r.at + 2000;
    }
    const events = h.events();
    assert.equal(events.length, 3);
    // Digits typed before `return`, one event each: the three newest are the 4th, 5th and 6th.
    assert.match(events[0]!.diff, /\+ {2}0123return 1;/);
    assert.match(events[2]!.diff, /\+ {2}012345return 1;/);
    const small = new EditHistory({ maxChars: 300 });
    doc = FILE;
    at = 0;
    for (let i = 0; i < 6; i++) {
      const r = typeText(small, 'x.ts', doc, doc.indexOf('return 1'), `${i}`, at);
      doc = r.doc;
      at = r.at + 2000;
    }
    const total = small.events().reduce((n, e) => n + e.diff.length, 0);
    assert.ok(total <= 300 && small.events().length >= 1, `${total} chars in ${small.events().length} events`);
  });

  it('forgets a closed file', () => {
    const h = new EditHistory();
    const r = typeText(h, 'a.ts', FILE, 0, 'x', 0);
    typeText(h, 'b.ts', FILE, 0, 'y', r.at);
    h.forget('a.ts');
    assert.deepEqual(
      h.events().map((e) => e.path),
      ['b.ts'],
    );
  });

  it('writes diffs that jsdiff parses back to the same change', () => {
    const diff = unifiedDiff('p/q.py', 'a\nb\n', 'a\nc\nb\n')!;
    const [patch] = parsePatch(diff);
    assert.equal(patch!.oldFileName, 'a/p/q.py');
    assert.deepEqual(patch!.hunks[0]!.lines, [' a', '+c', ' b']);
    assert.equal(unifiedDiff('p', 'same', 'same'), null);
  });
});
