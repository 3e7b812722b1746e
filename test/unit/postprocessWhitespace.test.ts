// trimTrailingWhitespace, limitLines and the context helpers every filter relies on.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { currentLinePrefix, currentLineSuffix, firstNonBlankLineBelowCursor, indentationWidth } from '../../src/postprocess/context';
import { DEFAULT_MAX_LINES, limitLines } from '../../src/postprocess/limitLines';
import { trimSpaceAtJoins } from '../../src/postprocess/trimSpaceAtJoins';
import { trimTrailingWhitespace } from '../../src/postprocess/trimTrailingWhitespace';
import { type FilterCase, at, filterCases } from '../support/postprocessCases';

describe('trimTrailingWhitespace', () => {
  const GOLDEN: FilterCase[] = [
    { name: 'trailing spaces and empty lines go', ctx: at('let a = ║\n'), completion: 'load();   \n\n  \n', expected: 'load();' },
    { name: 'whitespace alone becomes empty', ctx: at('  ║'), completion: '   \n\t\n', expected: '' },
    { name: 'leading whitespace stays', ctx: at('return║'), completion: ' value;  ', expected: ' value;' },
    { name: 'a space before code after the cursor stays', ctx: at('return ║value;'), completion: 'await ', expected: 'await ' },
    {
      name: 'a final line break and indentation before code after the cursor stay',
      ctx: at('  function f() {║}'),
      completion: '\n    return 1;\n\n  ',
      expected: '\n    return 1;\n  ',
    },
    { name: 'whitespace alone before code after the cursor becomes empty', ctx: at('f(║)'), completion: '\n  ', expected: '' },
  ];
  filterCases(trimTrailingWhitespace, GOLDEN);
});

describe('trimSpaceAtJoins', () => {
  const GOLDEN: FilterCase[] = [
    { name: 'a space before the cursor: the leading space goes', ctx: at('const total = ║\n'), completion: ' sum(values);', expected: 'sum(values);' },
    { name: 'a tab before the cursor: leading spaces and tabs go', ctx: at('return\t║'), completion: '\t value;', expected: 'value;' },
    { name: 'a space after the cursor: the trailing space goes', ctx: at('call(foo,║ baz);'), completion: ' bar,  ', expected: ' bar,' },
    { name: 'spaces on both sides', ctx: at('const pair = [a, ║ b];'), completion: ' mid, ', expected: 'mid,' },
    { name: 'no space before the cursor: the leading space stays', ctx: at('return║'), completion: ' value;', expected: ' value;' },
    { name: 'code right after the cursor: the separating space stays', ctx: at('return ║value;'), completion: 'await ', expected: 'await ' },
    { name: 'indentation before the cursor is not a space to join', ctx: at('  ║\n'), completion: '  nested();', expected: '  nested();' },
    {
      name: 'a last line of indentation before the rest of the line stays',
      ctx: at('  function f() {║ }'),
      completion: '\n    return 1;\n  ',
      expected: '\n    return 1;\n  ',
    },
  ];
  filterCases(trimSpaceAtJoins, GOLDEN);
});

describe('limitLines', () => {
  it('keeps at most maxLines lines', () => {
    assert.equal(limitLines(2)('a\nb\nc\nd'), 'a\nb');
    assert.equal(limitLines(2)('a\nb'), 'a\nb');
    assert.equal(limitLines(1)('only line'), 'only line');
    assert.equal(limitLines(0)('a'), '');
  });

  it(`defaults to ${DEFAULT_MAX_LINES} lines`, () => {
    const lines = Array.from({ length: 40 }, (_, i) => `line${i}();`);
    assert.deepEqual(limitLines()(lines.join('\n')).split('\n'), lines.slice(0, DEFAULT_MAX_LINES));
  });
});

describe('completion context helpers', () => {
  const ctx = at('function f() {\n\tif (x) {║ // note\n\n   \n  }\n}\n');

  it('splits the cursor line at the cursor', () => {
    assert.equal(currentLinePrefix(ctx), '\tif (x) {');
    assert.equal(currentLineSuffix(ctx), ' // note');
    assert.equal(currentLinePrefix(at('║abc')), '');
    assert.equal(currentLineSuffix(at('abc║')), '');
  });

  it('measures indentation with tabs as tabSize columns', () => {
    assert.equal(indentationWidth('\tif (x) {', 4), 4);
    assert.equal(indentationWidth(' \t  x', 2), 5);
    assert.equal(indentationWidth('    '), 4);
    assert.equal(indentationWidth('x'), 0);
  });

  it('finds the first non-blank line below the cursor', () => {
    assert.equal(firstNonBlankLineBelowCursor(ctx), '  }');
    assert.equal(firstNonBlankLineBelowCursor(at('x║ tail\n\n  \n')), undefined);
    assert.equal(firstNonBlankLineBelowCursor(at('x║')), undefined);
  });
});
