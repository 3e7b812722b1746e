// The ways LlamaSequenceEvaluator reads greedy tokens (src/llama/llamaSequenceEvaluator.ts): the
// native path (Draftline's greedy reader, src/llama/native/: all positions in one call) and
// the direct path (one reused native sampler), both reading outputs in order and only up to the first
// rejection, must give exactly what the library's public controlledEvaluate gives.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LlamaContext, LlamaModel } from '../../src/llama/llamaTypes';
import { getRuntime } from '../../src/inference/llamaRuntime';
import { type EvaluatorPath, LlamaSequenceEvaluator } from '../../src/llama/llamaSequenceEvaluator';
import { attachThreadpool, loadNativeAddon, nativeAddonFor } from '../../src/llama/nativeAddon';
import { embeddedPairPaths } from '../../src/models/embedded';
import { mulberry32 } from '../../testbed/ggufWriter';

const ROOT = path.resolve(__dirname, '../..');

const FAST_PATHS = ['native', 'direct'] as const;

/**
 * Whether two evaluators' confidences come from the same sum in the same order (bitwise equal): the
 * native reader and the library's totalLogitWeight do (token order), and the library's confidence
 * with itself (sorted order).
 */
const sameSum = (a: LlamaSequenceEvaluator, b: LlamaSequenceEvaluator) => {
  const order = (e: LlamaSequenceEvaluator) => (e.confidenceSource === 'confidence' ? 'sorted' : 'token order');
  return order(a) === order(b);
};

