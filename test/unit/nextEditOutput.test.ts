// From a model's output to editor edits: the reduction to the smallest replacements, the refusals (each
// with its reason), and the streaming of edits that are already final.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unifiedDiff } from '../../src/nextEdit/editHistory';
import { sweepFormat } from '../../src/nextEdit/formats/sweep';
import { applyReplacements, finalEditsSoFar, outputToEdits, reduceToEdits } from '../../src/nextEdit/outputToEdit';
import type { NextEditRequest } from '../../src/nextEdit/types';

describe('reducing a new region to the smallest edits', () => {
  const table: [string, string, string, { start: number; end: number; text: string }[]][] = [
    ['a rename replaces the differing part of the word', 'x = getUser(id)\ny = 1', 'x = fetchUser(id)\ny = 1', [{ start: 4, end: 7, text: 'fetch' }]],
    [
      'a rename on two lines gives two edits',
      'a(getUser)\nb\nc(getUser)',
      'a(fetchUser)\nb\nc(fetchUser)',
      [
        { start: 2, end: 5, text: 'fetch' },
        { start: 15, end: 18, text: 'fetch' },
      ],
    ],
    ['an inserted line is one insertion', 'a\nc', 'a\nb\nc', [{ start: 2, end: 2, text: 'b\n' }]],
    ['a deleted line is one deletion', 'a\nb\nc', 'a\nc', [{ start: 2, end: 4, text: '' }]],
    ['a line added after the last line (no final newline)', 'a\nb', 'a\nb\nc', [{ start: 3, end: 3, text: '\nc' }]],
    ['an argument added', 'f(a)', 'f(a, b)', [{ start: 3, end: 3, text: ', b' }]],
    ['nothing changed', 'same\ntext', 'same\ntext', []],
  ];
  for (const [name, current, next, expected] of table) {
    it(name, () => {
      const edits = reduceToEdits(current, next, 0);
      assert.deepEqual(edits, expected);
      assert.equal(applyReplacements(current, edits), next);
    });
  }

  it('offsets the edits by where the region starts', () => {
    const doc = 'header\nx = getUser(id)\n';
    const edits = reduceToEdits('x = getUser(id)', 'x = fetchUser(id)', 7);
    assert.equal(applyReplacements(doc, edits), 'header\nx = fetchUser(id)\n');
  });

  it('refuses overlapping replacements', () => {
    assert.throws(() =>
      applyReplacements('abcdef', [
        { start: 0, end: 3, text: 'x' },
        { start: 2, end: 4, text: 'y' },
      ]),
    );
  });
});

describe('refusing outputs', () => {
  const text = ['def area(r):', '    return 3.14 * r * r', '', 'def perimeter(r):', '    return 2 * 3.14 * r', '', 'print(area(2))'].join('\n');
  const request = (over: Partial<NextEditRequest> = {}): NextEditRequest => ({ path: 'geo.py', text, cursorOffset: 5, events: [], mode: 'plain', ...over });
  const run = (output: string, req = request()) => outputToEdits(req, sweepFormat.buildPrompt(req), sweepFormat, `${output}\n<|file_sep|>`);

  it('accepts a real edit and gives its replacements', () => {
    const result = run(text.replace(/3\.14/g, 'math.pi'));
    assert.equal(result.noSuggestion, undefined);
    assert.equal(result.edits.length, 2);
    assert.equal(applyReplacements(text, result.edits), text.replace(/3\.14/g, 'math.pi'));
  });

  const refusals: [string, string, string][] = [
    ['unchanged', text, 'unchanged'],
    ['far more lines', `${text}\n${'extra\n'.repeat(20)}`, 'lineCount'],
    ['everything rewritten', 'a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nf = 6\ng = 7', 'rewritesEverything'],
  ];
  for (const [name, output, reason] of refusals) {
    it(`refuses ${name} (${reason})`, () => {
      const result = run(output);
      assert.equal(result.noSuggestion?.reason, reason);
      assert.deepEqual(result.edits, []);
      assert.ok(result.noSuggestion!.detail.length > 0);
    });
  }

  it('refuses an unparseable output with the format’s reason', () => {
    const result = run('def area(r):\n<|fim_prefix|>');
    assert.equal(result.noSuggestion?.reason, 'unparseable');
    assert.equal(result.regionText, null);
  });

  it("refuses an output that only undoes the user's last edit, and accepts one that goes on from it", () => {
    const before = text.replace('def perimeter(r):', 'def perim(r):');
    const req = request({ events: [{ path: 'geo.py', diff: unifiedDiff('geo.py', before, text)! }] });
    assert.equal(run(before, req).noSuggestion?.reason, 'undoesLastEdit');
    const onward = text.replace('print(area(2))', 'print(area(2), perimeter(2))');
    assert.equal(run(onward, req).noSuggestion, undefined);
  });
});

describe('streaming edits that are final', () => {
  const current = ['const a = getUser(1);', 'log(a);', 'const b = getUser(2);', 'log(b);', '}'].join('\n');

  it('gives nothing until the output agrees with the region again after a change', () => {
    assert.deepEqual(finalEditsSoFar(current, 'const a = fetchUser(1);\n', 0).edits, []);
    assert.deepEqual(finalEditsSoFar(current, 'const a = fetchUser(1);\nlog(', 0).edits, []);
  });

  it('gives the edit once a following whole line agrees, and what it consumed', () => {
    const partial = 'const a = fetchUser(1);\nlog(a);\nconst b = fetch';
    const final = finalEditsSoFar(current, partial, 100);
    assert.deepEqual(final.edits, [{ start: 110, end: 113, text: 'fetch' }]);
    assert.equal(current.slice(0, final.regionConsumed), 'const a = getUser(1);\nlog(a);\n');
    assert.equal(partial.slice(0, final.outputConsumed), 'const a = fetchUser(1);\nlog(a);\n');
  });

  it('does not count a lone brace or blank line as agreement', () => {
    const region = 'if (x) {\n  f();\n  compute();\n}';
    // "f();" is too short to count as agreement; "compute();" counts.
    assert.deepEqual(finalEditsSoFar(region, 'if (y) {\n  f();\n', 0).edits, []);
    assert.deepEqual(finalEditsSoFar(region, 'if (y) {\n  f();\n  compute();\n', 0).edits, [{ start: 4, end: 5, text: 'y' }]);
    assert.deepEqual(finalEditsSoFar('a = 1\n}\nb = 2', 'a = 2\n}\n', 0).edits, []);
  });

  it('streamed edits plus the remainder reduced at the end equal the whole reduction', () => {
    const next = ['const a = fetchUser(1);', 'log(a);', 'const b = fetchUser(2);', 'log(b);', '}'].join('\n');
    const streamed = finalEditsSoFar(current, next.slice(0, 40), 0);
    const rest = reduceToEdits(current.slice(streamed.regionConsumed), next.slice(streamed.outputConsumed), streamed.regionConsumed);
    assert.equal(applyReplacements(current, [...streamed.edits, ...rest]), next);
    assert.deepEqual([...streamed.edits, ...rest], reduceToEdits(current, next, 0));
  });
});
