// The benchmark's completion-quality metrics (bench/quality.ts) on hand-checked cases.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { autoClosedKindOf, fileTextOf, owedClosers, sampleAutoClosedTasks } from '../../corpus';
import { editSimilarity, firstContentLine, firstLineExactMatch, levenshtein, scoreCompletion, scoreShown, summarizeQuality, truthCutToLines } from '../../quality';

describe('levenshtein', () => {
  const GOLDEN: [string, string, number][] = [
    ['', '', 0],
    ['abc', '', 3],
    ['', 'abc', 3],
    ['kitten', 'sitting', 3],
    ['flaw', 'lawn', 2],
    ['return x;', 'return y;', 1],
    ['abc', 'abc', 0],
    ['ab', 'ba', 2],
  ];
  for (const [a, b, d] of GOLDEN) {
    it(`${JSON.stringify(a)} vs ${JSON.stringify(b)} = ${d}`, () => {
      assert.equal(levenshtein(a, b), d);
      assert.equal(levenshtein(b, a), d);
    });
  }
});

describe('first line with content', () => {
  it('keeps leading line breaks and indentation, drops trailing whitespace', () => {
    assert.equal(firstContentLine('\n  return x;  \n}'), '\n  return x;');
    assert.equal(firstContentLine('foo(a, b);\nbar();'), 'foo(a, b);');
    assert.equal(firstContentLine('\n\n\tif (x) {\n'), '\n\n\tif (x) {');
    assert.equal(firstContentLine(''), '');
    assert.equal(firstContentLine(' \n\t\n'), '');
  });

  const GOLDEN: { name: string; completion: string; truth: string; exact: boolean }[] = [
    { name: 'rest of the line, right', completion: 'desc[WRITABLE] === false) {', truth: 'desc[WRITABLE] === false) {\n        desc[WRITABLE] = true;', exact: true },
    { name: 'trailing whitespace does not count', completion: 'x = 1;   ', truth: 'x = 1;\ny = 2;', exact: true },
    { name: 'right first line, wrong later lines', completion: '\n  return a;\n  foo();', truth: '\n  return a;\n}\n', exact: true },
    { name: 'next line, wrong', completion: '\n  return b;', truth: '\n  return a;\n}', exact: false },
    { name: 'right text, wrong indentation', completion: '\n    return a;', truth: '\n  return a;', exact: false },
    { name: 'on the cursor line where the truth goes to the next', completion: 'return a;', truth: '\nreturn a;', exact: false },
    { name: 'a prefix of the line is a miss', completion: 'desc[WRITABLE]', truth: 'desc[WRITABLE] === false) {\n', exact: false },
    { name: 'empty completion at the end of a line is a miss (not an empty first line)', completion: '', truth: '\n  return a;\n}', exact: false },
    { name: 'empty completion mid-line is a miss', completion: '', truth: 'est(url);\n', exact: false },
    { name: 'empty completion where the truth has no content is right', completion: '', truth: '\n\n', exact: true },
  ];
  for (const g of GOLDEN) {
    it(g.name, () => assert.equal(firstLineExactMatch(g.completion, g.truth), g.exact));
  }
});

describe("edit similarity (truth cut to the completion's line count)", () => {
  it('cuts the truth by lines', () => {
    assert.equal(truthCutToLines('a\nb\nc\nd', 'x\ny'), 'a\nb');
    assert.equal(truthCutToLines('a\nb', 'x\ny\nz\nw'), 'a\nb');
    assert.equal(truthCutToLines('\n  foo();\n}', '\n  bar'), '\n  foo();');
  });

  const GOLDEN: { name: string; completion: string; truth: string; similarity: number }[] = [
    { name: 'identical first line', completion: 'est(url);', truth: 'est(url);\n\t\tif (!encoded) return;', similarity: 1 },
    { name: 'one character of nine wrong', completion: 'return y;', truth: 'return x;\n}', similarity: 1 - 1 / 9 },
    // 'desc[WRITABLE]' (14) vs 'desc[WRITABLE] === false) {' (27): 13 insertions.
    { name: 'half a line is charged for the missing half', completion: 'desc[WRITABLE]', truth: 'desc[WRITABLE] === false) {\n', similarity: 1 - 13 / 27 },
    // '\n  foo' (6) vs '\n  foo();' (9): 3 insertions.
    { name: 'next line, partly right', completion: '\n  foo', truth: '\n  foo();\n}', similarity: 1 - 3 / 9 },
    { name: 'trailing whitespace ignored on both sides', completion: 'a = 1;  ', truth: 'a = 1;\t\nb', similarity: 1 },
    { name: 'completion longer than the truth', completion: 'ab\ncd\nef', truth: 'ab', similarity: 1 - 6 / 8 },
    { name: 'empty completion scores 0', completion: '', truth: '\n  return a;', similarity: 0 },
    { name: 'blank completion scores 0', completion: '  \n', truth: 'x', similarity: 0 },
    { name: 'empty completion where the truth has no content scores 1', completion: '', truth: '\n \n', similarity: 1 },
    { name: 'nothing in common', completion: 'abc', truth: 'xyz', similarity: 0 },
  ];
  for (const g of GOLDEN) {
    it(g.name, () => {
      const s = editSimilarity(g.completion, g.truth);
      assert.ok(Math.abs(s - g.similarity) < 1e-12, `${s} != ${g.similarity}`);
      assert.ok(s >= 0 && s <= 1);
    });
  }
});

