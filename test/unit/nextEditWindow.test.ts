// The editable windows, table-driven: Sweep's fixed 21 lines around the cursor (clamped at the file's
// ends) and Zeta's token-budget expansion (Zed's zeta1 `expand_range`, reproduced on Zed's own test text).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expandLinesByTokens, lineWindow, sweepWindow, wholeLines, zetaContext, zetaEditableRegion } from '../../src/nextEdit/editWindow';

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i}`).join('\n');
/** First and last line numbers of a span (the text's lines are "line N"). */
const range = (text: string, span: { start: number; end: number }) => {
  const part = text.slice(span.start, span.end).split('\n');
  return [part[0], part[part.length - 1]];
};

describe('Sweep window: 10 lines above and below the cursor line', () => {
  const text = lines(50);
  const at = (line: number, col = 2) => text.indexOf(`line ${line}\n`) + col;
  const table: [string, number, [string, string]][] = [
    ['middle of the file', at(25), ['line 15', 'line 35']],
    ['near the top: clamped, not shifted', at(3), ['line 0', 'line 13']],
    ['first line', 0, ['line 0', 'line 10']],
    ['near the end', text.length - 1, ['line 39', 'line 49']],
    ['cursor at the end of its line (on the newline)', at(25, 7), ['line 15', 'line 35']],
  ];
  for (const [name, cursor, expected] of table) {
    it(name, () => {
      const span = sweepWindow(text, cursor);
      assert.deepEqual(range(text, span), expected);
      // Whole lines, without the last one's newline.
      assert.ok(span.start === 0 || text[span.start - 1] === '\n');
      assert.ok(span.end === text.length || text[span.end] === '\n');
    });
  }
  it('handles a one-line file and an empty one', () => {
    assert.deepEqual(lineWindow('abc', 1, 10, 10), { start: 0, end: 3 });
    assert.deepEqual(lineWindow('', 0, 10, 10), { start: 0, end: 0 });
  });
});

describe('Zeta window: line-by-line expansion by guessed tokens (3 bytes each)', () => {
  // Zed's input_excerpt.rs test text, cursor at Point(12, 5) ("r<|user_cursor_is_here|>eturn sum;").
  const text = [
    'fn foo() {',
    '    let x = 42;',
    '    println!("Hello, world!");',
    '}',
    '',
    'fn bar() {',
    '    let x = 42;',
    '    let mut sum = 0;',
    '    for i in 0..x {',
    '        sum += i;',
    '    }',
    '    println!("Sum: {}", sum);',
    '    return sum;',
    '}',
    '',
    'fn generate_random_numbers() -> Vec<i32> {',
    '    let mut rng = rand::thread_rng();',
    '    let mut numbers = Vec::new();',
    '    for _ in 0..5 {',
    '        numbers.push(rng.random_range(1..101));',
    '    }',
    '    numbers',
    '}',
    '',
  ].join('\n');
  const cursor = text.indexOf('    return sum;') + 5;

  it("reproduces Zed's line-based case: 40 editable tokens, 32 context tokens", () => {
    // zed crates/zeta/src/zeta1/input_excerpt.rs test_excerpt_for_cursor_position, second case: the `bar`
    // function does not fit 40 tokens, so Zed expands by lines from the cursor (what this module does).
    // Zed starts from the syntax node around the cursor (`return sum;`, a statement: the same line), so
    // the line expansion starts where Zed's does.
    const editable = expandLinesByTokens(text, { start: cursor, end: cursor }, 40);
    assert.equal(text.slice(editable.start, editable.end).split('\n')[0], '    for i in 0..x {');
    assert.equal(text.slice(editable.start, editable.end).split('\n').pop(), '    let mut rng = rand::thread_rng();');
    const context = expandLinesByTokens(text, editable, 32);
    assert.equal(text.slice(context.start, context.end).split('\n')[0], 'fn bar() {');
    assert.equal(text.slice(context.start, context.end).split('\n').pop(), '        numbers.push(rng.random_range(1..101));');
  });

  it('uses 350 tokens for the region and 150 for the context (zeta1.rs MAX_REWRITE_TOKENS, MAX_CONTEXT_TOKENS)', () => {
    const long = lines(2000);
    const region = zetaEditableRegion(long, long.indexOf('line 1000'));
    // One line above ("line 9xx", 8 bytes: 2 tokens) and one below ("line 10xx", 9 bytes: 3 tokens) per
    // step: 350 tokens are 70 steps, 150 more are 30.
    assert.deepEqual(range(long, region), ['line 930', 'line 1070']);
    const context = zetaContext(long, region);
    assert.deepEqual(range(long, context), ['line 900', 'line 1100']);
  });
});

describe('caller regions', () => {
  const text = 'a\nbb\nccc\ndddd';
  const table: [string, { start: number; end: number }, string][] = [
    ['a span inside a line grows to the line', { start: 3, end: 4 }, 'bb'],
    ['a span across lines grows to both ends', { start: 1, end: 7 }, 'a\nbb\nccc'],
    ['a span ending with a newline ends on that line', { start: 2, end: 5 }, 'bb'],
    ['reversed ends are put in order', { start: 7, end: 3 }, 'bb\nccc'],
    ['past the end is clamped', { start: 9, end: 99 }, 'dddd'],
  ];
  for (const [name, span, expected] of table) {
    it(name, () => {
      const r = wholeLines(text, span);
      assert.equal(text.slice(r.start, r.end), expected);
    });
  }
});
