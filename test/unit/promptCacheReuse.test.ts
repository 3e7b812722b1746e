// How a prompt's cache is reused when the prompt's head moved: planShift (speculation/greedyEvaluator.ts)
// shifts a cached run into place only for a head that lost tokens, and the FIM layout
// (prompt/fimPrompt.ts) keeps its head still while the user types and moves it only forward, in whole
// line blocks, wherever the editor's window starts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ANCHOR_LINE_GROUP, buildPrompt, HEAD_CUT_LINES, type PromptVocabulary } from '../../src/prompt/fimPrompt';
import { documentWindow } from '../../src/prompt/documentWindow';
import { MIN_SHIFTED_RUN, planShift } from '../../src/speculation/greedyEvaluator';
import { mulberry32 } from '../../testbed/ggufWriter';

const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe('planShift', () => {
  it('finds the head that was dropped and the run that follows it', () => {
    const cached = [1, 2, ...range(100, 40), ...range(200, 80), 7, 8];
    const prompt = [1, 2, ...range(200, 80), 9];
    assert.deepEqual(planShift(cached, prompt, 2), { drop: 40, run: 80 });
  });

  it('leaves the last prompt token to evaluate, and refuses runs shorter than MIN_SHIFTED_RUN', () => {
    const cached = [1, ...range(100, 10), ...range(200, 60)];
    assert.deepEqual(planShift(cached, [1, ...range(200, 60)], 1), { drop: 10, run: 59 });
    const short = [1, ...range(100, 10), ...range(200, MIN_SHIFTED_RUN - 1), 5];
    assert.equal(planShift(short, [1, ...range(200, MIN_SHIFTED_RUN - 1), 6, 6], 1), null);
  });

  it('refuses a reordering: a dropped part the prompt still holds further on (a FIM middle that joined the head)', () => {
    const SUF = 90;
    const MID = 91;
    // Cached: head, <suf>, suffix, <mid>, middle lines. Prompt: head + middle lines, <suf>, suffix, <mid>.
    const cached = [1, ...range(100, 20), SUF, ...range(300, 5), MID, ...range(200, 50)];
    const prompt = [1, ...range(100, 20), ...range(200, 50), SUF, ...range(300, 5), MID, 400];
    assert.equal(planShift(cached, prompt, 21), null);
  });

  it('on random caches, a plan always leaves the cache equal to the start of the prompt', () => {
    const rand = mulberry32(9);
    for (let n = 0; n < 500; n++) {
      const head = range(0, 1 + Math.floor(rand() * 5));
      const dropped = Array.from({ length: 1 + Math.floor(rand() * 60) }, () => 500 + Math.floor(rand() * 50));
      const kept = Array.from({ length: Math.floor(rand() * 120) }, () => 1000 + Math.floor(rand() * 20));
      const tail = Array.from({ length: Math.floor(rand() * 10) }, () => Math.floor(rand() * 2000));
      const cached = [...head, ...dropped, ...kept, ...tail];
      const prompt = [...head, ...kept, ...Array.from({ length: 1 + Math.floor(rand() * 5) }, () => 3000)];
      const plan = planShift(cached, prompt, head.length);
      if (!plan) continue;
      const after = [...cached.slice(0, head.length), ...cached.slice(head.length + plan.drop, head.length + plan.drop + plan.run)];
      assert.deepEqual(after, prompt.slice(0, head.length + plan.run));
      assert.ok(plan.run >= MIN_SHIFTED_RUN && head.length + plan.run < prompt.length);
    }
  });
});

describe('FIM layout with document line numbers', () => {
  // One token per character keeps the arithmetic visible; the budget forces the head to be cut.
  const vocab: PromptVocabulary = { tokenize: (t) => [...t].map((c) => 1000 + c.charCodeAt(0)), bos: 1, fim: { prefix: 10, suffix: 11, middle: 12 } };
  const doc = (lines: number) => Array.from({ length: lines }, (_, i) => `line ${String(i).padStart(3, '0')} of code;`).join('\n');
  const headStart = (tokens: number[]) => String.fromCharCode(...tokens.slice(2, 14).map((t) => t - 1000));

  it('a typed character changes only the tokens after the cursor line group, deep in a file', () => {
    const text = `${doc(200)}\n  value = `;
    const before = buildPrompt(vocab, text, '\n}\n', 1200, { prefixLine: 0 }).tokens;
    const after = buildPrompt(vocab, `${text}x`, '\n}\n', 1200, { prefixLine: 0 }).tokens;
    assert.deepEqual(after.slice(0, before.length), before);
    assert.equal(after.length, before.length + 1);
  });

  it('the head starts on a line that is a multiple of HEAD_CUT_LINES and only moves forward as the user types lines', () => {
    const full = doc(400);
    let previous = -1;
    let moves = 0;
    let last = '';
    for (let lines = 60; lines < 400; lines++) {
      const text = full.split('\n').slice(0, lines).join('\n');
      const tokens = buildPrompt(vocab, `${text}\n`, '', 1200, { prefixLine: 0 }).tokens;
      const first = Number(/line (\d+)/.exec(headStart(tokens))![1]);
      assert.equal(first % HEAD_CUT_LINES, 0, headStart(tokens));
      assert.ok(first >= previous, `the head went back from line ${previous} to ${first}`);
      if (first !== previous) moves++;
      previous = first;
      last = headStart(tokens);
    }
    assert.ok(moves > 5 && moves < 400 / HEAD_CUT_LINES + 2, `${moves} moves, last at ${last}`);
  });

  it("the editor's window moving down (in 512-character steps) moves neither the head nor the middle", () => {
    const full = `${doc(300)}\n`;
    const lineStarts = [0];
    for (let i = full.indexOf('\n'); i >= 0; i = full.indexOf('\n', i + 1)) lineStarts.push(i + 1);
    const source = { length: full.length, slice: (s: number, e: number) => full.slice(s, e), lineAt: (o: number) => lineStarts.filter((s) => s <= o).length - 1 };
    const prompts = new Set<string>();
    // One cursor, the window limited so that its start depends on the cursor's offset: several windows
    // that all end at the cursor give the same prompt.
    const cursor = lineStarts[250]!;
    for (const maxPrefixChars of [3000, 3400, 3900, 4500]) {
      const w = documentWindow(source, cursor, { maxPrefixChars, maxSuffixChars: 0 });
      assert.ok(w.prefixLine !== undefined);
      prompts.add(buildPrompt(vocab, w.prefix, '', 900, { prefixLine: w.prefixLine }).tokens.join());
    }
    assert.equal(prompts.size, 1);
  });

  it('line groups are counted from the document start when the line is known', () => {
    const text = `${doc(30)}\n  x`;
    const lines = text.split('\n');
    // The same cursor, windows starting 3 lines apart: the middle starts at the same document line.
    const a = buildPrompt(vocab, lines.slice(3).join('\n'), '', 5000, { prefixLine: 3 });
    const b = buildPrompt(vocab, lines.slice(6).join('\n'), '', 5000, { prefixLine: 6 });
    assert.equal(a.middleTokens, b.middleTokens);
    const cursorLine = 30;
    const groupFirst = Math.floor((cursorLine - 1) / ANCHOR_LINE_GROUP) * ANCHOR_LINE_GROUP + 1;
    assert.equal(a.middleTokens, lines.slice(groupFirst).join('\n').length + 1);
  });
});
