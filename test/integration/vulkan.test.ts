// The GPU code path, on every CI run: node-llama-cpp's prebuilt Vulkan backend on Mesa's llvmpipe, a
// software Vulkan device (Debian's mesa-vulkan-drivers; scripts/setup-e2e.sh installs it). ggml
// skips CPU-type Vulkan devices unless GGML_VK_VISIBLE_DEVICES names them: set here, and inherited
// by the workers these tests start (test/support/softwareVulkan.ts). llvmpipe is slow (~0.1 s a token for the tiny pair) and its
// timings mean nothing: this is for correctness only, with the tiny pair, all layers offloaded.
// DRAFTLINE_REQUIRE_VULKAN=1 (npm test sets it) turns a missing Vulkan device into a failure.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CompletionRequest } from '../../src/shared/completion';
import type { ModelSettings } from '../../src/shared/settings';
import { LocalBackend } from '../../src/backend/localBackend';
import { StatsCollector } from '../../src/stats/statsCollector';
import { statsReport } from '../../src/stats/statsReport';
import { backendExplanation } from '../../src/stats/statusText';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import { WorkerClient } from '../../src/worker/workerClient';
import { losslessSuite, type SuiteOptions } from '../support/losslessSuite';
import { useSoftwareVulkan } from '../support/softwareVulkan';

const missing = useSoftwareVulkan();

const ROOT = path.resolve(__dirname, '../..');
const WORKER = path.join(ROOT, 'dist/worker.js');
const TARGET = path.join(ROOT, 'models/tiny-code-target.gguf');
const DRAFT = path.join(ROOT, 'models/tiny-code-draft.gguf');
/** More layers than any test model has: every layer goes to the device. */
const ALL_LAYERS = 999;
const log = () => undefined;

const skip = missing ? `Vulkan unavailable: ${missing}` : fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs` (npm test does)';

const vulkanModels = (over: Partial<ModelSettings> = {}): ModelSettings => ({ targetModel: TARGET, draftModel: DRAFT, gpu: 'vulkan', gpuLayers: ALL_LAYERS, threads: 1, contextSize: 256, ...over });
const request = (over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  prefix: 'export function sum(values: number[]): number {\n  let total = 0;\n  for (let i = 0; i < values.length; i',
  suffix: '\n}\n',
  maxTokens: 16,
  mode: 'hybrid',
  ...over,
});

describe('Vulkan: the tiny pair placed on the device', { skip }, () => {
  let session: InferenceSession;
  before(async () => {
    session = await InferenceSession.load(vulkanModels(), DEFAULT_SPECULATION, log);
  });
  after(async () => session?.dispose());

  it('every layer of both models is on the Vulkan device, and the description says which', () => {
    const { info } = session;
    assert.equal(info.backend, 'vulkan');
    assert.equal(info.gpuFallback, undefined);
    assert.ok(info.gpuLayers.target >= 5 && info.gpuLayers.draft >= 3, JSON.stringify(info.gpuLayers));
    assert.match(backendExplanation(info), /^Vulkan on llvmpipe .*\(a software GPU: the CPU does its work\), \d+ \+ \d+ layers on the GPU$/);
  });
});

// The lossless suite as on the CPU, every case with fewer and shorter completions (llvmpipe takes ~0.1 s a
// token): unexplained near-ties count per place, so a smaller sample does not loosen the rule.
const drifts: string[] = [];
const onTheDevice: SuiteOptions = {
  load: async (target, draft, speculation, models) => {
    const session = await InferenceSession.load(vulkanModels({ targetModel: target, draftModel: draft, ...models }), { ...DEFAULT_SPECULATION, ...speculation }, log);
    // The suite must run on the device, not on a silent CPU fallback.
    assert.equal(session.info.backend, 'vulkan');
    assert.ok(session.info.gpuLayers.target > 0 && session.info.gpuLayers.draft > 0, JSON.stringify(session.info.gpuLayers));
    return session;
  },
  maxTokens: 24,
  stopCases: 2,
  cancelCases: 3,
  interleavedCases: 2,
  report: (r) =>
    drifts.push(
      `${r.pair}: batch drift ${r.drift.toExponential(2)}, ${r.runs - r.divergences} of ${r.runs} runs identical to plain, ${r.divergences} at near-ties (${r.confirmed} re-evaluated: the batch's numerics; ${r.unexplainedSites} places not)`,
    ),
};
if (!skip) {
  losslessSuite(
    { name: 'Vulkan (llvmpipe), tiny pair, all layers on the device', target: async () => TARGET, draft: async () => DRAFT, prompts: 4, speculation: { adaptive: false, draftMinConfidence: 0 } },
    onTheDevice,
  );
  // The tree case alone, on the target's unified KV context (Draftline's own decode on the device).
  losslessSuite(
    {
      name: 'Vulkan (llvmpipe), tiny pair, all layers on the device, token trees on a unified context',
      target: async () => TARGET,
      draft: async () => DRAFT,
      prompts: 4,
      speculation: { adaptive: false, draftMinConfidence: 0, verifyShape: 'fixed', fixedShapeSize: 16 },
      models: { treeVerification: 'on' },
      treesOnly: true,
    },
    onTheDevice,
  );
}

