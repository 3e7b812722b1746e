// replaceSameLineSuffix golden cases: the completion replaces the auto-closed text after the cursor
// it writes itself, or is cut short; the line is never shown broken. And the cache keeps the range.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CompletionCache } from '../../src/engine/completionCache';
import { postprocess } from '../../src/postprocess';
import type { CompletionContext } from '../../src/postprocess/context';
import { replaceSameLineSuffix } from '../../src/postprocess/replaceSameLineSuffix';
import { at } from '../support/postprocessCases';

const GOLDEN: { name: string; ctx: CompletionContext; completion: string; text: string; replace: number }[] = [
  { name: 'nothing after the cursor: inserted as it is', ctx: at('const x = ║\n'), completion: 'compute(a);', text: 'compute(a);', replace: 0 },
  { name: 'no closers written: inserted before the auto-closed one', ctx: at('sum(║)'), completion: 'a, b', text: 'a, b', replace: 0 },
  {
    name: 'the rest of the line still closes what the completion leaves open: inserted',
    ctx: at('outer(inner(║)'),
    completion: 'x)',
    text: 'x)',
    replace: 0,
  },
  { name: '")" and ";" written before ");": both replaced', ctx: at('console.log(║);'), completion: "'done');", text: "'done');", replace: 2 },
  { name: 'the closing quote written before the auto-closed one: replaced', ctx: at('const s = "║";'), completion: 'hello"', text: 'hello"', replace: 1 },
  {
    name: 'a callback closing "}" and ")" on a later line replaces "});"',
    ctx: at('useEffect(() => {║});\n'),
    completion: '\n  start();\n}, []);',
    text: '\n  start();\n}, []);',
    replace: 3,
  },
  {
    name: 'closes one bracket then ends the statement while the line needs two: cut before the closer',
    ctx: at('foo(bar(║))'),
    completion: 'min);',
    text: 'min',
    replace: 0,
  },
  {
    name: 'closes the condition, then writes code that is not the rest of the line: cut before the closer',
    ctx: at('if (║) {'),
    completion: 'a && b) || c',
    text: 'a && b',
    replace: 0,
  },
  { name: 'a closer that is not the one awaited: cut before it', ctx: at('call(║)'), completion: 'x]', text: 'x', replace: 0 },
  {
    name: 'inside a string, the closer after the quote written without the quote: cut there',
    ctx: at('log("║")'),
    completion: 'text);',
    text: 'text',
    replace: 0,
  },
  { name: "inside a string, balanced brackets are the string's text", ctx: at('log("║")'), completion: 'a (b) c', text: 'a (b) c', replace: 0 },
  {
    name: 'a multi-line completion that cannot be paired is cut at the end of its first line',
    ctx: at('wrap([║])\n'),
    completion: 'first,\n  second,\n)]',
    text: 'first,',
    replace: 0,
  },
];

describe('replaceSameLineSuffix', () => {
  for (const { name, ctx, completion, text, replace } of GOLDEN) {
    it(name, () => assert.deepEqual(replaceSameLineSuffix(completion, ctx), { text, replaceSuffixChars: replace }));
  }
});

/**
 * The most common place a person types in (issue #41): before what the editor auto-closed. The
 * model writes the closer and the rest of the line; the ghost text is that, replacing the closer.
 * Before the fix trimSuffixOverlap cut each of these at its first character: no ghost text.
 */
const BEFORE_AUTO_CLOSED: { name: string; ctx: CompletionContext; completion: string; text: string; replace: number }[] = [
  {
    name: 'the issue’s case (start.sh’s example.ts): `) return 0;` before the auto-closed `)`',
    ctx: at('export function average(values: number[]): number {\n  if (values.length === 0║)\n}\n'),
    completion: ') return 0;\n  let i = 0;\n  for (let i = 0; i < values.length; i++) {\n    const value = values[i];',
    text: ') return 0;',
    replace: 1,
  },
  { name: 'a condition closed and a block opened', ctx: at('  if (ready║)\n'), completion: ') {', text: ') {', replace: 1 },
  { name: 'before an auto-closed `]`', ctx: at('const xs = [1, 2║]\n'), completion: '].map(double);', text: '].map(double);', replace: 1 },
  { name: 'before an auto-closed `}`', ctx: at('const point = { x: 1║}\n'), completion: ' };', text: ' };', replace: 1 },
  { name: 'before an auto-closed quote', ctx: at("const name = 'Ada║'\n"), completion: "' + suffix;", text: "' + suffix;", replace: 1 },
  { name: 'before an auto-closed quote and paren', ctx: at('log("done║")\n'), completion: '");', text: '");', replace: 2 },
  { name: 'only the closer, nothing new: nothing shown', ctx: at('  if (ready║)\n'), completion: ')', text: '', replace: 0 },
  { name: 'text, then the closer and more: cut before the closer as before', ctx: at('sum(║)\n'), completion: 'a);', text: 'a', replace: 0 },
  { name: 'a closer that is not the one awaited: nothing shown', ctx: at('call(a║)\n'), completion: '] + 1', text: '', replace: 0 },
];

describe('postprocess before auto-closed characters', () => {
  for (const { name, ctx, completion, text, replace } of BEFORE_AUTO_CLOSED) {
    it(name, () => assert.deepEqual(postprocess(completion, ctx), { text, replaceSuffixChars: replace }));
  }
});

describe('CompletionCache and the replaced characters', () => {
  it('a hit for text typed into the completion keeps its replaced characters (the suffix is the same)', () => {
    const cache = new CompletionCache();
    cache.put('console.log(', ');', { text: "'done');", replaceSuffixChars: 2 });
    assert.deepEqual(cache.get("console.log('do", ');'), { text: "ne');", replaceSuffixChars: 2 });
    assert.equal(cache.get('console.log(', ')'), undefined);
  });
});

/** Whether the characters of `part` appear in `text` in order (VS Code then draws the replacement as inserted text). */
function isSubsequence(part: string, text: string): boolean {
  let i = 0;
  for (const char of text) if (i < part.length && char === part[i]) i++;
  return i === part.length;
}

describe('postprocess on arbitrary code-like text', () => {
  const code = fc.string({ unit: fc.constantFrom('a', 'b', ' ', '\n', '  ', '(', ')', '[', ']', '{', '}', '"', "'", ';', ',', '=', '0', '1'), maxLength: 40 });
  it('replaces only characters of the rest of the line that the text writes, in order', () => {
    fc.assert(
      fc.property(code, code, code, (prefix, suffix, completion) => {
        const shown = postprocess(completion, { prefix, suffix, languageId: 'typescript', tabSize: 4 });
        const restOfLine = suffix.split('\n', 1)[0]!;
        assert.ok(shown.replaceSuffixChars >= 0 && shown.replaceSuffixChars <= restOfLine.length);
        assert.ok(isSubsequence(restOfLine.slice(0, shown.replaceSuffixChars), shown.text), JSON.stringify(shown));
      }),
      { numRuns: 3000 },
    );
  });
});
