// The device greedy path (LlamaSequenceEvaluator 'device': llama.cpp's backend sampling argmaxes each
// output row in the decode's graph) against the native reader and the library, step for step, as the
// decode loop drives an evaluator: a prompt, plain steps, verify batches of k + 1 outputs with an
// expected proposal (reads stop at the first rejection), the rejected tail erased and re-appended,
// confidences and alternatives now and then (the device sampler detached for those batches and
// attached again). Shared by test/model/deviceGreedy.test.ts (CPU) and deviceGreedyVulkan.test.ts.
import assert from 'node:assert/strict';
import type { LlamaContext, LlamaModel } from '../../src/llama/llamaTypes';
import { type EvaluatorPath, LlamaSequenceEvaluator } from '../../src/llama/llamaSequenceEvaluator';
import { mulberry32, type RandomLlamaOptions } from '../../testbed/ggufWriter';

/** Two tokens whose output rows are the same (TIE_MODEL): their logits are always exactly equal. */
export const TIED = [500, 600] as const;
/**
 * A tied-output model whose token 600's row is token 500's: after either, both score highest (a tied
 * output with large embeddings scores the input token's own row highest), exactly equal.
 */
export const TIE_MODEL: RandomLlamaOptions = {
  seed: 46,
  dModel: 64,
  nLayers: 1,
  nHeads: 2,
  ffn: 128,
  tiedOutput: true,
  embeddingScale: 1,
  residualScale: 0.1,
  embeddingCopies: [{ from: TIED[0], to: TIED[1], scale: 1 }],
};

export interface ScenarioResult {
  /** Positions compared, and how many of them were verify positions after an accepted guess. */
  positions: number;
  accepted: number;
  device: LlamaSequenceEvaluator;
  native: LlamaSequenceEvaluator;
}

/**
 * Runs the same steps on a device, a native and a library evaluator (one context each, made by
 * `makeContext`), asserting equal tokens at every read position. `seed` varies the random batches.
 */
export async function deviceMatchesNative(
  model: LlamaModel,
  makeContext: () => Promise<LlamaContext>,
  prompt: readonly number[],
  seed: number,
  steps: number,
  keep: (e: LlamaSequenceEvaluator) => void,
  /** Confidences and alternatives (batches the device path decodes with its sampler detached). */
  detours = true,
): Promise<ScenarioResult> {
  const make = async (path: EvaluatorPath) => {
    const e = new LlamaSequenceEvaluator((await makeContext()).getSequence(), model, path);
    keep(e);
    return e;
  };
  const device = await make('device');
  assert.equal(device.path, 'device', `device path refused: ${device.deviceUnavailable}`);
  const native = await make('native');
  const library = await make('library');
  // Not compared: makes proposals the target partly accepts (its own greedy continuation, cut).
  const oracle = await make('native');
  const all = [device, native, library, oracle];
  const rand = mulberry32(seed);
  const tokens = (outs: { token: number }[]) => outs.map((n) => n.token);
  let positions = 0;
  let accepted = 0;
  const same = async (label: string, run: (e: LlamaSequenceEvaluator) => Promise<{ token: number }[]>) => {
    const [a, b, c] = [await run(device), await run(native), await run(library)];
    await run(oracle);
    // Tokens, and confidences where asked (both from the native reader: the same number).
    assert.deepEqual(a, b, `${label}: device vs native`);
    // The library path reads every output (it takes no expected proposal): the others' reads are its prefix.
    assert.deepEqual(tokens(b), tokens(c).slice(0, b.length), `${label}: native vs library`);
    positions += a.length;
    return tokens(a);
  };
  let [pending] = await same('prompt', (e) => e.append(prompt, 1));
  for (let step = 0; step < steps; step++) {
    const kind = step % 5;
    if (kind === 0) {
      // A plain step: the pending token, one output.
      [pending] = await same(`step ${step} plain`, (e) => e.append([pending], 1));
      continue;
    }
    // A verify batch: the pending token then a proposal of up to 6: the target's own greedy
    // continuation (from the oracle) up to a random cut, a wrong token there, random after.
    const length = 1 + Math.floor(rand() * 6);
    const before = device.tokens.length;
    const truth: number[] = [];
    for (let t = pending; truth.length < length; ) {
      [{ token: t }] = await oracle.append([t], 1);
      truth.push(t);
    }
    await oracle.truncate(before);
    const cut = Math.floor(rand() * (length + 1));
    const proposal = truth.map((t, i) => (i < cut ? t : i === cut ? (t + 1 + Math.floor(rand() * 100)) % 3000 : 10 + Math.floor(rand() * 3000)));
    const withConfidence = detours && kind === 3;
    const read = await same(`step ${step} verify`, (e) => e.append([pending, ...proposal], proposal.length + 1, withConfidence, proposal));
    // Accepted: the proposal's agreeing prefix; the last read token is the target's own next one.
    const agreed = read.length - 1;
    accepted += agreed;
    for (const e of all) assert.equal(e.tokens.length, before + proposal.length + 1);
    // The rejected tail erased, as the decode loop does.
    for (const e of all) await e.truncate(before + 1 + agreed);
    pending = read.at(-1)!;
    if (kind === 4) {
      // A batch with every position an output, no proposal: all read.
      const batch = Array.from({ length: 2 + Math.floor(rand() * 5) }, () => 10 + Math.floor(rand() * 3000));
      const lengthBefore = device.tokens.length;
      await same(`step ${step} all outputs`, (e) => e.append([pending, ...batch], batch.length + 1));
      for (const e of all) await e.truncate(lengthBefore);
    }
    if (detours && step % 7 === 6) {
      // Alternatives (the device sampler detached for this batch): ranked tokens equal too.
      const lengthBefore = device.tokens.length;
      const [ra, rb] = [await device.appendRanked([pending, 42, 43], 3, 3), await native.appendRanked([pending, 42, 43], 3, 3)];
      assert.deepEqual(
        ra.map((r) => r.tokens),
        rb.map((r) => r.tokens),
        `step ${step} ranked`,
      );
      for (const e of [device, native]) await e.truncate(lengthBefore);
      positions += ra.length;
    }
    assert.deepEqual(device.tokens, native.tokens);
    assert.deepEqual(native.tokens, library.tokens);
  }
  return { positions, accepted, device, native };
}