describe('Vulkan: the worker path end to end', { skip }, () => {
  let client: WorkerClient;
  before(() => {
    client = new WorkerClient({ workerPath: WORKER, backoff: { initialMs: 50, maxMs: 200, stableAfterMs: 60_000 } });
  });
  after(() => {
    client?.dispose();
    if (drifts.length) process.stdout.write(`# ${drifts.join('\n# ')}\n`);
  });

  it('load → complete → cancel mid-generation → unload, with Show Stats naming the backend and device', async () => {
    const info = await client.request('load', { models: vulkanModels(), speculation: DEFAULT_SPECULATION });
    assert.equal(info.backend, 'vulkan');
    assert.deepEqual(
      info.runtime?.gpuDevices.map((d) => d.split(' ')[0]),
      ['llvmpipe'],
    );
    const stats = new StatsCollector();
    const first = await client.request('complete', { request: request() });
    assert.ok(first.tokens.length > 0, 'a completion on the device');
    stats.record({ at: Date.now(), latencyMs: first.stats.totalMs, fromCache: false, chars: first.text.length, stats: first.stats });
    const report = statsReport(stats, 'hybrid', { kind: 'local', model: info.target.name, local: info });
    assert.match(report, /Backend: Vulkan on llvmpipe \(LLVM [^)]*\) \(a software GPU: the CPU does its work\), \d+ \+ \d+ layers on the GPU/);

    const controller = new AbortController();
    const pending = client.request('complete', { request: request({ maxTokens: 200, mode: 'plain', stopAtBlockEnd: false }) }, controller.signal);
    setTimeout(() => controller.abort(), 300);
    const cancelled = await pending;
    assert.equal(cancelled.stats.stopReason, 'abort');
    assert.ok(cancelled.tokens.length < 200);

    // The worker is still healthy on the device after the cancellation.
    const again = await client.request('complete', { request: request() });
    assert.deepEqual(again.tokens, first.tokens, 'the same greedy completion after a cancelled one');
    assert.equal(await client.request('unload', {}), null);
  });

  it('a Vulkan backend that does not start falls back to the CPU with the reason, and completes', async () => {
    // GGML_VK_VISIBLE_DEVICES naming a device that does not exist: node-llama-cpp's Vulkan binary fails its test.
    const broken = new WorkerClient({ workerPath: WORKER, env: { GGML_VK_VISIBLE_DEVICES: '7' } });
    try {
      const info = await broken.request('load', { models: vulkanModels(), speculation: DEFAULT_SPECULATION });
      assert.equal(info.backend, 'cpu');
      assert.match(info.gpuFallback ?? '', /^Vulkan did not start \(/);
      assert.match(backendExplanation(info), /^CPU \(Vulkan did not start/);
      const r = await broken.request('complete', { request: request() });
      assert.ok(r.tokens.length > 0);
    } finally {
      broken.dispose();
    }
  });
});

describe('Vulkan: a GPU that takes the worker down mid-generation', { skip }, () => {
  let backend: LocalBackend;
  let restarted: () => void;
  let restarts = new Promise<void>((resolve) => {
    restarted = resolve;
  });
  const outages: string[] = [];
  let models = vulkanModels();
  before(() => {
    process.env.DRAFTLINE_TEST_HOOKS = '1';
    backend = new LocalBackend(
      { workerPath: WORKER, settings: async () => ({ models, speculation: DEFAULT_SPECULATION }) },
      {
        log: () => undefined,
        onOutage: () => outages.push('outage'),
        onRecovered: () => restarted(),
        onResync: () => undefined,
      },
    );
  });
  after(() => {
    backend?.dispose();
    delete process.env.DRAFTLINE_TEST_HOOKS;
  });

  it('the restarted worker loads the models on the CPU, says why, and completes; new settings try the GPU again', async () => {
    const onGpu = await backend.load();
    assert.equal(onGpu.local?.backend, 'vulkan');
    const expected = await backend.complete(request({ mode: 'plain' }));
    // A native abort while a generation runs on the device (what GGML_ABORT on a lost device does).
    const generating = backend.complete(request({ maxTokens: 200, mode: 'plain', stopAtBlockEnd: false }));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await assert.rejects(backend.worker.request('crash', {}), /SIGABRT/);
    await assert.rejects(generating, /SIGABRT/);
    await restarts;
    assert.deepEqual(outages, ['outage']);

    const onCpu = await backend.load();
    assert.equal(onCpu.local?.backend, 'cpu');
    assert.match(onCpu.local?.gpuFallback ?? '', /^the inference worker ended \(.*SIGABRT.*\) while the models ran on Vulkan \(llvmpipe/);
    assert.match(backendExplanation(onCpu.local!), /^CPU \(the inference worker ended/);
    const r = await backend.complete(request({ mode: 'plain' }));
    // Greedy on another backend: the same text unless a near-tie falls differently; it must be a completion.
    assert.ok((r.tokens?.length ?? 0) > 0, `after the fallback: ${JSON.stringify(r.text)} (on Vulkan: ${JSON.stringify(expected.text)})`);

    // A crash on the CPU is an ordinary restart: it does not switch anything.
    restarts = new Promise<void>((resolve) => {
      restarted = resolve;
    });
    await assert.rejects(backend.worker.request('crash', {}), /SIGABRT/);
    await restarts;
    const stillCpu = await backend.load();
    assert.equal(stillCpu.local?.backend, 'cpu');

    // The user changes where the models go (here the layer count): the GPU is tried again.
    models = vulkanModels({ gpuLayers: ALL_LAYERS - 1 });
    const back = await backend.load();
    assert.equal(back.local?.backend, 'vulkan');
    assert.equal(back.local?.gpuFallback, undefined);
  });
});
