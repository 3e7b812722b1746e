// The device greedy path on a GPU backend: node-llama-cpp's prebuilt Vulkan binary on Mesa's llvmpipe
// (test/support/softwareVulkan.ts sets it up, and says why fusion is off), every layer and the output on the device,
// the greedy sampler chain attached there: ggml_argmax runs in Vulkan's shader and only the token comes
// back. The same step-for-step equality with the native reader and the library as on the CPU
// (deviceGreedy.test.ts). Its own process: one libllama per process (the native addon refuses two).
//
// Without detours (confidences and alternatives: the device path detaches its sampler for such a
// batch and attaches it again, and llama.cpp re-reserves its scheduler at each): with them, Mesa's
// lavapipe crashed in its own queue thread (SIGSEGV inside libvulkan_lvp.so, under a decode's fence
// wait) in 2 of 6 runs here and hung in 1, against 0 of 6 runs without them and 0 of 3 of the same
// scenario on the native path alone. DRAFTLINE_VULKAN_DETOURS=1 runs them (the CPU test always does).
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { LlamaContext, LlamaModel } from '../../src/llama/llamaTypes';
import { getRuntime } from '../../src/inference/llamaRuntime';
import { LlamaSequenceEvaluator } from '../../src/llama/llamaSequenceEvaluator';
import { allowDeviceGreedy } from '../../src/llama/nativeAddon';
import { deviceMatchesNative, TIE_MODEL, TIED } from '../support/deviceGreedyScenario';
import { ensureTestModel } from '../../testbed/models';
import { useSoftwareVulkan } from '../support/softwareVulkan';

const missing = useSoftwareVulkan();

const ROOT = path.resolve(__dirname, '../..');

describe('LlamaSequenceEvaluator: the device greedy path on Vulkan (llvmpipe)', { skip: missing ? `Vulkan unavailable: ${missing}` : false }, () => {
  let model: LlamaModel;
  const contexts: LlamaContext[] = [];
  const evaluators: LlamaSequenceEvaluator[] = [];
  const context = async () => {
    const c = await model.createContext({ contextSize: 256, sequences: 1, threads: 1 });
    contexts.push(c);
    return c;
  };

  before(async () => {
    const llama = await getRuntime({ gpu: 'vulkan' }, 1, () => undefined);
    assert.deepEqual(allowDeviceGreedy(llama), { ok: true });
    model = await llama.loadModel({ modelPath: path.join(ROOT, 'models/tiny-code-target.gguf'), gpuLayers: 999 });
  });

  it("on an exact tie of the top logits: top2 hands the batch to the host; argmax picks one of the tied tokens (the shader's choice: said, not asserted)", async () => {
    const llama = await getRuntime({ gpu: 'vulkan' }, 1, () => undefined);
    const tie = await llama.loadModel({ modelPath: await ensureTestModel('device-greedy-tie', TIE_MODEL), gpuLayers: 999 });
    try {
      const read = async (path: 'native' | 'device', deviceSampler?: 'argmax') => {
        const c = await tie.createContext({ contextSize: 256, sequences: 1, threads: 1 });
        const e = new LlamaSequenceEvaluator(c.getSequence(), tie, path, { deviceSampler });
        const tokens = (await e.append([11, TIED[0], TIED[1]], 3)).map((n) => n.token);
        await e.dispose();
        await c.dispose();
        return tokens;
      };
      const [native, top2, argmax] = [await read('native'), await read('device'), await read('device', 'argmax')];
      process.stdout.write(`# Vulkan tie ${TIED.join('/')}: native reader ${native.slice(1)}, device top2 ${top2.slice(1)}, device argmax ${argmax.slice(1)}\n`);
      assert.deepEqual(native.slice(1), [TIED[0], TIED[0]]);
      assert.deepEqual(top2, native, 'top2 hands ties to the host');
      for (const t of argmax.slice(1)) assert.ok((TIED as readonly number[]).includes(t));
    } finally {
      await tie.dispose();
    }
  });

  after(async () => {
    for (const e of evaluators) await e.dispose();
    for (const c of contexts) await c.dispose();
    await model?.dispose();
  });

  it("attaches on the Vulkan device ('auto' picks it there) and gives the native reader's and the library's tokens at every read position", async () => {
    const auto = new LlamaSequenceEvaluator((await context()).getSequence(), model, undefined, { deviceGreedy: 'auto' });
    evaluators.push(auto);
    process.stdout.write(`# Vulkan: gpuLayers ${model.gpuLayers}, 'auto' chose ${auto.path}${auto.deviceUnavailable ? ` (${auto.deviceUnavailable})` : ''}\n`);
    assert.equal(auto.path, 'device', auto.deviceUnavailable);
    const prompt = model.tokenize('export function clamp(value: number, min: number, max: number): number {\n');
    const detours = process.env.DRAFTLINE_VULKAN_DETOURS === '1';
    const { positions, accepted, device, native } = await deviceMatchesNative(model, context, prompt, 5, 20, (e) => evaluators.push(e), detours);
    process.stdout.write(`# Vulkan: ${positions} positions equal, ${accepted} accepted guesses, ${device.deviceDetours} detours\n`);
    assert.ok(positions >= 40, `${positions} positions`);
    assert.ok(accepted > 0);
    assert.equal(device.path, 'device', device.deviceUnavailable);
    assert.equal(device.hostLogitBytes, device.hostLogitBytesPerPosition * device.positionsRead);
    if (!detours) {
      // top2 on the device: 16 bytes a read position came back, no row.
      assert.equal(device.hostLogitBytes, 0);
      assert.equal(device.shippedLogitBytes, 16 * device.positionsRead);
    }
    assert.ok(native.hostLogitBytesPerPosition > 0);
  });
});
