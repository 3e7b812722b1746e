// The decoder loop against a pure stand-in model: fast enough for thousands of cases. The same
// properties are checked against real GGUF models in lossless.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DecodeMode, Token } from '../../src/shared/decoding';
import type { SpeculationSettings } from '../../src/shared/settings';
import { findInSequence } from '../../src/ngram';
import { DraftModelProposer } from '../../src/speculation/draftModelProposer';
import { LookaheadPool, LookaheadProposer } from '../../src/speculation/lookaheadPool';
import { proposersFor } from '../../src/speculation/modeProposers';
import { NgramProposer } from '../../src/speculation/ngramProposer';
import { WINDOW_STEP, WindowDraftProposer } from '../../src/speculation/windowDraft';
import { SpeculationPolicy } from '../../src/speculation/policy';
import { decode } from '../../src/speculation/speculativeDecoder';
import { StopRules } from '../../src/stopping/stopRules';
import { FAKE_EOS as EOS, FAKE_VOCAB as VOCAB, FakeEvaluator, fakeDetokenize as detokenize, hashModel, repetitiveModel } from '../support/fakeModel';
import { sourceStats } from '../../src/shared/generationStats';

function settings(over: Partial<SpeculationSettings> = {}): SpeculationSettings {
  return { maxProposal: 6, ngramMinMatch: 2, ngramMaxMatch: 6, draftMinConfidence: 0, adaptive: false, lookahead: false, ...over };
}

/** A model that repeats itself like code: the next token copies an earlier span three times in four. */
const codeLike = (seed: number) => repetitiveModel(seed, 4);

function noisy(model: (h: readonly Token[]) => Token, accuracy: number, seed: number) {
  const coin = hashModel(seed ^ 0x5bd1e995, 1000, 4);
  return (history: readonly Token[]): Token => (coin(history) < accuracy * 1000 ? model(history) : (model(history) + 1) % VOCAB);
}

const ngram = (minN: number, maxN: number) =>
  new NgramProposer((history, maxLen) => {
    const m = findInSequence(history, { minN, maxN, maxLen });
    return m ? { tokens: m.tokens, matchLength: m.n } : null;
  });

async function run(
  mode: DecodeMode,
  model: (h: readonly Token[]) => Token,
  prompt: Token[],
  opts: {
    target?: FakeEvaluator;
    draftAccuracy?: number;
    seed?: number;
    maxTokens?: number;
    stopStrings?: string[];
    spec?: Partial<SpeculationSettings>;
    signal?: AbortSignal;
    lookahead?: LookaheadPool;
  } = {},
) {
  const target = opts.target ?? new FakeEvaluator(model);
  const draftEval = new FakeEvaluator(noisy(model, opts.draftAccuracy ?? 0.7, opts.seed ?? 1));
  const stop = new StopRules({ detokenize, isEndToken: (t) => t === EOS, maxTokens: opts.maxTokens ?? 80, stopStrings: opts.stopStrings });
  const stats = await decode({
    mode,
    target,
    prompt,
    stop,
    policy: new SpeculationPolicy(settings(opts.spec)),
    proposers: proposersFor(mode, [ngram(2, 6), new DraftModelProposer(draftEval, 0), opts.lookahead && new LookaheadProposer(opts.lookahead)]),
    signal: opts.signal,
  });
  return { tokens: [...stop.tokens], text: stop.finalText, stats, target };
}

function prompts(seed: number, count: number): Token[][] {
  const h = hashModel(seed, VOCAB - 1, 1);
  return Array.from({ length: count }, (_, i) => {
    const len = 1 + ((i * 7) % 40);
    const p: Token[] = [];
    for (let j = 0; j < len; j++) p.push(i % 5 === 0 ? j % 3 : h([i, j, ...p.slice(-1)]));
    return p;
  });
}

