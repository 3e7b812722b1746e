// trimSuffixOverlap golden cases: never repeat what already follows the cursor.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { trimSuffixOverlap } from '../../src/postprocess/trimSuffixOverlap';
import { type FilterCase, at, filterCases } from '../support/postprocessCases';

const GOLDEN: FilterCase[] = [
  { name: 'no overlap: unchanged', ctx: at('const total = ║\n'), completion: 'a + b;', expected: 'a + b;' },
  { name: 'auto-closed parenthesis is not repeated', ctx: at('sum(║)'), completion: 'a, b)', expected: 'a, b' },
  { name: 'completion ends with ")" and ");" follows', ctx: at('console.log(║);'), completion: "'done')", expected: "'done'" },
  { name: 'completion ends with ");" and ");" follows', ctx: at('console.log(║);'), completion: "'done');", expected: "'done'" },
  { name: 'completion goes on past the rest of the line: cut where it starts', ctx: at('sum(║)'), completion: 'a);', expected: 'a' },
  {
    name: 'the rest of the line, written from the auto-closed closer on: kept whole (replaceSameLineSuffix replaces the closer)',
    ctx: at('if (n === 0║)\n'),
    completion: ') return 0;',
    expected: ') return 0;',
  },
  { name: 'the same after spaces', ctx: at('const point = { x: 1║}'), completion: ' };', expected: ' };' },
  { name: 'code after the cursor is not auto-closed: still cut', ctx: at('foo(║x)'), completion: 'x), y', expected: '' },
  { name: 'closes one bracket of its own before the duplicate', ctx: at('outer(inner(║)'), completion: 'x))', expected: 'x)' },
  {
    name: 'whitespace does not hide a duplicate',
    ctx: at('items.push(║ );'),
    completion: 'item) ;',
    expected: 'item',
  },
  {
    name: 'rest of the line is code: one line only, then the overlap goes',
    ctx: at('if (║) {\n  go();\n}\n'),
    completion: 'ready) {\n  go();\n}',
    expected: 'ready',
  },
  {
    name: 'a completion with text after the cursor keeps its space before the duplicate',
    ctx: at('call(║y);'),
    completion: 'x, y',
    expected: 'x, ',
  },
  { name: 'closing quote is not repeated', ctx: at('const s = "║";'), completion: 'hello";', expected: 'hello' },
  {
    name: 'block between auto-closed braces: the closing brace goes, its indentation stays',
    ctx: at('  function f() {║}\n'),
    completion: '\n    return 1;\n  }',
    expected: '\n    return 1;\n  ',
  },
  {
    name: 'callback inside auto-closed parentheses',
    ctx: at('items.forEach(║);'),
    completion: '(item) => {\n  total += item;\n});',
    expected: '(item) => {\n  total += item;\n}',
  },
  {
    name: "the completion's last lines equal the suffix's first lines",
    ctx: at('function area(w, h) {\n  const a = 1;║\n  const b = 2;\n  return a + b;\n}\n'),
    completion: '\n  const mid = 1.5;\n  const b = 2;\n  return a + b;',
    expected: '\n  const mid = 1.5;\n  ',
  },
  {
    name: 'a whole duplicate completion becomes whitespace',
    ctx: at('def f(x):\n    ║\n    return x\n', 'python'),
    completion: 'return x',
    expected: '',
  },
  {
    name: 'python: duplicate last line',
    ctx: at('def f(x):\n    ║\n    return x\n', 'python'),
    completion: 'x = x * 2\n    return x',
    expected: 'x = x * 2\n    ',
  },
  {
    name: 'a closer of a bracket the completion opened is kept',
    ctx: at('function f() {\n  ║\n}\n'),
    completion: 'if (x) {\n    y();\n  }',
    expected: 'if (x) {\n    y();\n  }',
  },
  {
    name: 'a closer inside a string literal does not count as a bracket',
    ctx: at('log(║);'),
    completion: '"(", x)',
    expected: '"(", x',
  },
  {
    name: 'never cuts inside a word of the completion',
    ctx: at('let x = ║rest;'),
    completion: 'bar',
    expected: 'bar',
  },
  {
    name: 'never cuts where the overlap would end inside a word of the suffix',
    ctx: at('return ║result;'),
    completion: 'res',
    expected: 'res',
  },
  {
    name: 'mid-line code after the cursor and a multi-line completion that is not a block: first line only',
    ctx: at('const x = ║ + 1;\n'),
    completion: 'compute(a)\nconst y = 2;',
    expected: 'compute(a)',
  },
  // Issue #31, class 1: a closing line equal to the suffix's is kept when it closes a block the
  // completion or the cursor's line opened and the suffix's closer sits at another indentation.
  {
    name: "the if's closing brace is kept though the function's brace below has the same text",
    ctx: at('function check(x) {\n  if (x) {║\n}\n'),
    completion: '\n    report(x);\n  }',
    expected: '\n    report(x);\n  }',
  },
  {
    name: 'cursor on the line that closes the block: the brace survives',
    ctx: at('function check(x) {\n  if (x) {\n    report(x);\n  ║\n}\n'),
    completion: '}',
    expected: '}',
  },
  {
    name: 'tab indentation: the loop brace on the cursor line survives',
    ctx: at('function sum(rows) {\n\tlet total = 0;\n\tfor (const row of rows) {\n\t\ttotal += row;\n\t║\n}\n'),
    completion: '}',
    expected: '}',
  },
  {
    name: 'the else branch opened on the cursor line keeps its closing brace',
    ctx: at('function pick(a) {\n  if (a) {\n    left();\n  } else {║\n}\n'),
    completion: '\n    right();\n  }',
    expected: '\n    right();\n  }',
  },
  {
    name: 'the loop brace, then the function brace the document already has',
    ctx: at('function sum(rows) {\n  let total = 0;\n  for (const row of rows) {\n    total += row;\n  ║\n}\n'),
    completion: '}\n  return total;\n}',
    expected: '}\n  return total;\n',
  },
  {
    name: 'two closers, the document has only the outer one: the inner is kept, the outer goes',
    ctx: at('function f(a) {\n  while (a) {║\n}\n'),
    completion: '\n    a = next(a);\n  }\n}',
    expected: '\n    a = next(a);\n  }\n',
  },
  {
    name: 'a closing line at the indentation of the suffix closer is still a duplicate',
    ctx: at('function f(a) {\n  while (a) {║\n  }\n}\n'),
    completion: '\n    a = next(a);\n  }',
    expected: '\n    a = next(a);\n  ',
  },
  {
    name: 'a closing line with no block open at its indentation is the duplicate of the one below',
    ctx: at('function f() {\n  work();\n  ║\n}\n'),
    completion: '}',
    expected: '',
  },
  {
    name: 'python-like dedent: a block closed by a statement at its indentation is not open any more',
    ctx: at('function f() {\n  if (x) {\n    a();\n  }\n  b();\n  ║\n}\n'),
    completion: '}',
    expected: '',
  },
];

describe('trimSuffixOverlap', () => {
  filterCases(trimSuffixOverlap, GOLDEN);

  it('stays cheap on long completions and suffixes', () => {
    const ctx = at(`║${'\n  next();'.repeat(5000)}`);
    const completion = '\n  work();'.repeat(400);
    const started = process.hrtime.bigint();
    assert.equal(trimSuffixOverlap(completion, ctx), completion);
    assert.ok(Number(process.hrtime.bigint() - started) / 1e6 < 1000);
  });
});
