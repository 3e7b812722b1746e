// llama-server's ngram-simple and ngram-mod speculation, ported for the edits replay
// (bench/llamaServerProposers.ts): the rules of the C++ source, case by case.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NGRAM_MOD_DEFAULTS, NgramModProposer, NgramModState, NgramSimpleProposer, ngramSimpleDraft } from '../../llamaServerProposers';
import { mulberry32 } from '../../../testbed/ggufWriter';

const randomTokens = (seed: number, n: number) => {
  const rand = mulberry32(seed);
  return Array.from({ length: n }, () => 100 + Math.floor(rand() * 5000));
};

describe("llama-server's ngram-simple, ported", () => {
  it('drafts the 48 tokens after the latest earlier occurrence of the last 12 (the sampled one last)', () => {
    const window = randomTokens(1, 200);
    // The prompt holds the window; the output has copied its first 30 tokens.
    const history = [...randomTokens(2, 50), ...window, ...randomTokens(3, 10), ...window.slice(0, 30)];
    assert.deepEqual(ngramSimpleDraft(history), window.slice(30, 78));
  });

  it('the latest occurrence wins (searching backwards), and it never matches itself', () => {
    const a = randomTokens(4, 100);
    const b = [...a.slice(0, 40), ...randomTokens(5, 60)];
    // a, then b (same first 40 tokens, then different), then the output repeating the first 20.
    const history = [...a, ...b, ...a.slice(0, 20)];
    assert.deepEqual(ngramSimpleDraft(history), b.slice(20, 68));
  });

  it('no draft: too short a history, no occurrence, or fewer than 12 tokens to copy after it', () => {
    const w = randomTokens(6, 40);
    assert.deepEqual(ngramSimpleDraft(w.slice(0, 61)), []);
    assert.deepEqual(ngramSimpleDraft(randomTokens(7, 300)), []);
    // A run of one token: the latest occurrence overlaps the pattern itself, 1 token after it (< 12).
    const x = randomTokens(8, 100);
    assert.deepEqual(ngramSimpleDraft([...x, ...Array<number>(20).fill(7)]), []);
    // 11 tokens between two occurrences: the draft is those 11 and the second occurrence's first 11
    // (the tokens after the match run on into the pattern), cut at 48.
    const pattern = randomTokens(9, 12);
    const between = randomTokens(10, 11);
    assert.deepEqual(ngramSimpleDraft([...x, ...pattern, ...between, ...pattern]), [...between, ...pattern.slice(0, 11)]);
  });

  it('as a proposer: cut to the tokens the request has left', () => {
    const window = randomTokens(11, 200);
    const history = [...randomTokens(12, 50), ...window, ...window.slice(0, 30)];
    assert.equal(new NgramSimpleProposer().offer(history, 5)?.tokens.length, 5);
  });
});

describe("llama-server's ngram-mod, ported", () => {
  it('chains lookups of the last 24 tokens from the prompt: up to 64 tokens', () => {
    const window = randomTokens(20, 300);
    const prompt = [...randomTokens(21, 40), ...window];
    const proposer = new NgramModProposer(prompt.length);
    const history = [...prompt, ...window.slice(0, 30)];
    assert.deepEqual(proposer.offer(history, 1000)?.tokens, window.slice(30, 30 + NGRAM_MOD_DEFAULTS.nMax));
  });

  // Small parameters (n_match 4) to see every rule on a hand-written history.
  const prompt = [1, 2, 3, 4, 5, 6, 7, 8, 50, 51, 9];
  const history = [...prompt, 2, 3, 4, 5];

  it('the chain stops where an n-gram has no successor: a draft when it is at least n_min long, else none', () => {
    // Keys from the prompt: [1 2 3 4]→5 … [7 8 50 51]→9; from the output's last four (2 3 4 5): 6 7 8 50 51 9, then no successor.
    assert.deepEqual(new NgramModProposer(prompt.length, new NgramModState(), { nMatch: 4, nMax: 10, nMin: 6 }).offer(history, 100)?.tokens, [6, 7, 8, 50, 51, 9]);
    assert.equal(new NgramModProposer(prompt.length, new NgramModState(), { nMatch: 4, nMax: 10, nMin: 7 }).offer(history, 100), null);
    assert.deepEqual(new NgramModProposer(prompt.length, new NgramModState(), { nMatch: 4, nMax: 4, nMin: 2 }).offer(history, 100)?.tokens, [6, 7, 8, 50]);
    assert.deepEqual(new NgramModProposer(prompt.length, new NgramModState(), { nMatch: 4, nMax: 10, nMin: 2 }).offer(history, 3)?.tokens, [6, 7, 8], 'cut to the request');
  });

  it("keeps its table across requests, as a server slot does: a later request drafts from an earlier one's prompt", () => {
    const params = { nMatch: 4, nMax: 10, nMin: 2 };
    const state = new NgramModState();
    // The first request's prompt holds 1 2 3 4 5 6 7 8 50 51 9; the second's prompt does not.
    assert.ok(new NgramModProposer(prompt.length, state, params).offer(history, 100));
    const second = [70, 71, 72, 73, 74];
    assert.deepEqual(new NgramModProposer(second.length, state, params).offer([...second, 2, 3, 4, 5], 100)?.tokens, [6, 7, 8, 50, 51, 9]);
    // A fresh server knows only its own prompt.
    assert.equal(new NgramModProposer(second.length, new NgramModState(), params).offer([...second, 2, 3, 4, 5], 100), null);
  });

  it('five drafts in a row with under a quarter accepted empty the table (refilled only 32 tokens later)', () => {
    const proposer = new NgramModProposer(prompt.length, new NgramModState(), { nMatch: 4, nMax: 10, nMin: 2 });
    for (let i = 0; i < 4; i++) {
      assert.ok(proposer.offer(history, 100));
      proposer.record(6, 1);
    }
    assert.ok(proposer.offer(history, 100));
    proposer.record(6, 2); // 2/6 ≥ 0.25: the streak ends
    for (let i = 0; i < 5; i++) {
      assert.ok(proposer.offer(history, 100), `draft ${i}`);
      proposer.record(6, 1);
    }
    assert.equal(proposer.offer(history, 100), null);
  });
});
