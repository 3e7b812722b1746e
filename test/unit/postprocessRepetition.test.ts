// removeRepetitiveLines golden cases: cut the loops tiny models fall into, keep real code.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompletionContext } from '../../src/postprocess/context';
import { removeRepetitiveLines } from '../../src/postprocess/removeRepetitiveLines';

/** A context from a document with the cursor marked by ║. */
function at(document: string, languageId = 'typescript'): CompletionContext {
  const cursor = document.indexOf('║');
  return { prefix: document.slice(0, cursor), suffix: document.slice(cursor + 1), languageId, tabSize: 4 };
}

const inFunction = at('function run() {\n  ║\n}\n');

const GOLDEN: { name: string; ctx: CompletionContext; completion: string; expected: string }[] = [
  {
    name: 'one line repeated to the end is kept once',
    ctx: inFunction,
    completion: "init();\n  log('x');\n  log('x');\n  log('x');\n  log('x');",
    expected: "init();\n  log('x');",
  },
  {
    name: 'the cut-short last line of the loop goes too',
    ctx: inFunction,
    completion: "init();\n  log('x');\n  log('x');\n  log('x');\n  log('",
    expected: "init();\n  log('x');",
  },
  {
    name: 'two equal lines are not a loop',
    ctx: inFunction,
    completion: 'a();\n  b();\n  b();',
    expected: 'a();\n  b();\n  b();',
  },
  {
    name: 'a cycle of two lines repeated three times',
    ctx: at('║', 'python'),
    completion: 'x = 1\ny = 2\nx = 1\ny = 2\nx = 1\ny = 2\n',
    expected: 'x = 1\ny = 2',
  },
  {
    name: 'a block of three lines repeated twice, then cut short',
    ctx: at("describe('math', () => {\n  ║"),
    completion: "it('adds', () => {\n    expect(add(1, 1)).toBe(2);\n  });\n  it('adds', () => {\n    expect(add(1, 1)).toBe(2);\n  });\n  it('adds', () =>",
    expected: "it('adds', () => {\n    expect(add(1, 1)).toBe(2);\n  });",
  },
  {
    name: "the cursor's line counts as the first line of the loop",
    ctx: at("function run() {\n  log('x');\n  ║"),
    completion: "log('x');\n  log('x');\n  log('x');",
    expected: "log('x');",
  },
  {
    name: 'nested closers and ends differ by indentation: not a loop',
    ctx: at('  ║', 'ruby'),
    completion: 'end\n    end\n  end\nend',
    expected: 'end\n    end\n  end\nend',
  },
  {
    name: 'repeated closing braces are trivial lines',
    ctx: inFunction,
    completion: '}\n}\n}\n}',
    expected: '}\n}\n}\n}',
  },
  {
    name: 'blank lines alone are not a loop',
    ctx: inFunction,
    completion: 'done();\n\n\n\n',
    expected: 'done();\n\n\n\n',
  },
  {
    name: 'a short unit repeated to the end of the line is cut at the start of the run',
    ctx: at('const song = ║'),
    completion: "'Batman NaNaNaNaNaNaNaNa",
    expected: "'Batman",
  },
  {
    name: 'one letter repeated many times',
    ctx: at('const id = ║'),
    completion: '"aaaaaaaaaaaaaaaaaaaaaaaa',
    expected: '"',
  },
  {
    name: 'a run on an earlier line cuts everything after it',
    ctx: at('║', 'markdown'),
    completion: 'intro\nlalalalalalalala\nmore text',
    expected: 'intro',
  },
  {
    name: 'digits and punctuation runs are data, not loops',
    ctx: at('const mask = ║'),
    completion: '0x0000000000000000; // ------------------',
    expected: '0x0000000000000000; // ------------------',
  },
  {
    name: 'a run that does not reach the end of its line is kept',
    ctx: at('const lyric = ║'),
    completion: "'NaNaNaNaNaNa Batman';",
    expected: "'NaNaNaNaNaNa Batman';",
  },
  {
    name: 'ordinary code is untouched',
    ctx: inFunction,
    completion: 'const a = load();\n  const b = load();\n  return merge(a, b);',
    expected: 'const a = load();\n  const b = load();\n  return merge(a, b);',
  },
];

describe('removeRepetitiveLines', () => {
  for (const { name, ctx, completion, expected } of GOLDEN) {
    it(name, () => assert.equal(removeRepetitiveLines(completion, ctx), expected));
  }
});
