// The two ways LlamaSequenceEvaluator reads greedy tokens (src/inference/llamaSequenceEvaluator.ts):
// the direct path (one reused native sampler, outputs read in order and only up to the first
// rejection) must give exactly what the library's public controlledEvaluate gives.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LlamaContext, LlamaModel } from '../../src/inference/llamaTypes';
import { getRuntime } from '../../src/inference/llamaRuntime';
import { LlamaSequenceEvaluator } from '../../src/inference/llamaSequenceEvaluator';
import { embeddedPairPaths } from '../../src/models/embedded';
import { mulberry32 } from '../support/ggufWriter';

const ROOT = path.resolve(__dirname, '../..');

describe('LlamaSequenceEvaluator: direct path equals the library path', () => {
  let model: LlamaModel;
  const contexts: LlamaContext[] = [];
  const evaluators: LlamaSequenceEvaluator[] = [];
  let prompt: number[];

  const make = async (path: 'direct' | 'library') => {
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

  it('picks the direct path on the installed node-llama-cpp, and the library path when asked', async () => {
    const direct = await make('direct');
    const library = await make('library');
    assert.equal(direct.path, 'direct');
    assert.equal(library.path, 'library');
    const context = await model.createContext({ contextSize: 128, sequences: 1, threads: 1 });
    contexts.push(context);
    // Without the model the native sampler cannot be made: the public API is used.
    assert.equal(new LlamaSequenceEvaluator(context.getSequence()).path, 'library');
  });

  it('gives the same greedy tokens and confidences for every output position, batch after batch', async () => {
    const direct = await make('direct');
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
          assert.ok(Math.abs(n.confidence! - b[i].confidence!) < 1e-5, `confidence ${n.confidence} vs ${b[i].confidence}`);
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

  it('confidence is the greedy token probability the library reports (softmax of the logits)', async () => {
    const direct = await make('direct');
    const [next] = await direct.append(prompt, 1, true);
    const context = await model.createContext({ contextSize: 512, sequences: 1, threads: 1 });
    contexts.push(context);
    const out = await context.getSequence().controlledEvaluate(prompt.map((t, i) => (i === prompt.length - 1 ? [t, { generateNext: { token: true, confidence: true } }] : t)) as never);
    const reference = out.at(-1)!.next!;
    assert.equal(next.token, reference.token);
    assert.ok(Math.abs(next.confidence! - reference.confidence!) < 1e-5, `${next.confidence} vs ${reference.confidence}`);
  });

  it('with an expected proposal, stops reading outputs after the first token that differs', async () => {
    const direct = await make('direct');
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
    // Without an expected proposal every position is read.
    await direct.truncate(prompt.length);
    const all = await direct.append([first.token, 11, 12, 13], 4);
    assert.deepEqual(
      all.map((n) => n.token),
      truth,
    );
  });
});