describe('summary', () => {
  it('share of exact first lines and mean similarity', () => {
    const scores = [scoreCompletion('x = 1;', 'x = 1;\n'), scoreCompletion('y', 'x = 1;\n'), scoreCompletion('', 'x\n')];
    const summary = summarizeQuality(scores)!;
    assert.equal(summary.firstLineExact, 1 / 3);
    assert.ok(Math.abs(summary.similarity - (1 + 0 + 0) / 3) < 1e-12);
    assert.equal(summary.empty, 1 / 3, 'the blank completion shows no ghost text');
  });
  it('is null with nothing scored', () => assert.equal(summarizeQuality([]), null));
});

describe('before-auto-closed tasks (issue #41)', () => {
  it('owes, at each offset of a line, the closers an auto-closing editor shows there', () => {
    const line = "if (f(a, 'x') === [1]) {}";
    const owed = owedClosers(line)!;
    assert.equal(owed[line.indexOf('a')], '))');
    assert.equal(owed[line.indexOf('x')], "'))");
    assert.equal(owed[line.indexOf('1')], '])');
    assert.equal(owed[line.indexOf('{') + 1], '}');
    assert.equal(owed[0], '');
    assert.equal(owedClosers('foo(a, () => {'), null, 'a line that does not balance');
    assert.equal(owedClosers('const re = /[(]/;'), null, 'what a simple scan cannot read');
  });

  it('shows the auto-closed characters in place of the rest of the line; the file comes back whole', () => {
    const lines = ['// a', '// b', '// c'];
    for (let i = 0; i < 40; i++) lines.push(`  const v${i} = call(items[${i}], { key: "k${i}" });`, `  if (check(v${i})) total += v${i};`);
    lines.push('', '', '');
    const file = { name: 'f.ts', text: lines.join('\n') };
    const tasks = sampleAutoClosedTasks([file], 16, 7, 100);
    assert.equal(tasks.length, 16);
    assert.deepEqual(
      tasks.map((t) => autoClosedKindOf(t.autoClosed!)),
      Array.from({ length: 16 }, (_, i) => [')', ']', '}', 'quote'][i % 4]),
    );
    for (const t of tasks) {
      assert.equal(t.kind, 'before-auto-closed');
      assert.ok(t.id >= 100);
      const lineEnd = t.text.indexOf('\n', t.offset);
      assert.equal(t.text.slice(t.offset, lineEnd), t.autoClosed, 'only the auto-closed characters after the cursor');
      assert.equal(fileTextOf(t), file.text);
      assert.equal(t.truth, file.text.slice(t.offset, t.offset + 400));
    }
  });

  it('scores the line as it reads once accepted: the replaced auto-closed characters included, nothing shown a miss', () => {
    const truth = ') return 0;\n  let i = 0;';
    assert.deepEqual(scoreShown({ text: ') return 0;', replaceSuffixChars: 1 }, ')', truth), { firstLineExact: true, similarity: 1, empty: false });
    assert.equal(scoreShown({ text: ' return 0;', replaceSuffixChars: 0 }, ')', truth).firstLineExact, false, 'the paren stays after it');
    assert.deepEqual(scoreShown({ text: '', replaceSuffixChars: 0 }, ')', truth), { firstLineExact: false, similarity: 0, empty: true });
    assert.deepEqual(scoreShown({ text: 'a + b;', replaceSuffixChars: 0 }, '', 'a + b;\n'), scoreCompletion('a + b;', 'a + b;\n'), 'no rest of line: as before');
  });
});