describe('speculative decoder (stand-in model)', () => {
  it('every mode equals plain greedy decoding, token for token', async () => {
    let cases = 0;
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const model = seed % 2 ? codeLike(seed) : hashModel(seed, VOCAB, 3);
      for (const prompt of prompts(seed, 25)) {
        const plain = await run('plain', model, prompt);
        for (const mode of ['ngram', 'draft', 'hybrid'] as const) {
          for (const adaptive of [false, true]) {
            const spec = await run(mode, model, prompt, { seed, draftAccuracy: 0.3 + (seed % 3) * 0.3, spec: { adaptive } });
            assert.deepEqual(spec.tokens, plain.tokens, `${mode} adaptive=${adaptive} seed ${seed} prompt ${prompt.join(',')}`);
            assert.equal(spec.text, plain.text);
            assert.equal(spec.stats.stopReason, plain.stats.stopReason);
            cases++;
          }
        }
      }
    }
    assert.equal(cases, 6 * 25 * 6);
  });

  it('plain decoding takes one target evaluation per token', async () => {
    const model = hashModel(9, VOCAB - 1, 3);
    const r = await run('plain', model, [1, 2, 3], { maxTokens: 40 });
    assert.equal(r.tokens.length, 40);
    // The prompt evaluation yields the first token; then one evaluation per further token.
    assert.equal(r.stats.speculation.targetEvaluations, 40);
  });

  it('a perfect draft accepts whole proposals: k+1 tokens per target evaluation', async () => {
    const model = hashModel(11, VOCAB - 1, 3);
    const r = await run('draft', model, [5, 6, 7], { draftAccuracy: 1, maxTokens: 71, spec: { maxProposal: 6 } });
    assert.equal(r.tokens.length, 71);
    // The prompt's evaluation gives the first token, then 70 tokens at 7 per evaluation.
    assert.equal(r.stats.speculation.targetEvaluations, 11);
    assert.equal(sourceStats(r.stats.speculation, 'draft').acceptedTokens, sourceStats(r.stats.speculation, 'draft').proposedTokens);
  });

  it('a useless draft still gives the exact output, one token per evaluation', async () => {
    const model = hashModel(12, VOCAB - 1, 3);
    const plain = await run('plain', model, [1]);
    const r = await run('draft', model, [1], { draftAccuracy: 0 });
    assert.deepEqual(r.tokens, plain.tokens);
    assert.equal(sourceStats(r.stats.speculation, 'draft').acceptedTokens, 0);
    assert.equal(r.stats.speculation.targetEvaluations, plain.stats.speculation.targetEvaluations);
  });

  it('stops inside an accepted proposal exactly where plain decoding stops', async () => {
    const model = codeLike(21);
    for (const prompt of prompts(21, 20)) {
      const plain = await run('plain', model, prompt, { maxTokens: 60 });
      // Stop strings drawn from the plain output itself, so they hit mid-proposal.
      const stopAt = plain.text.slice(17, 20);
      for (const maxTokens of [1, 2, 7, 33]) {
        const p = await run('plain', model, prompt, { maxTokens, stopStrings: stopAt ? [stopAt] : [] });
        for (const mode of ['ngram', 'draft', 'hybrid'] as const) {
          const s = await run(mode, model, prompt, { maxTokens, stopStrings: stopAt ? [stopAt] : [], draftAccuracy: 1 });
          assert.deepEqual(s.tokens, p.tokens, `${mode} maxTokens ${maxTokens}`);
          assert.equal(s.text, p.text);
          assert.equal(s.stats.stopReason, p.stats.stopReason);
        }
      }
    }
  });

  it('EOS inside a proposal ends generation without emitting it', async () => {
    // A model that emits EOS after 10 generated tokens.
    const base = hashModel(31, VOCAB - 1, 2);
    const model = (h: readonly Token[]) => (h.length === 14 ? EOS : base(h));
    const plain = await run('plain', model, [1, 2, 3, 4]);
    assert.equal(plain.stats.stopReason, 'eos');
    assert.equal(plain.tokens.length, 10);
    const spec = await run('draft', model, [1, 2, 3, 4], { draftAccuracy: 1 });
    assert.deepEqual(spec.tokens, plain.tokens);
    assert.equal(spec.stats.stopReason, 'eos');
  });

  it('cancellation in the middle of a verify step stops within that step and leaves a consistent cache', async () => {
    const model = codeLike(41);
    const prompt = prompts(41, 1)[0];
    const plain = await run('plain', model, prompt);
    const target = new FakeEvaluator(model);
    const controller = new AbortController();
    const original = target.append.bind(target);
    let calls = 0;
    target.append = async (input, outputs, c) => {
      if (++calls === 4) controller.abort(); // the user typed while the 4th evaluation was running
      return original(input, outputs, c);
    };
    const aborted = await run('hybrid', model, prompt, { target, signal: controller.signal, draftAccuracy: 0.8 });
    assert.equal(aborted.stats.stopReason, 'abort');
    assert.ok(calls <= 4, `no evaluation after the abort (${calls})`);
    assert.deepEqual(aborted.tokens, plain.tokens.slice(0, aborted.tokens.length), 'partial output is a prefix of the exact one');
    // The next request on the same cache is exact again.
    target.append = original;
    const again = await run('hybrid', model, prompt, { target });
    assert.deepEqual(again.tokens, plain.tokens);
    assert.ok(again.stats.reusedPromptTokens >= prompt.length - 1, 'prompt KV reused after the abort');
  });

  it('an already aborted request evaluates nothing', async () => {
    const model = hashModel(2, VOCAB - 1);
    const controller = new AbortController();
    controller.abort();
    const r = await run('hybrid', model, [1, 2], { signal: controller.signal });
    assert.equal(r.stats.stopReason, 'abort');
    assert.equal(r.target.evaluations, 0);
  });

  it('reuses the KV prefix across requests: one more typed token evaluates only the new tail', async () => {
    const model = hashModel(3, VOCAB - 1);
    const target = new FakeEvaluator(model);
    const prompt = prompts(3, 3)[2];
    await run('plain', model, prompt, { target, maxTokens: 5 });
    const before = target.evaluatedTokens;
    const r = await run('plain', model, [...prompt, 7], { target, maxTokens: 1 });
    assert.equal(r.stats.reusedPromptTokens, prompt.length);
    assert.equal(target.evaluatedTokens - before, 1);
  });

  it('n-gram reuse on repetitive text needs fewer target evaluations than plain', async () => {
    const model = codeLike(5);
    let plainEvals = 0;
    let ngramEvals = 0;
    for (const prompt of prompts(5, 10)) {
      plainEvals += (await run('plain', model, prompt)).stats.speculation.targetEvaluations;
      ngramEvals += (await run('ngram', model, prompt)).stats.speculation.targetEvaluations;
    }
    assert.ok(ngramEvals < plainEvals * 0.8, `ngram ${ngramEvals} vs plain ${plainEvals}`);
  });

  it('respects the context capacity instead of overflowing', async () => {
    const model = hashModel(8, VOCAB - 1);
    const target = new FakeEvaluator(model, 40);
    const r = await run('draft', model, prompts(8, 1)[0].concat([1, 2, 3]), { target, maxTokens: 100, draftAccuracy: 1 });
    assert.ok(target.tokens.length <= 40);
    assert.equal(r.stats.stopReason, 'contextFull');
  });
});

