// LlamaSequenceEvaluator's device path (llama.cpp's backend sampling, experimental: a greedy sampler
// chain attached to the sequence argmaxes each output row in the decode's graph, and only the token
// comes back) on the CPU backend, which supports it too: the same tokens as the native reader and the
// library everywhere the decode loop reads them, no row of logits read on the host, and the native
// reader refusing rows llama.cpp no longer copies. The same equality on a GPU backend (Vulkan on
// llvmpipe): deviceGreedyVulkan.test.ts.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Llama, LlamaContext, LlamaModel } from '../../src/llama/llamaTypes';
import { getRuntime } from '../../src/inference/llamaRuntime';
import { LlamaSequenceEvaluator } from '../../src/llama/llamaSequenceEvaluator';
import { allowDeviceGreedy, loadNativeAddon, type NativeAddon } from '../../src/llama/nativeAddon';
import { embeddedPairPaths } from '../../src/models/embedded';
import { deviceMatchesNative, TIE_MODEL, TIED } from '../support/deviceGreedyScenario';
import { ensureTestModel } from '../../testbed/models';

const ROOT = path.resolve(__dirname, '../..');

describe('LlamaSequenceEvaluator: the device greedy path (CPU backend)', () => {
  let llama: Llama;
  let model: LlamaModel;
  let addon: NativeAddon;
  /** Made before allowDeviceGreedy: llama.cpp's default of one sampled output per sequence. */
  let early: LlamaContext;
  const contexts: LlamaContext[] = [];
  const evaluators: LlamaSequenceEvaluator[] = [];
  let prompt: number[];
  const context = async (sequences = 1) => {
    const c = await model.createContext({ contextSize: 512, sequences, threads: 1 });
    contexts.push(c);
    return c;
  };
  const keep = (e: LlamaSequenceEvaluator) => evaluators.push(e);
  const nativeOf = (c: LlamaContext) => (c as unknown as { _ctx: object })._ctx;

  before(async () => {
    llama = await getRuntime({ gpu: 'cpu' }, 1, () => undefined);
    model = await llama.loadModel({ modelPath: embeddedPairPaths(ROOT, 'tiny').target });
    early = await context();
    assert.deepEqual(allowDeviceGreedy(llama), { ok: true });
    assert.deepEqual(allowDeviceGreedy(llama), { ok: true }, 'idempotent');
    const loaded = loadNativeAddon();
    assert.ok('addon' in loaded, 'error' in loaded ? loaded.error : '');
    addon = loaded.addon;
    prompt = model.tokenize('export function clamp(value: number, min: number, max: number): number {\n  if (value < min) return min;\n');
  });

  after(async () => {
    for (const e of evaluators) await e.dispose();
    for (const c of contexts) await c.dispose();
    await model.dispose();
  });

  it('attaches on the CPU backend (llama.cpp offloads greedy there); off by default, and refused with a reason on a context made before allowDeviceGreedy', async () => {
    const fresh = await context();
    const result = addon.attachDeviceGreedy(nativeOf(fresh), 0);
    process.stdout.write(`# attachDeviceGreedy on the CPU backend: ${JSON.stringify(result)}\n`);
    assert.deepEqual(result, { offloaded: true, mode: 'top2' });
    assert.equal(addon.detachDeviceGreedy(nativeOf(fresh), 0), true);
    assert.equal(addon.detachDeviceGreedy(nativeOf(fresh), 0), false);
    const plain = new LlamaSequenceEvaluator((await context()).getSequence(), model);
    keep(plain);
    assert.equal(plain.path, 'native');
    // 'auto' is for GPUs: on the CPU there are no rows to ship.
    const auto = new LlamaSequenceEvaluator((await context()).getSequence(), model, undefined, { deviceGreedy: 'auto' });
    keep(auto);
    assert.equal(auto.path, 'native');
    const on = new LlamaSequenceEvaluator((await context()).getSequence(), model, undefined, { deviceGreedy: 'on' });
    keep(on);
    assert.equal(on.path, 'device');
    assert.equal(on.deviceGreedyAttached, true);
    const refused = new LlamaSequenceEvaluator(early.getSequence(), model, 'device');
    keep(refused);
    assert.equal(refused.path, 'native');
    assert.match(refused.deviceUnavailable ?? '', /1 sampled output\(s\) per sequence/);
    // And it still reads, on the host.
    assert.equal((await refused.append(prompt, 2)).length, 2);
  });

  for (const seed of [1, 2, 3])
    it(`gives the native reader's and the library's tokens at every read position, verify batches, truncations, confidences and alternatives included (seed ${seed})`, async () => {
      const { positions, accepted, device } = await deviceMatchesNative(model, () => context(), prompt, seed, 30, keep);
      process.stdout.write(`# seed ${seed}: ${positions} positions equal, ${accepted} accepted guesses, ${device.deviceDetours} detours for confidences/alternatives\n`);
      assert.ok(positions >= 60, `${positions} positions`);
      assert.ok(accepted > 0, 'some guesses accepted');
      assert.equal(device.path, 'device');
      assert.equal(device.deviceGreedyAttached, true, 'attached again after each detour');
      assert.ok(device.deviceDetours > 0);
    });

  it('reads no logits on the host a verified position (vocabulary × 4 bytes on the native path), and llama.cpp ships none', async () => {
    const c = await context();
    const device = new LlamaSequenceEvaluator(c.getSequence(), model, 'device');
    const native = new LlamaSequenceEvaluator((await context()).getSequence(), model, 'native');
    keep(device);
    keep(native);
    const vocabulary = addon.probe(nativeOf(c), 512, c.batchSize, 1).vocabularySize;
    const totalBefore = addon.hostLogitBytes();
    for (const e of [device, native]) {
      let [next] = await e.append(prompt, 1);
      for (let i = 0; i < 10; i++) [next] = await e.append([next.token, 11, 12, 13], 4, false, [11, 12, 13]);
    }
    assert.deepEqual(device.tokens, native.tokens);
    assert.ok(device.positionsRead > 10 && device.positionsRead === native.positionsRead);
    assert.equal(device.hostLogitBytes, 0);
    assert.equal(device.hostLogitBytesPerPosition, 0);
    // top2: two token ids and two logits a row read (4 bytes each), no raw row.
    assert.equal(device.shippedLogitBytes, 16 * device.positionsRead, 'no raw rows copied in a decode with the sampler attached');
    assert.equal(addon.sampledBytes(nativeOf(c)), device.shippedLogitBytes);
    const top2PerPosition = device.shippedLogitBytes / device.positionsRead;
    assert.equal(native.hostLogitBytesPerPosition, vocabulary * 4);
    // Every output's row is copied, read or not: 1 prompt output + 10 batches of 4.
    assert.equal(native.shippedLogitBytes, (1 + 10 * 4) * vocabulary * 4);
    // The native counter agrees: this device context read nothing, the process total grew by the native evaluator's reads.
    assert.equal(addon.hostLogitBytes(nativeOf(c)), 0);
    assert.equal(addon.hostLogitBytes() - totalBefore, native.hostLogitBytes);
    // A confidence needs the whole row: that batch is read on the host, then the sampler is back.
    const [withConfidence] = await device.append([11], 1, true);
    assert.ok(withConfidence.confidence! > 0 && withConfidence.confidence! <= 1);
    assert.equal(device.hostLogitBytes, vocabulary * 4);
    assert.equal(device.deviceGreedyAttached, true);
    // llama.cpp's greedy sampler as the chain (argmax): the token comes back, and so does every row.
    const argmax = new LlamaSequenceEvaluator((await context()).getSequence(), model, 'device', { deviceSampler: 'argmax' });
    keep(argmax);
    let [next] = await argmax.append(prompt, 1);
    for (let i = 0; i < 5; i++) [next] = await argmax.append([next.token, 11, 12, 13], 4, false, [11, 12, 13]);
    assert.deepEqual(argmax.tokens, device.tokens.slice(0, argmax.tokens.length));
    assert.equal(argmax.hostLogitBytes, 0);
    assert.equal(argmax.shippedLogitBytes, argmax.positionsRead * (vocabulary * 4 + 4));
    process.stdout.write(
      `# bytes a read position: native reader ${native.hostLogitBytesPerPosition} read (${vocabulary * 4} shipped per output), device top2 ${top2PerPosition} shipped, device argmax ${argmax.shippedLogitBytes / argmax.positionsRead} shipped\n`,
    );
  });

  it('the native reader refuses rows llama.cpp no longer copies (a sequence with a device sampler), and reads them again once detached', async () => {
    const c = await context();
    const native = nativeOf(c);
    const device = new LlamaSequenceEvaluator(c.getSequence(), model, 'device');
    keep(device);
    await device.append(prompt, 3);
    const four = new Int32Array(4);
    const indexes = Int32Array.of(prompt.length - 3, prompt.length - 2, prompt.length - 1);
    assert.throws(() => addon.readGreedy(native, indexes, 3, four, -1, false, four, new Float32Array(4)), /device greedy sampler is attached/);
    assert.throws(() => addon.readGreedy(native, indexes, 3, four, -1, false, four, new Float32Array(4), 0), /device greedy sampler is attached/);
    assert.throws(() => addon.readTop(native, indexes, 3, 2, new Int32Array(8), new Float32Array(8)), /device greedy sampler is attached/);
    assert.equal(addon.readSampled(native, indexes, 3, four, -1, four), 3);
    // Detached (the evaluator's native path): readSampled refuses, the native reader reads.
    device.usePath('native');
    assert.equal(device.deviceGreedyAttached, false);
    assert.throws(() => addon.readSampled(native, indexes, 3, four, -1, four), /no device greedy sampler/);
    const reference = new LlamaSequenceEvaluator((await context()).getSequence(), model, 'native');
    keep(reference);
    const [a, b] = [await device.append([7, 8, 9], 3), await (async () => (await reference.append(prompt, 3), reference.append([7, 8, 9], 3)))()];
    assert.deepEqual(a, b);
    // And back to the device.
    device.usePath('device');
    assert.equal(device.path, 'device');
    assert.deepEqual(
      (await device.append([10, 11], 2)).map((n) => n.token),
      (await reference.append([10, 11], 2)).map((n) => n.token),
    );
  });

  it('two sequences of one context, one on the device path, one on the native path, decoded at once: the same tokens as alone', async () => {
    const shared = await context(2);
    const device = new LlamaSequenceEvaluator(shared.getSequence(), model, 'device');
    const native = new LlamaSequenceEvaluator(shared.getSequence(), model, 'native');
    const alone = new LlamaSequenceEvaluator((await context()).getSequence(), model, 'native');
    for (const e of [device, native, alone]) keep(e);
    assert.equal(device.path, 'device');
    const other = model.tokenize('def fib(n):\n    if n < 2:\n');
    const refOther = new LlamaSequenceEvaluator((await context()).getSequence(), model, 'native');
    keep(refOther);
    // At once: node-llama-cpp puts both sequences' tokens in one batch.
    const [d, n] = await Promise.all([device.append(prompt, 3), native.append(other, 3)]);
    assert.deepEqual(d, await alone.append(prompt, 3));
    assert.deepEqual(n, await refOther.append(other, 3));
    for (let i = 0; i < 6; i++) {
      const [d2, n2] = await Promise.all([device.append([d.at(-1)!.token, 20 + i], 2), native.append([n.at(-1)!.token, 30 + i], 2)]);
      assert.deepEqual(d2, await alone.append([d.at(-1)!.token, 20 + i], 2), `step ${i}`);
      assert.deepEqual(n2, await refOther.append([n.at(-1)!.token, 30 + i], 2), `step ${i}`);
    }
  });

  it("on an exact tie of the top logits: top2 hands the batch to the host (llama.cpp's greedy: the first tied token); argmax's ggml_argmax picks the LAST on the CPU", async () => {
    // Tokens 500 and 600 have the same output row: their logits are always exactly equal, and the
    // highest after either (a tied output scores its input token's own row highest).
    const tie = await llama.loadModel({ modelPath: await ensureTestModel('device-greedy-tie', TIE_MODEL) });
    try {
      let ties = 0;
      const read = async (path: 'native' | 'device' | 'library', deviceSampler?: 'argmax') => {
        const c = await tie.createContext({ contextSize: 256, sequences: 1, threads: 1 });
        const e = new LlamaSequenceEvaluator(c.getSequence(), tie, path, { deviceSampler });
        assert.equal(e.path, path);
        const tokens = (await e.append([11, TIED[0], TIED[1]], 3)).map((n) => n.token);
        // Then steps one at a time, each after a tied token.
        for (let i = 0; i < 3; i++) tokens.push((await e.append([TIED[i % 2]], 1))[0].token);
        ties += e.deviceTies;
        if (path === 'device') assert.equal(e.deviceGreedyAttached, true);
        await e.dispose();
        await c.dispose();
        return tokens;
      };
      const [native, library, top2] = [await read('native'), await read('library'), await read('device')];
      assert.deepEqual(native, library);
      assert.deepEqual(native.slice(1), [TIED[0], TIED[0], TIED[0], TIED[0], TIED[0]], 'the first of equal logits (llama_sampler_greedy_apply)');
      assert.deepEqual(top2, native, 'ties read on the host');
      assert.equal(ties, 4, 'the prompt batch once, and each single step');
      const argmax = await read('device', 'argmax');
      assert.deepEqual(argmax.slice(1), [TIED[1], TIED[1], TIED[1], TIED[1], TIED[1]], 'ggml_vec_argmax_f32 keeps the last of equal values');
      assert.equal(argmax[0], native[0], 'no tie: the same token');
    } finally {
      await tie.dispose();
    }
  });

  it('dispose detaches; a context disposed with a chain still attached has it freed by releaseDeviceGreedy', async () => {
    const c = await context();
    const native = nativeOf(c);
    const device = new LlamaSequenceEvaluator(c.getSequence(), model, 'device');
    await device.append(prompt, 1);
    await device.dispose();
    const four = new Int32Array(4);
    assert.throws(() => addon.readSampled(native, Int32Array.of(prompt.length - 1), 1, four, -1, four), /no device greedy sampler/);
    // The rows of a batch decoded with the sampler stay missing after it is detached: refused, not stale.
    assert.throws(() => addon.readGreedy(native, Int32Array.of(prompt.length - 1), 1, four, -1, false, four, new Float32Array(4)), /samples on its backend/);
    // Attached again (a new chain: llama.cpp initialises a chain once), it samples the next batch.
    assert.deepEqual(addon.attachDeviceGreedy(native, 0), { offloaded: true, mode: 'top2' });
    assert.equal(addon.detachDeviceGreedy(native, 0), true);
    const left = await model.createContext({ contextSize: 256, sequences: 1, threads: 1 });
    assert.deepEqual(addon.attachDeviceGreedy(nativeOf(left), 0), { offloaded: true, mode: 'top2' });
    await left.dispose();
    assert.equal(addon.releaseDeviceGreedy(nativeOf(left)), 1);
    assert.equal(addon.releaseDeviceGreedy(nativeOf(left)), 0);
    assert.throws(() => addon.attachDeviceGreedy(nativeOf(left), 0), /disposed/);
  });
});