describe('LlamaSequenceEvaluator: the native and direct paths equal the library path', () => {
  let model: LlamaModel;
  const contexts: LlamaContext[] = [];
  const evaluators: LlamaSequenceEvaluator[] = [];
  let prompt: number[];

  const make = async (path: EvaluatorPath) => {
    const context = await model.createContext({ contextSize: 512, sequences: 1, threads: 1 });
    contexts.push(context);
    const evaluator = new LlamaSequenceEvaluator(context.getSequence(), model, path);
    evaluators.push(evaluator);
    return evaluator;
  };

  before(async () => {
    const llama = await getRuntime({ gpu: 'cpu' }, 1, () => undefined);
    model = await llama.loadModel({ modelPath: embeddedPairPaths(ROOT, 'tiny').target });
    prompt = model.tokenize('export function clamp(value: number, min: number, max: number): number {\n  if (value < min) return min;\n');
  });

  after(async () => {
    for (const e of evaluators) await e.dispose();
    for (const c of contexts) await c.dispose();
    await model.dispose();
  });

  it('picks the native path on the installed node-llama-cpp, and the others when asked', async () => {
    const context = await model.createContext({ contextSize: 256, sequences: 1, threads: 1 });
    contexts.push(context);
    const chosen = new LlamaSequenceEvaluator(context.getSequence(), model);
    evaluators.push(chosen);
    // npm run build makes the reader (scripts/build-native.mjs); the test suite requires it.
    assert.equal(chosen.path, 'native', `native reader unavailable: ${chosen.nativeUnavailable}`);
    assert.equal(chosen.nativeUnavailable, undefined);
    const direct = await make('direct');
    const library = await make('library');
    assert.equal(direct.path, 'direct');
    assert.equal(library.path, 'library');
    const bare = await model.createContext({ contextSize: 128, sequences: 1, threads: 1 });
    contexts.push(bare);
    // Without the model the native sampler cannot be made: the public API is used.
    assert.equal(new LlamaSequenceEvaluator(bare.getSequence()).path, 'library');
  });

  it('finds out what the installed node-llama-cpp offers, as its own source says: totalLogitWeight, and the sampling lock the native reader takes', async () => {
    const addonSource = path.join(ROOT, 'node_modules', 'node-llama-cpp', 'llama', 'addon');
    const offersWeight = readFileSync(path.join(addonSource, 'AddonContext.cpp'), 'utf8').includes('returnTotalLogitWeight');
    const hasSamplingLock = readFileSync(path.join(addonSource, 'AddonContext.h'), 'utf8').includes('sharedSamplerData');
    const direct = await make('direct');
    const library = await make('library');
    const native = await make('native');
    for (const e of [direct, library, native]) await e.append(prompt, 2, true);
    const expected = offersWeight ? 'totalLogitWeight' : 'confidence';
    assert.equal(direct.confidenceSource, expected);
    assert.equal(library.confidenceSource, expected);
    assert.equal(native.confidenceSource, 'native reader');
    const loaded = loadNativeAddon();
    assert.ok('addon' in loaded, 'error' in loaded ? loaded.error : '');
    assert.equal(loaded.addon.takesSamplingLock, hasSamplingLock);
  });

  for (const fast of FAST_PATHS)
    it(`${fast}: gives the same greedy tokens and confidences for every output position, batch after batch`, async () => {
      const direct = await make(fast);
      const library = await make('library');
      const rand = mulberry32(7);
      const history = [...prompt];
      const a0 = await direct.append(prompt, 1, true);
      const b0 = await library.append(prompt, 1, true);
      assert.deepEqual(
        a0.map((n) => n.token),
        b0.map((n) => n.token),
      );
      for (let step = 0; step < 12; step++) {
        // A batch of plausible and random tokens with an output at every position.
        const batch = Array.from({ length: 1 + (step % 6) }, () => Math.floor(rand() * 4000) + 10);
        const withConfidence = step % 2 === 0;
        const a = await direct.append(batch, batch.length, withConfidence);
        const b = await library.append(batch, batch.length, withConfidence);
        assert.deepEqual(
          a.map((n) => n.token),
          b.map((n) => n.token),
          `step ${step}`,
        );
        if (withConfidence) {
          a.forEach((n, i) => {
            assert.ok(n.confidence! > 0 && n.confidence! <= 1);
            if (sameSum(direct, library)) {
              // The same Σ exp(logit - max) summed in the same order: the same number, not just close.
              assert.equal(n.confidence, b[i].confidence, `confidence ${n.confidence} vs ${b[i].confidence}`);
            } else {
              // node-llama-cpp without totalLogitWeight (3.21): the library's confidence is the same
              // probability summed after sorting the vocabulary, in float: equal up to float rounding.
              assert.ok(Math.abs(n.confidence! - b[i].confidence!) <= 1e-5 * b[i].confidence!, `confidence ${n.confidence} vs ${b[i].confidence}`);
            }
          });
        }
        history.push(...batch);
        if (step % 3 === 2) {
          await direct.truncate(history.length - 2);
          await library.truncate(history.length - 2);
          history.length -= 2;
        }
        assert.deepEqual(direct.tokens, history);
      }
    });

  for (const fast of FAST_PATHS)
    it(`${fast}: confidence is the greedy token probability the library reports (softmax of the logits)`, async () => {
      const direct = await make(fast);
      const [next] = await direct.append(prompt, 1, true);
      const context = await model.createContext({ contextSize: 512, sequences: 1, threads: 1 });
      contexts.push(context);
      const out = await context.getSequence().controlledEvaluate(prompt.map((t, i) => (i === prompt.length - 1 ? [t, { generateNext: { token: true, confidence: true } }] : t)) as never);
      const reference = out.at(-1)!.next!;
      assert.equal(next.token, reference.token);
      assert.ok(Math.abs(next.confidence! - reference.confidence!) < 1e-5, `${next.confidence} vs ${reference.confidence}`);
    });

  for (const fast of FAST_PATHS)
    it(`${fast}: with an expected proposal, stops reading outputs after the first token that differs`, async () => {
      const direct = await make(fast);
      const [first] = await direct.append(prompt, 1);
      // What the target itself would say after `first`, then a batch verifying a proposal of it.
      const library = await make('library');
      await library.append(prompt, 1);
      const truth = (await library.append([first.token, 11, 12, 13], 4)).map((n) => n.token);
      await library.truncate(prompt.length);
      // Plain greedy continuation: three tokens of it.
      const greedy = [first.token];
      for (let i = 0; i < 3; i++) {
        const [n] = await library.append([greedy.at(-1)!], 1);
        greedy.push(n.token);
      }
      const proposal = [greedy[1], greedy[2] === 0 ? 1 : 0, 99];
      const got = await direct.append([first.token, ...proposal], 4, false, proposal);
      // Position 0 agrees with the proposal, position 1 does not: two outputs, the second the correction.
      assert.equal(got.length, 2);
      assert.equal(got[0].token, greedy[1]);
      assert.equal(got[1].token, greedy[2]);
      // The whole batch is still in the cache (the caller erases the rejected tail).
      assert.equal(direct.tokens.length, prompt.length + 4);
      // Every guess right: all positions are read, the last one the token after the proposal.
      await direct.truncate(prompt.length);
      const allRight = await direct.append([first.token, greedy[1], greedy[2]], 3, false, [greedy[1], greedy[2]]);
      assert.deepEqual(
        allRight.map((n) => n.token),
        greedy.slice(1, 4),
      );
      // An empty proposal: the one position after the pending token.
      await direct.truncate(prompt.length);
      assert.deepEqual(
        (await direct.append([first.token], 1, false, [])).map((n) => n.token),
        [greedy[1]],
      );
      // Without an expected proposal every position is read.
      await direct.truncate(prompt.length);
      const all = await direct.append([first.token, 11, 12, 13], 4);
      assert.deepEqual(
        all.map((n) => n.token),
        truth,
      );
    });

  for (const fast of FAST_PATHS)
    it(`${fast}: appendRanked gives the library's top tokens and top-two logit margin at every output position, its first the greedy token`, async () => {
      const ranked = await make(fast);
      const library = await make('library');
      const greedy = await make(fast);
      const rand = mulberry32(11);
      const TOP = 4;
      const first = await ranked.appendRanked(prompt, 3, TOP);
      const libraryFirst = await library.appendRanked(prompt, 3, TOP);
      const greedyFirst = await greedy.append(prompt, 3);
      let positions = 0;
      let smallMargins = 0;
      const check = (a: Awaited<ReturnType<LlamaSequenceEvaluator['appendRanked']>>, b: typeof a, g: { token: number }[], what: string) => {
        assert.equal(a.length, b.length, what);
        a.forEach((next, j) => {
          positions++;
          assert.equal(next.tokens.length, TOP, what);
          assert.equal(next.tokens[0], g[j].token, `${what}: rank 0 is the greedy token`);
          assert.deepEqual(next.tokens, b[j].tokens, `${what}, position ${j}`);
          assert.ok(next.margin >= 0 && Number.isFinite(next.margin), `${what}: margin ${next.margin}`);
          // ln(p1 / p2) from the library's float probabilities vs the difference of the logits.
          assert.ok(Math.abs(next.margin - b[j].margin) <= 1e-3 + 1e-4 * next.margin, `${what}, position ${j}: margin ${next.margin} vs ${b[j].margin}`);
          if (next.margin < 1) smallMargins++;
        });
      };
      check(first, libraryFirst, greedyFirst, 'prompt');
      for (let step = 0; step < 8; step++) {
        const batch = Array.from({ length: 1 + (step % 5) }, () => Math.floor(rand() * 4000) + 10);
        const outputs = step % 3 === 0 ? 1 : batch.length;
        check(await ranked.appendRanked(batch, outputs, TOP), await library.appendRanked(batch, outputs, TOP), await greedy.append(batch, outputs), `step ${step}`);
      }
      assert.deepEqual(ranked.tokens, greedy.tokens, 'the cache holds what was evaluated');
      assert.ok(positions >= 20, `${positions} positions`);
      process.stdout.write(`# ${fast}: ${positions} positions ranked, ${smallMargins} with a margin under 1\n`);
    });

  for (const fast of FAST_PATHS)
    it(`${fast}: appendRanked with probabilities gives the library's, the first the greedy token's confidence`, async () => {
      const ranked = await make(fast);
      const library = await make('library');
      const greedy = await make(fast);
      const TOP = 4;
      const rand = mulberry32(23);
      let positions = 0;
      const check = async (batch: number[], outputs: number, what: string) => {
        const [a, b, g] = [await ranked.appendRanked(batch, outputs, TOP, true), await library.appendRanked(batch, outputs, TOP, true), await greedy.append(batch, outputs, true)];
        a.forEach((next, j) => {
          positions++;
          const p = next.probabilities!;
          assert.equal(p.length, next.tokens.length, what);
          assert.deepEqual(next.tokens, b[j]!.tokens, `${what}, position ${j}`);
          for (const [r, x] of p.entries()) assert.ok(Math.abs(x - b[j]!.probabilities![r]!) <= 1e-4, `${what}, position ${j}, rank ${r}: ${x} vs the library's ${b[j]!.probabilities![r]}`);
          assert.ok(Math.abs(p[0]! - g[j]!.confidence!) <= 1e-5, `${what}: ${p[0]} vs the confidence ${g[j]!.confidence}`);
          assert.ok(p.every((x, r) => r === 0 || x <= p[r - 1]!) && p.reduce((t, x) => t + x, 0) <= 1 + 1e-5, `${what}: ${p}`);
        });
      };
      // Without asking, none.
      assert.equal((await (await make(fast)).appendRanked(prompt, 1, TOP))[0]!.probabilities, undefined);
      await check(prompt, 3, 'prompt');
      for (let step = 0; step < 6; step++) {
        const batch = Array.from({ length: 1 + (step % 3) }, () => Math.floor(rand() * 4000) + 10);
        await check(batch, step % 2 === 0 ? 1 : batch.length, `step ${step}`);
      }
      assert.ok(positions >= 10, `${positions} positions`);
    });

  it("the native reader's argmax picks what llama.cpp's greedy sampler picks: the first of equal logits, never a NaN after index 0", () => {
    const loaded = loadNativeAddon();
    assert.ok('addon' in loaded, 'error' in loaded ? loaded.error : '');
    // llama_sampler_greedy_apply, as written in llama.cpp.
    const greedy = (l: Float32Array) => {
      let selected = 0;
      for (let i = 1; i < l.length; i++) if (l[i] > l[selected]) selected = i;
      return selected;
    };
    const rand = mulberry32(3);
    for (let round = 0; round < 300; round++) {
      const n = 1 + Math.floor(rand() * 40) + (round % 7 === 0 ? 4000 : 0);
      // Few distinct values, so ties are everywhere; some -0 / +0 and NaN.
      const l = Float32Array.from({ length: n }, () => {
        const r = rand();
        return r < 0.05 ? Number.NaN : r < 0.1 ? -0 : r < 0.15 ? 0 : Math.floor(rand() * 5) - 2;
      });
      assert.equal(loaded.addon.argmax(l), greedy(l), `round ${round}: ${Array.from(l.slice(0, 40))}`);
    }
    assert.equal(loaded.addon.argmax(Float32Array.of(Number.NaN, 5, 7)), 0);
    assert.equal(loaded.addon.argmax(Float32Array.of(1, 3, 2, 3)), 1);
  });

  it('the native reader refuses a context whose layout it cannot confirm, and bad arguments, without crashing', async () => {
    const loaded = loadNativeAddon();
    assert.ok('addon' in loaded, 'error' in loaded ? loaded.error : '');
    const reader = loaded.addon;
    const context = await model.createContext({ contextSize: 256, sequences: 1, threads: 1, batchSize: 64 });
    contexts.push(context);
    const native = (context as unknown as { _ctx: object })._ctx;
    // The sizes the JS side gave llama.cpp must be found where the header says they are.
    assert.ok(reader.probe(native, 256, 64, 1).vocabularySize > 0);
    // Several sequences, an unpadded size: node-llama-cpp asks for contextSize × sequences cells, padded up to 256.
    const shared = await model.createContext({ contextSize: 300, sequences: 2, threads: 1, batchSize: 64 });
    contexts.push(shared);
    const usable = nativeAddonFor(shared);
    assert.ok('addon' in usable, 'error' in usable ? usable.error : '');
    assert.ok(reader.probe((shared as unknown as { _ctx: object })._ctx, 768, 64, 2).vocabularySize > 0);
    assert.throws(() => reader.probe(native, 512, 64, 1), /layout differs/);
    assert.throws(() => reader.probe(native, 256, 64, 2), /layout differs/);
    assert.throws(() => reader.probe({}, 256, 64, 1), /not a wrapped native context/);
    const four = new Int32Array(4);
    assert.throws(() => reader.readGreedy(native, new Int32Array(1), 2, four, -1, false, four, new Float32Array(4)), /shorter than the counts/);
    // A batch index with no output: llama.cpp has no logits there, which is an error, not a crash.
    const evaluator = new LlamaSequenceEvaluator(context.getSequence(), model, 'native');
    evaluators.push(evaluator);
    await evaluator.append(prompt.slice(0, 8), 1);
    assert.throws(() => reader.readGreedy(native, Int32Array.of(5), 1, four, -1, false, four, new Float32Array(4)), /no logits/);
    await evaluator.dispose();
    await context.dispose();
    assert.throws(() => reader.readGreedy(native, Int32Array.of(0), 1, four, -1, false, four, new Float32Array(4)), /disposed/);
  });

  it("a persistent threadpool gives the same greedy tokens as llama.cpp's per-graph threads, and is released once, after its context", async () => {
    const plainContext = await model.createContext({ contextSize: 512, sequences: 1, threads: 2 });
    const pooledContext = await model.createContext({ contextSize: 512, sequences: 1, threads: 2 });
    contexts.push(plainContext);
    // Two threads really (node-llama-cpp caps threads at the cores): else the pool has no workers to test.
    assert.equal(pooledContext.currentThreads, 2, 'this test needs 2 cores');
    const pool = attachThreadpool(pooledContext, 2);
    assert.ok('release' in pool, 'error' in pool ? pool.error : '');
    // One thread has no workers to keep; a second pool on the same context is refused.
    assert.ok('error' in attachThreadpool(plainContext, 1));
    assert.ok('error' in attachThreadpool(pooledContext, 2));
    const a = new LlamaSequenceEvaluator(plainContext.getSequence(), model);
    const b = new LlamaSequenceEvaluator(pooledContext.getSequence(), model);
    evaluators.push(a);
    const greedy = async (ev: LlamaSequenceEvaluator) => {
      const out = [(await ev.append(prompt, 1))[0].token];
      for (let i = 0; i < 40; i++) out.push((await ev.append([out.at(-1)!], 1))[0].token);
      // And a batch with an output at every position.
      const batch = (await ev.append(out.slice(0, 6), 6)).map((n) => n.token);
      return [...out, ...batch];
    };
    assert.deepEqual(await greedy(b), await greedy(a));
    // Not while the context lives: llama.cpp's CPU backend still points at the pool.
    assert.throws(() => pool.release(), /dispose the context before/);
    await b.dispose();
    await pooledContext.dispose();
    pool.release();
    pool.release();
    const loaded = loadNativeAddon();
    assert.ok('addon' in loaded);
    assert.equal(loaded.addon.releaseThreadpool((pooledContext as unknown as { _ctx: object })._ctx), false);
  });
});
