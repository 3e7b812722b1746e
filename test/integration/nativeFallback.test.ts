// Where Draftline's native addon (greedy reader + threadpool) is not in the package — every platform but
// Linux x64 — the worker runs node-llama-cpp's own path, and the status bar tooltip and Show Stats say
// so and what it costs (issue #24). Loaded for real: once with the addon switched off, once from a
// package layout (extension/dist/worker.js) that has no draftline-native.node next to the worker.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { StatsCollector } from '../../src/stats/statsCollector';
import { statsReport } from '../../src/stats/statsReport';
import { decodePathExplanation, statusTooltip } from '../../src/stats/statusText';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import type { LoadedModelsInfo } from '../../src/shared/backendInfo';
import type { ModelSettings } from '../../src/shared/settings';
import { WorkerClient } from '../../src/worker/workerClient';

const ROOT = path.resolve(__dirname, '../..');
const WORKER = path.join(ROOT, 'dist/worker.js');
const TMP = path.join(ROOT, 'test-output/native-fallback');
const models: ModelSettings = {
  targetModel: path.join(ROOT, 'models/tiny-code-target.gguf'),
  draftModel: path.join(ROOT, 'models/tiny-code-draft.gguf'),
  gpu: 'cpu',
  gpuLayers: 0,
  threads: 2,
  contextSize: 256,
  // Not timed both ways at load (src/inference/flashAttention.ts): this test is about the decode path.
  flashAttention: 'off',
};
const PREFIX = 'export function sum(values: number[]): number {\n  let total = 0;\n  for (let i = 0; i < values.length; i';

/** Loads the tiny pair in a worker, completes once, and returns what the load said of itself. */
async function loadIn(workerPath: string, env: Record<string, string>, over: Partial<ModelSettings> = {}): Promise<LoadedModelsInfo> {
  const client = new WorkerClient({ workerPath, env, backoff: { initialMs: 50, maxMs: 200, stableAfterMs: 60_000 } });
  try {
    const info = await client.request('load', { models: { ...models, ...over }, speculation: DEFAULT_SPECULATION });
    const r = await client.request('complete', { request: { prefix: PREFIX, suffix: '\n}\n', maxTokens: 12, mode: 'hybrid' } });
    assert.ok(r.tokens.length > 0, 'the library path completes');
    return info;
  } finally {
    client.dispose();
  }
}

function assertExplained(info: LoadedModelsInfo, reason: RegExp): void {
  assert.equal(info.nativeAddon?.used, false, JSON.stringify(info.nativeAddon));
  assert.match((info.nativeAddon as { reason: string }).reason, reason);
  const text = decodePathExplanation(info);
  assert.match(text, /^node-llama-cpp's own path \(/);
  assert.match(text, /one call per verified position instead of one per step/, 'what reading tokens costs, in words');
  assert.match(text, /starts its 2 threads anew for every step/, 'what the missing threadpool costs at 2 threads');
  const tooltip = statusTooltip({ status: { kind: 'ready' }, mode: 'hybrid', models: info, summary: null });
  assert.ok(tooltip.includes(`Decoding: ${text}`), tooltip);
  const report = statsReport(new StatsCollector(), 'hybrid', { kind: 'local', model: info.target.name, local: info });
  assert.ok(report.includes(`Decoding: ${text}`), report);
}

describe('the library path where the native addon is not in the package', { skip: fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs`' }, () => {
  after(() => fs.rmSync(TMP, { recursive: true, force: true }));

  it('DRAFTLINE_NATIVE_ADDON=off: the worker decodes without it and says why and what it costs; token trees asked for: chains, and why', async () => {
    const info = await loadIn(WORKER, { DRAFTLINE_NATIVE_ADDON: 'off' }, { treeVerification: 'on' });
    assertExplained(info, /^disabled by DRAFTLINE_NATIVE_ADDON=off$/);
    assert.match(info.threadpool ?? '', /per-graph threads/);
    assert.deepEqual(info.treeVerification, { used: false, reason: 'the native addon is unavailable (disabled by DRAFTLINE_NATIVE_ADDON=off)' });
    const report = statsReport(new StatsCollector(), 'hybrid', { kind: 'local', model: info.target.name, local: info });
    assert.ok(report.includes('Token trees: chains only: the native addon is unavailable'), report);
  });

  it('a package without draftline-native.node: the worker finds none and says so', async () => {
    // The installed extension's layout: extension/dist/worker.js, extension/node_modules.
    const dist = path.join(TMP, 'extension', 'dist');
    fs.rmSync(TMP, { recursive: true, force: true });
    fs.mkdirSync(dist, { recursive: true });
    fs.copyFileSync(WORKER, path.join(dist, 'worker.js'));
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(TMP, 'extension', 'node_modules'));
    assert.ok(!fs.existsSync(path.join(dist, 'draftline-native.node')));
    const info = await loadIn(path.join(dist, 'worker.js'), { DRAFTLINE_NATIVE_ADDON: '' });
    assertExplained(info, process.platform === 'linux' && process.arch === 'x64' ? /draftline-native\.node is not in this install/ : /built for Linux x64 only/);
  });

  it('with the addon built (Linux x64), the same load says the native path runs', {
    skip: process.env.DRAFTLINE_REQUIRE_NATIVE === '1' || fs.existsSync(path.join(ROOT, 'dist/draftline-native.node')) ? false : 'dist/draftline-native.node not built',
  }, async () => {
    const info = await loadIn(WORKER, { DRAFTLINE_NATIVE_ADDON: '' });
    assert.deepEqual(info.nativeAddon, { used: true });
    // On the CPU 'auto' verifies chains (a batch costs about what it holds), and says so.
    assert.match(info.treeVerification && !info.treeVerification.used ? info.treeVerification.reason : '', /^the target computes on the CPU/);
    // Asked for, the target decodes on its unified KV context in the worker, and completes.
    const trees = await loadIn(WORKER, { DRAFTLINE_NATIVE_ADDON: '' }, { treeVerification: 'on' });
    assert.deepEqual(trees.treeVerification, { used: true });
    assert.match(trees.tokenReader ?? '', /one KV stream/);
    assert.match(decodePathExplanation(info), /^native \(Draftline's addon: .*a persistent thread pool\)$/);
    const tooltip = statusTooltip({ status: { kind: 'ready' }, mode: 'hybrid', models: info, summary: null });
    assert.doesNotMatch(tooltip, /Decoding:/, 'the tooltip stays short when the native path runs');
  });
});
