import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildPrompt, PREFIX_TRIM_STEP, type PromptVocabulary } from '../../src/prompt/fimPrompt';
import { documentWindow, WINDOW_START_STEP } from '../../src/prompt/documentWindow';

// One token per character keeps the arithmetic visible.
const chars = (fim: boolean, bos: number | null = 1): PromptVocabulary => ({
  tokenize: (t) => [...t].map((c) => 1000 + c.charCodeAt(0)),
  bos,
  fim: fim ? { prefix: 10, suffix: 11, middle: 12 } : null,
});

describe('FIM prompt layout', () => {
  it('is <bos><pre>prefix<suf>suffix<mid> with the model FIM tokens', () => {
    const p = buildPrompt(chars(true), 'ab', 'cd', 100);
    assert.deepEqual(p.tokens, [1, 10, 1097, 1098, 11, 1099, 1100, 12]);
    assert.equal(p.format, 'fim');
  });

  it('uses the prefix alone when the model has no FIM tokens', () => {
    const p = buildPrompt(chars(false, null), 'ab', 'cd', 100);
    assert.deepEqual(p.tokens, [1097, 1098]);
    assert.equal(p.format, 'prefix-only');
  });

  it('stays within the budget, keeps the end of the prefix and at most a quarter for a long suffix', () => {
    const p = buildPrompt(chars(true), 'x'.repeat(500), 'y'.repeat(500), 200);
    assert.ok(p.tokens.length <= 200);
    assert.ok(p.suffixTokens <= 200 / 4 + 1);
    assert.equal(p.tokens.at(-1), 12);
  });

  it('cuts the prefix in fixed steps, so one more typed character keeps the same start (KV reuse)', () => {
    const text = Array.from({ length: 400 }, (_, i) => String.fromCharCode(65 + (i % 26))).join('');
    const a = buildPrompt(chars(true), text, '', 150);
    const b = buildPrompt(chars(true), text + 'q', '', 150);
    const start = (p: typeof a) => p.tokens.slice(2, 12).join();
    assert.equal(start(a), start(b));
    assert.equal((400 - a.prefixTokens) % PREFIX_TRIM_STEP, 0);
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
