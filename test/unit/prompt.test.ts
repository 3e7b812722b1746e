import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANCHOR_LINE_GROUP, anchoredSplit, anchorOf, buildPrompt, MAX_MIDDLE_CHARS, PREFIX_TRIM_STEP, splitTrailingBlank, type PromptVocabulary } from '../../src/prompt/fimPrompt';
import { documentWindow, WINDOW_START_STEP } from '../../src/prompt/documentWindow';

// One token per character keeps the arithmetic visible.
const chars = (fim: boolean, bos: number | null = 1): PromptVocabulary => ({
  tokenize: (t) => [...t].map((c) => 1000 + c.charCodeAt(0)),
  bos,
  fim: fim ? { prefix: 10, suffix: 11, middle: 12 } : null,
});

describe('FIM prompt layout', () => {
  it('is <bos><pre>prefix<suf>suffix<mid> with the model FIM tokens', () => {
    const p = buildPrompt(chars(true), 'ab', 'cd', 100, { layout: 'standard' });
    assert.deepEqual(p.tokens, [1, 10, 1097, 1098, 11, 1099, 1100, 12]);
    assert.equal(p.format, 'fim');
  });

  it('uses the prefix alone when the model has no FIM tokens', () => {
    const p = buildPrompt(chars(false, null), 'ab', 'cd', 100);
    assert.deepEqual(p.tokens, [1097, 1098]);
    assert.equal(p.format, 'prefix-only');
  });

  it('stays within the budget, keeps the end of the prefix and at most a quarter for a long suffix', () => {
    const p = buildPrompt(chars(true), 'x'.repeat(500), 'y'.repeat(500), 200, { layout: 'standard' });
    assert.ok(p.tokens.length <= 200);
    assert.ok(p.suffixTokens <= 200 / 4 + 1);
    assert.equal(p.tokens.at(-1), 12);
  });

  it('cuts the prefix in fixed steps, so one more typed character keeps the same start (KV reuse)', () => {
    const text = Array.from({ length: 400 }, (_, i) => String.fromCharCode(65 + (i % 26))).join('');
    const a = buildPrompt(chars(true), text, '', 150, { layout: 'standard' });
    const b = buildPrompt(chars(true), `${text}q`, '', 150, { layout: 'standard' });
    const start = (p: typeof a) => p.tokens.slice(2, 12).join();
    assert.equal(start(a), start(b));
    assert.equal((400 - a.prefixTokens) % PREFIX_TRIM_STEP, 0);
  });
});

describe('line-anchored FIM prompt layout', () => {
  const lines = (n: number) => Array.from({ length: n }, (_, i) => `l${i}`).join('\n');
  const sym = (tokens: number[]) => tokens.map((t) => (t >= 1000 ? String.fromCharCode(t - 1000) : `<${t}>`)).join('');

  it('puts the cursor line group after <mid>, starting at its newline', () => {
    const prefix = `${lines(10)}\n  ret`; // 10 newlines: the group of 8 starting at newline 9
    const p = buildPrompt(chars(true), prefix, ')\n}', 200);
    assert.equal(sym(p.tokens), `<1><10>${prefix.slice(0, anchorOf(prefix, ANCHOR_LINE_GROUP))}<11>)\n}<12>${prefix.slice(anchorOf(prefix, ANCHOR_LINE_GROUP))}`);
    assert.equal(anchorOf(prefix, ANCHOR_LINE_GROUP), prefix.split('\n').slice(0, 9).join('\n').length);
    assert.equal(p.tokens.at(-1), 1000 + 't'.charCodeAt(0), 'the prompt ends at the cursor');
  });

  it('a text prompt (remote servers) is split where buildPrompt splits it; a group longer than MAX_MIDDLE_CHARS is not anchored', () => {
    for (const prefix of [`${lines(10)}\n  ret`, 'no newline yet', `${lines(3)}\n`, `${lines(17)}\n\tx`]) {
      const { head, middle } = anchoredSplit(prefix);
      const p = buildPrompt(chars(true), prefix, ';', 400);
      assert.equal(sym(p.tokens), `<1><10>${head}<11>;<12>${middle}`, JSON.stringify(prefix));
    }
    const long = `${lines(2)}\n${'x'.repeat(MAX_MIDDLE_CHARS + 1)}`;
    assert.deepEqual(anchoredSplit(long), { head: long, middle: '' });
  });

  it('typing within the group only appends to the prompt: characters, a newline, a paste', () => {
    const base = `${lines(9)}\n  x = 1;`;
    const before = buildPrompt(chars(true), base, '\n}\n', 300).tokens;
    for (const typed of ['y', '\n  ', 'const a = [1, 2, 3];\n  const b = a.map(f);\n']) {
      const after = buildPrompt(chars(true), base + typed, '\n}\n', 300).tokens;
      assert.deepEqual(after.slice(0, before.length), before, JSON.stringify(typed));
      assert.equal(after.length, before.length + typed.length);
    }
  });

  it('falls back to the standard layout when the middle would be too long', () => {
    const prefix = `a\n${'x'.repeat(400)}`;
    const p = buildPrompt(chars(true), prefix, '', 1000);
    assert.equal(p.middleTokens, 0);
    assert.equal(p.tokens.at(-1), 12);
  });

  it('the same text gives the same prompt (no hidden state)', () => {
    const prefix = `${lines(20)}\n  ab`;
    assert.deepEqual(buildPrompt(chars(true), prefix, 's', 300).tokens, buildPrompt(chars(true), prefix, 's', 300).tokens);
  });
});

describe('trailing blank of the prefix', () => {
  it('splits the spaces and tabs the cursor follows, not newlines', () => {
    assert.deepEqual(splitTrailingBlank('if (x) '), { prefix: 'if (x)', blank: ' ' });
    assert.deepEqual(splitTrailingBlank('{\n  \t '), { prefix: '{\n', blank: '  \t ' });
    assert.deepEqual(splitTrailingBlank('x\n'), { prefix: 'x\n', blank: '' });
    assert.deepEqual(splitTrailingBlank(''), { prefix: '', blank: '' });
  });
});

describe('document window', () => {
  const doc = (text: string) => ({ length: text.length, slice: (s: number, e: number) => text.slice(s, e) });
  it('bounds the work for a huge document and starts on a line', () => {
    const big = 'line of code\n'.repeat(200_000);
    const w = documentWindow(doc(big), 1_000_000, { maxPrefixChars: 3000, maxSuffixChars: 1000 });
    assert.ok(w.prefix.length <= 3000 + WINDOW_START_STEP);
    assert.ok(w.suffix.length <= 1000);
    assert.equal(big[w.prefixStart - 1], '\n');
  });
  it('keeps its start while the user types', () => {
    const text = 'abc\n'.repeat(3000);
    const a = documentWindow(doc(text), 9000, { maxPrefixChars: 3000, maxSuffixChars: 100 });
    const b = documentWindow(doc(text), 9001, { maxPrefixChars: 3000, maxSuffixChars: 100 });
    assert.equal(a.prefixStart, b.prefixStart);
  });
});