describe("the lookahead pool (the target's outputs after a rejected guess)", () => {
  it('chains continuations from the end of the history, newest first, bounded', () => {
    const pool = new LookaheadPool(3, 4);
    pool.add([1, 2], 3);
    pool.add([2, 3], 4);
    pool.add([3, 4], 5);
    assert.deepEqual(pool.find([9, 1, 2], 10), [3, 4, 5]);
    assert.deepEqual(pool.find([9, 1, 2], 2), [3, 4]);
    pool.add([1, 2], 7);
    assert.deepEqual(pool.find([1, 2], 10), [7], 'the newest continuation of a key wins');
    pool.add([5, 5], 5);
    pool.add([6, 6], 6);
    assert.equal(pool.size, 4);
    assert.deepEqual(pool.find([2, 3], 1), [], 'the oldest entries went first');
    assert.deepEqual(pool.find([5, 5], 3), [5, 5, 5], 'a cycle stops at maxLen');
  });

  it('harvests the batch positions from the one after the rejection, each keyed by the tokens before it', () => {
    const pool = new LookaheadPool(3);
    // history ... 10, 11 (pending = 11), proposal 20 21 22; the target said 20 then 30 (rejects 21), then 31 after 21, 32 after 22.
    const sequence = [10, 11, 20, 21, 22];
    pool.harvest(sequence, 1, [20, 30, 31, 32], 2);
    assert.deepEqual(pool.find([20, 21], 1), [31]);
    assert.deepEqual(pool.find([21, 22], 1), [32]);
    assert.deepEqual(pool.find([11, 20], 1), [], 'the correction at the rejection is the true history, not kept');
  });

  it('n-gram modes with the pool stay lossless, token for token, adaptive or not, and its proposals get accepted', async () => {
    let cases = 0;
    let proposed = 0;
    let accepted = 0;
    for (const seed of [1, 2, 3, 4]) {
      const model = seed % 2 ? codeLike(seed) : hashModel(seed, VOCAB, 3);
      const pool = new LookaheadPool();
      for (const prompt of prompts(seed, 20)) {
        const plain = await run('plain', model, prompt, { maxTokens: 120 });
        for (const mode of ['ngram', 'hybrid'] as const) {
          for (const adaptive of [false, true]) {
            const spec = await run(mode, model, prompt, { seed, maxTokens: 120, spec: { adaptive }, lookahead: pool });
            assert.deepEqual(spec.tokens, plain.tokens, `${mode} adaptive=${adaptive} seed ${seed} prompt ${prompt.join(',')}`);
            assert.equal(spec.stats.stopReason, plain.stats.stopReason);
            proposed += sourceStats(spec.stats.speculation, 'lookahead').proposedTokens;
            accepted += sourceStats(spec.stats.speculation, 'lookahead').acceptedTokens;
            cases++;
          }
        }
      }
    }
    assert.equal(cases, 320);
    assert.ok(proposed > 0 && accepted > 0, `lookahead proposed ${proposed}, accepted ${accepted}`);
  });

  it('without the pool no lookahead proposal is made', async () => {
    const r = await run('hybrid', codeLike(3), [1, 2, 3, 4, 5]);
    assert.equal(sourceStats(r.stats.speculation, 'lookahead').steps, 0);
  });
});

