// The whole pipeline on realistic raw completions: what the user finally sees as ghost text.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_FILTERS, postprocess, type CompletionContext, type PostprocessFilter } from '../../src/postprocess';
import { at as cursorAt } from '../support/postprocessCases';

/** A document with the cursor marked by ║, in an editor that indents with spaces. */
const at = (document: string, languageId?: string): CompletionContext => ({ ...cursorAt(document, languageId), insertSpaces: true });

/** `replace`: characters of the cursor line's suffix the text replaces (0 when left out). */
const GOLDEN: { name: string; ctx: CompletionContext; completion: string; expected: string; replace?: number }[] = [
  {
    name: 'block between auto-closed braces: body shown, the existing brace moves below it',
    ctx: at('function findMax(arr: number[]) {║}\n'),
    completion: '\n  let max = arr[0];\n  for (const x of arr) if (x > max) max = x;\n  return max;\n}\n\nconsole.log(findMax([1, 2]));\n',
    expected: '\n  let max = arr[0];\n  for (const x of arr) if (x > max) max = x;\n  return max;\n',
  },
  {
    name: 'python function body, then the model wandered off to module level',
    ctx: at('import math\n\ndef circle_area(r):║\n', 'python'),
    completion: '\n    return math.pi * r ** 2\n\n\nprint(circle_area(2))\n',
    expected: '\n    return math.pi * r ** 2',
  },
  {
    name: 'argument list: stop at the auto-closed parenthesis',
    ctx: at('const user = await db.findOne(║);\n'),
    completion: '{ id: userId });\nconsole.log(user);',
    expected: '{ id: userId }',
  },
  {
    name: 'a loop until the token limit is cut to its first line',
    ctx: at('function setup() {\n  ║\n}\n'),
    completion: 'init();\n  register();\n  register();\n  register();\n  register();\n  regis',
    expected: 'init();\n  register();',
  },
  {
    name: 'duplicate of the lines below the cursor',
    ctx: at('export function area(w: number, h: number) {\n  ║\n  return w * h;\n}\n'),
    completion: 'if (w < 0 || h < 0) throw new RangeError("negative");\n  return w * h;\n}',
    expected: 'if (w < 0 || h < 0) throw new RangeError("negative");',
  },
  {
    name: 'whitespace-only completion shows nothing',
    ctx: at('let a = 1;\n║'),
    completion: '\n\n   \n',
    expected: '',
  },
  {
    name: 'long completions are limited to 16 lines',
    ctx: at('const table = [\n║'),
    completion: Array.from({ length: 30 }, (_, i) => `  { id: ${i}, name: "item${i}" },`).join('\n'),
    expected: Array.from({ length: 16 }, (_, i) => `  { id: ${i}, name: "item${i}" },`).join('\n'),
  },
  {
    name: 'inline completion in the middle of a line',
    ctx: at('if (║) {\n  start();\n}\n'),
    completion: 'isReady(config)) {\n  start();\n}',
    expected: 'isReady(config)',
  },
  // Issue #31: classes of defects a user sees, through the whole pipeline.
  {
    name: '#31.1 the closing brace of the if the completion writes survives the function brace below',
    ctx: at('function check(x) {\n  if (x) {║\n}\n'),
    completion: '\n    report(x);\n  }\n  done();\n}',
    expected: '\n    report(x);\n  }',
  },
  {
    name: '#31.1 the cursor on the line that closes the block: its brace is shown',
    ctx: at('function check(x) {\n  if (x) {\n    report(x);\n  ║\n}\n'),
    completion: '}',
    expected: '}',
  },
  {
    name: '#31.2 one line counting through names is cut after its first line',
    ctx: at('function setup() {\n  ║\n}\n'),
    completion: 'const b = 1;\n  const c = 1;\n  const d = 1;\n  const e = 1;\n  const f = 1;\n  const g',
    expected: 'const b = 1;',
  },
  {
    name: '#27.2 redeclaring the name of the cursor line ends the completion',
    ctx: at('function sum(values) {\n  const total = ║\n}\n'),
    completion: 'values[0];\n  const total = values[0];\n  const total = values[1];\n  const total = values[2];',
    expected: 'values[0];',
  },
  {
    name: '#27.2 a statement looping on one line',
    ctx: at('for (let i = 0; i < list.length; i++) {\n  ║\n}\n'),
    completion: 'var sum = list[i]; var sum = list[i]; var sum = list[i]; var sum = list[i]; var sum',
    expected: 'var sum = list[i];',
  },
  {
    name: '#31.3 no double space after "= "',
    ctx: at('const total = ║\n'),
    completion: ' sum(values);\n',
    expected: 'sum(values);',
  },
  {
    name: '#31.3 no double space before " baz"',
    ctx: at('call(foo, ║ baz);\n'),
    completion: 'bar, ',
    expected: 'bar,',
  },
  {
    name: '#31.4 a callback between auto-closed "})": the completion replaces them instead of repeating them',
    ctx: at('useEffect(() => {║});\n'),
    completion: '\n  start();\n}, []);\n\nexport default App;',
    expected: '\n  start();\n}, []);',
    replace: 3,
  },
  {
    name: '#31.4 "min);" before "))" would read "min);))": cut before its closer',
    ctx: at('const x = foo(bar(║));\n'),
    completion: 'min);',
    expected: 'min',
  },
  {
    name: '#31.4 a string whose completion forgot its quote would read "text);")": cut before the closer',
    ctx: at('log("║");\n'),
    completion: 'text);',
    expected: 'text',
  },
  {
    name: '#48.5 one line repeated four times, nested deeper each time: shown once (Tab accepted all four)',
    ctx: at('export function total(values: number[]): number {\n  ║\n}\n'),
    completion: 'const sum = values.sort((a, b) => {\n    const sum = values.sort((a, b) => {\n      const sum = values.sort((a, b) => {\n        const sum = values.sort((a, b) => {\n',
    expected: 'const sum = values.sort((a, b) => {',
  },
];

describe('postprocess', () => {
  for (const { name, ctx, completion, expected, replace } of GOLDEN) {
    it(name, () => assert.deepEqual(postprocess(completion, ctx), { text: expected, replaceSuffixChars: replace ?? 0 }));
  }

  it('runs the filters in order and stops once nothing is left', () => {
    const calls: string[] = [];
    const record =
      (name: string, result?: string): PostprocessFilter =>
      (text) => (calls.push(name), result ?? text);
    assert.equal(postprocess('abc', at('║'), [record('first'), record('empties', ''), record('never')]).text, '');
    assert.deepEqual(calls, ['first', 'empties']);
    assert.equal(DEFAULT_FILTERS.length, 7);
  });
});