describe('the target as its own draft on a KV window', () => {
  it('holds the sinks and the prompt from a cut that moves in steps, so a keystroke keeps its cache', () => {
    const evaluator = new FakeEvaluator(hashModel(5, VOCAB, 2));
    const prompt = Array.from({ length: 300 }, (_, i) => i % 50);
    const a = new WindowDraftProposer(evaluator, 0, prompt.length, 100);
    const b = new WindowDraftProposer(evaluator, 0, prompt.length + 1, 100);
    const window = a.windowOf([...prompt, 7, 8]);
    assert.deepEqual(window.slice(0, 4), prompt.slice(0, 4), 'the attention sinks');
    assert.deepEqual(window.slice(-2), [7, 8], 'the generated tokens join the window');
    assert.ok(window.length >= 100 && window.length <= 100 + WINDOW_STEP + 2, `window of ${window.length}`);
    assert.deepEqual(b.windowOf([...prompt, 9]).slice(0, -1), window.slice(0, -2), 'one more prompt token (typed): the same window start');
    const short = new WindowDraftProposer(evaluator, 0, 50, 100);
    assert.deepEqual(short.windowOf(prompt.slice(0, 52)), prompt.slice(0, 52), 'a prompt shorter than the window is all kept');
  });

  it('stays lossless: proposals from the window are verified by the full target', async () => {
    for (const seed of [1, 2, 3]) {
      const model = seed % 2 ? codeLike(seed) : hashModel(seed, VOCAB, 3);
      for (const prompt of prompts(seed, 10)) {
        const plain = await run('plain', model, prompt);
        const target = new FakeEvaluator(model);
        const stop = new StopRules({ detokenize, isEndToken: (t) => t === EOS, maxTokens: 80 });
        await decode({
          mode: 'draft',
          target,
          prompt,
          stop,
          policy: new SpeculationPolicy(settings({ adaptive: false })),
          proposers: [new WindowDraftProposer(new FakeEvaluator(model), 0, prompt.length, 8)],
        });
        assert.deepEqual([...stop.tokens], plain.tokens, `seed ${seed} prompt ${prompt.join(',')}`);
      }
    }
  });
});
