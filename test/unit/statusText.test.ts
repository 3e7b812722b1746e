// The status bar tooltip's words: where inference runs and why (a CPU fallback from a package that
// carries Vulkan), why the thread count is what it is, why the acceptance reads "-".
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StatusSummary } from '../../src/stats/statsCollector';
import { StatsCollector } from '../../src/stats/statsCollector';
import { statsReport } from '../../src/stats/statsReport';
import { acceptanceExplanation, backendExplanation, decodePathExplanation, statusTooltip, threadsExplanation } from '../../src/stats/statusText';
import type { BackendInfo, LoadedModelsInfo } from '../../src/shared/backendInfo';
import { loadedModels as models, runtimeChoice as runtime } from '../support/loadedModels';
import { describeRuntimeChoice, getRuntime, installedGpuBinaries, llamaGpuOption } from '../../src/inference/llamaRuntime';

const summary = (over: Partial<StatusSummary> = {}): StatusSummary => ({
  tokensPerSecond: 300,
  acceptance: null,
  latencyMs: 42,
  tokensPerEvaluation: 1,
  fromCache: false,
  served: 'computed',
  mode: 'hybrid',
  ...over,
});

describe('backendExplanation', () => {
  const table: [string, Partial<LoadedModelsInfo>, string | undefined, string][] = [
    ['Vulkan package, no GPU on this machine', {}, undefined, 'CPU (no GPU found; this package can use Vulkan)'],
    ['CUDA and Vulkan binaries, no GPU', { runtime: runtime({ gpuBinaries: ['cuda', 'vulkan'] }) }, undefined, 'CPU (no GPU found; this package can use CUDA or Vulkan)'],
    ['a CPU-only package', { runtime: runtime({ gpuBinaries: [] }) }, undefined, 'CPU (a CPU-only package: it has no GPU backend)'],
    ['CPU as set', { runtime: runtime({ requestedGpu: 'cpu' }) }, undefined, 'CPU (as set in draftline.gpu)'],
    [
      'Vulkan loader found, the Vulkan binary did not start (measured: no Vulkan driver)',
      { runtime: runtime({ gpuDetected: ['vulkan'] }) },
      undefined,
      'CPU (no usable GPU found: Vulkan is installed but did not start)',
    ],
    [
      'Vulkan loaded but sees no device (measured: Mesa lavapipe only)',
      { backend: 'vulkan', runtime: runtime({ gpuDetected: ['vulkan'] }) },
      undefined,
      'CPU (no GPU found: Vulkan sees no GPU device)',
    ],
    ['CUDA found, package has Vulkan only', { runtime: runtime({ gpuDetected: ['cuda'] }) }, undefined, 'CPU (this machine has CUDA but no Vulkan driver, and this package can use Vulkan only)'],
    [
      'on the GPU: its device named',
      { backend: 'vulkan', gpuLayers: { target: 33, draft: 25 }, runtime: runtime({ gpuDetected: ['vulkan'], gpuDevices: ['AMD Radeon'] }) },
      undefined,
      'Vulkan on AMD Radeon, 33 + 25 layers on the GPU',
    ],
    [
      'a software GPU (Mesa llvmpipe, what CI tests Vulkan on): said to be the CPU at work',
      { backend: 'vulkan', gpuLayers: { target: 5, draft: 3 }, runtime: runtime({ gpuDetected: ['vulkan'], gpuDevices: ['llvmpipe (LLVM 15.0.6, 256 bits)'] }) },
      undefined,
      'Vulkan on llvmpipe (LLVM 15.0.6, 256 bits) (a software GPU: the CPU does its work), 5 + 3 layers on the GPU',
    ],
    [
      'a GPU with too little memory for any layer',
      { backend: 'cuda', gpuLayers: { target: 0, draft: 0 }, runtime: runtime({ gpuDetected: ['cuda'], gpuDevices: ['NVIDIA T400'] }) },
      undefined,
      'CUDA on NVIDIA T400, but no layer fits in GPU memory: running on the CPU',
    ],
    [
      'the GPU failed and the models came back on the CPU',
      { gpuFallback: 'Vulkan failed: vk::DeviceLostError', runtime: runtime({ requestedGpu: 'cpu' }) },
      undefined,
      'CPU (Vulkan failed: vk::DeviceLostError)',
    ],
    ['on the GPU, an older worker (no runtime field)', { backend: 'cuda', gpuLayers: { target: 29, draft: 25 }, runtime: undefined }, undefined, 'CUDA, 29 + 25 layers on the GPU'],
    ['an older worker (no runtime field)', { runtime: undefined }, undefined, 'CPU'],
  ];
  for (const [name, over, , expected] of table) {
    it(name, () => assert.equal(backendExplanation(models(over)), expected));
  }
});

describe('threadsExplanation', () => {
  it('the default on 2 cores: one thread, and why', () => {
    assert.equal(threadsExplanation(1, runtime()), '1 (the default: 2 cores − 1, leaving a core to the editor; set draftline.threads to change)');
  });
  it('the default capped at 8', () => {
    assert.equal(threadsExplanation(8, runtime({ cores: 32 })), '8 (the default: 32 cores − 1, at most 8; set draftline.threads to change)');
  });
  it('a single core', () => {
    assert.equal(threadsExplanation(1, runtime({ cores: 1 })), '1 (this machine has 1 core; set draftline.threads to change)');
  });
  it('set by the user', () => {
    assert.equal(threadsExplanation(2, runtime({ requestedThreads: 2 })), '2 (as set in draftline.threads)');
  });
  it('no runtime information: the bare number', () => {
    assert.equal(threadsExplanation(3), '3');
  });
});

describe('acceptanceExplanation', () => {
  it('a figure when tokens were proposed', () => assert.equal(acceptanceExplanation(summary({ acceptance: 0.8 }), 'hybrid'), '80% of proposed tokens (last completion)'));
  it('plain decoding', () => assert.equal(acceptanceExplanation(summary({ mode: 'plain' }), 'plain'), '- (plain decoding: speculation off)'));
  it('plain decoding before any completion says no completion yet', () => assert.equal(acceptanceExplanation(null, 'plain'), '- (no completion yet)'));
  it('speculation on, nothing proposed', () =>
    assert.match(acceptanceExplanation(summary(), 'hybrid'), /^- \(no proposals in the last completion: speculation proposes only where it measured that it pays; see Show Stats\)$/));
  it('served from the cache', () => assert.equal(acceptanceExplanation(summary({ fromCache: true, served: 'cache', mode: null }), 'hybrid'), '- (the last completion came from the cache)'));
  it('served from a prefetch', () => assert.equal(acceptanceExplanation(summary({ fromCache: true, served: 'prefetch', mode: null }), 'hybrid'), '- (the last completion came from a prefetch)'));
  it('the last completion was plain even if speculation is back on', () => assert.equal(acceptanceExplanation(summary({ mode: 'plain' }), 'hybrid'), '- (plain decoding: speculation off)'));
});

describe('statusTooltip', () => {
  it('the whole tooltip of a Vulkan-carrying package on a machine without a GPU', () => {
    const text = statusTooltip({
      status: { kind: 'ready' },
      mode: 'plain',
      models: models(),
      summary: summary({ mode: 'plain', tokensPerEvaluation: 1 }),
    });
    assert.equal(
      text,
      [
        '**Draftline** — ready',
        'Mode: plain',
        'Target: draftline-code-target',
        'Draft: draftline-code-draft',
        'Backend: CPU (no GPU found; this package can use Vulkan)',
        'Threads: 1 (the default: 2 cores − 1, leaving a core to the editor; set draftline.threads to change)',
        'Acceptance: - (plain decoding: speculation off)',
        'Tokens per target evaluation: 1.00',
        'Click for Draftline commands',
      ].join('\n\n'),
    );
  });
  it('a model file chosen from disk says so after its name, the next-edit model too (issue #55)', () => {
    const text = statusTooltip({
      status: { kind: 'ready' },
      mode: 'hybrid',
      models: models(),
      summary: null,
      files: { draft: 'local file, not verified', nextEdit: 'draftline-code-target (local file, not verified)' },
    }).split('\n\n');
    assert.ok(text.includes('Target: draftline-code-target'), text.join('\n'));
    assert.ok(text.includes('Draft: draftline-code-draft (local file, not verified)'), text.join('\n'));
    assert.ok(text.includes('Next-edit model: draftline-code-target (local file, not verified)'), text.join('\n'));
  });
  it('an error before any model: the message, no model lines', () => {
    const text = statusTooltip({ status: { kind: 'error', message: 'cannot load' }, mode: 'hybrid', models: null, summary: null });
    assert.equal(text, ['**Draftline** — error: cannot load', 'Mode: hybrid', 'Click for Draftline commands'].join('\n\n'));
  });
  it('off for this file: says why (e.g. an untitled plain-text document)', () => {
    const text = statusTooltip({ status: { kind: 'off', message: 'completions are off for plaintext' }, mode: 'hybrid', models: null, summary: null });
    assert.equal(text.split('\n\n')[0], '**Draftline** — off: completions are off for plaintext');
  });
  it("a server backend: where, which model, the server's speed and its draft acceptance", () => {
    const server: BackendInfo = {
      kind: 'llama-server',
      model: 'qwen2.5-coder-7b-q8_0.gguf',
      remote: { endpoint: 'http://gpu-box:8080/', server: 'llama-server b1-de3ff81', speculation: 'a draft model on the server (-md)', promptFormat: '/infill' },
    };
    const text = statusTooltip({ status: { kind: 'ready' }, mode: 'server (llama-server)', models: null, server, summary: summary({ mode: null, acceptance: 0.62, tokensPerEvaluation: null }) });
    assert.equal(
      text,
      [
        '**Draftline** — ready',
        'Mode: server (llama-server)',
        'Server: llama-server at http://gpu-box:8080/ (llama-server b1-de3ff81)',
        'Model: qwen2.5-coder-7b-q8_0.gguf',
        'Acceptance: 62% of proposed tokens (last completion)',
        'Click for Draftline commands',
      ].join('\n\n'),
    );
    const none = statusTooltip({
      status: { kind: 'ready' },
      mode: 'server (ollama)',
      models: null,
      server: { ...server, kind: 'ollama' },
      summary: summary({ mode: null, acceptance: null, tokensPerEvaluation: null }),
    });
    assert.match(none, /Acceptance: - \(the server reported no speculation/);
  });
});

describe('Show Stats for a server backend', () => {
  it("names the server, the model, the prompt format, and the server's draft acceptance; no local-only rows", () => {
    const stats = new StatsCollector();
    stats.record({
      at: 0,
      latencyMs: 120,
      fromCache: false,
      chars: 40,
      stats: {
        promptTokens: 300,
        reusedPromptTokens: 280,
        generatedTokens: 20,
        promptMs: 30,
        timeToFirstTokenMs: 30,
        totalMs: 110,
        stopReason: 'eos',
        serverDraft: { proposedTokens: 30, acceptedTokens: 18 },
        serverTokensPerSecond: 212.5,
      },
    });
    const info: BackendInfo = {
      kind: 'llama-server',
      model: 'm.gguf',
      remote: { endpoint: 'http://gpu-box:8080/', server: 'llama-server b1', contextSize: 16384, speculation: 'a draft model on the server (-md)', promptFormat: '/infill (fill-in-the-middle)' },
    };
    const report = statsReport(stats, 'hybrid', info);
    assert.match(report, /Mode: llama-server server \(its own decoding\)/);
    assert.match(report, /Backend: llama-server at http:\/\/gpu-box:8080\/ \(llama-server b1\)/);
    assert.match(report, /Model: m\.gguf; context 16384/);
    assert.match(report, /\| tokens\/s \(decoding\) \| 212\.5 \|/);
    assert.match(report, /\| server's draft model: accepted \| 60% \(18\/30 tokens\) \|/);
    assert.doesNotMatch(report, /target evaluations \| \d/, 'no in-process speculation rows for a server');
  });
});

describe('decodePathExplanation: which path runs the steps, and what the library path costs (issue #24)', () => {
  it('the native addon: one short line, the thread pool named only where it is used (2+ CPU threads)', () => {
    assert.equal(decodePathExplanation(models({ nativeAddon: { used: true }, threads: 2 })), "native (Draftline's addon: the target's tokens of a verify batch in one call, a persistent thread pool)");
    assert.equal(decodePathExplanation(models({ nativeAddon: { used: true }, threads: 1 })), "native (Draftline's addon: the target's tokens of a verify batch in one call)");
  });
  it("without it: node-llama-cpp's path, why, what reading costs (in words, no benchmark figures), and the per-step threads only at 2+ CPU threads", () => {
    const reason = 'no native addon for win32-x64: it is built for Linux x64 only';
    const one = decodePathExplanation(models({ nativeAddon: { used: false, reason }, threads: 1 }));
    assert.ok(one.startsWith(`node-llama-cpp's own path (${reason}): `), one);
    assert.match(one, /one call per verified position instead of one per step: slower, the more so with a large vocabulary/);
    assert.doesNotMatch(one, /\d ms|\dx\b/);
    assert.doesNotMatch(one, /threads anew/);
    assert.match(
      decodePathExplanation(models({ nativeAddon: { used: false, reason }, threads: 4 })),
      /llama\.cpp starts its 4 threads anew for every step, which makes a step several times slower than 1 thread/,
    );
    assert.doesNotMatch(
      decodePathExplanation(models({ nativeAddon: { used: false, reason }, threads: 4, backend: 'vulkan', gpuLayers: { target: 9, draft: 5 } })),
      /threads anew/,
      'on a GPU the CPU threads do not do the steps',
    );
  });
  it('the tooltip shows it only when the library path runs; Show Stats always', () => {
    const tooltip = (m: LoadedModelsInfo) => statusTooltip({ status: { kind: 'ready' }, mode: 'hybrid', models: m, summary: null });
    assert.doesNotMatch(tooltip(models({ nativeAddon: { used: true } })), /Decoding:/);
    assert.match(tooltip(models({ nativeAddon: { used: false, reason: 'x' } })), /\n\nDecoding: node-llama-cpp's own path \(x\)/);
    const report = (m: LoadedModelsInfo) => statsReport(new StatsCollector(), 'hybrid', { kind: 'local', model: 't', local: m });
    assert.match(report(models({ nativeAddon: { used: true } })), /^Decoding: native /m);
    assert.match(report(models({ nativeAddon: { used: false, reason: 'x' } })), /^Decoding: node-llama-cpp's own path \(x\)/m);
  });
});

describe("draftline.gpu 'cpu' on macOS arm64, whose only binary is Metal", () => {
  it('asks node-llama-cpp for the Metal binary (there is no CPU-only one) and the tooltip still says CPU as set', () => {
    assert.equal(llamaGpuOption('cpu', 'darwin', 'arm64'), 'metal');
    assert.equal(llamaGpuOption('cpu', 'darwin', 'x64'), false);
    assert.equal(llamaGpuOption('cpu', 'win32', 'arm64'), false);
    assert.equal(llamaGpuOption('vulkan', 'linux', 'x64'), 'vulkan');
    assert.equal(llamaGpuOption('auto', 'darwin', 'arm64'), 'auto');
    const onMetalNoLayers = models({
      backend: 'metal',
      gpuLayers: { target: 0, draft: 0 },
      runtime: runtime({ requestedGpu: 'cpu', gpuBinaries: ['metal'], gpuDetected: ['metal'], gpuDevices: ['Apple M2'] }),
    });
    assert.equal(backendExplanation(onMetalNoLayers), 'CPU (as set in draftline.gpu)');
  });
});

describe('the worker side: what this install and machine offer (real node-llama-cpp detection)', () => {
  it('finds the GPU binary packages installed next to node-llama-cpp, of its version', () => {
    const binaries = installedGpuBinaries();
    for (const gpu of binaries) assert.ok(['cuda', 'vulkan', 'metal'].includes(gpu), gpu);
    // A full `npm install` on linux-x64 brings the Vulkan binary (the default .vsix carries it too).
    if (process.platform === 'linux' && process.arch === 'x64') assert.ok(binaries.includes('vulkan'), JSON.stringify(binaries));
  });
  it('describes the choice; on a machine without a GPU driver the tooltip names the fallback', async () => {
    const llama = await getRuntime({ gpu: 'auto' }, 1, () => undefined);
    const choice = await describeRuntimeChoice({ gpu: 'auto', threads: 0 }, llama);
    assert.equal(choice.requestedGpu, 'auto');
    assert.ok(choice.cores >= 1);
    if (llama.gpu !== false || choice.gpuDetected.length > 0 || choice.gpuBinaries.length === 0) return; // a GPU machine, or a CPU-only install
    assert.deepEqual(choice.gpuDevices, []);
    assert.match(backendExplanation({ backend: 'cpu', gpuLayers: { target: 0, draft: 0 }, runtime: choice }), /^CPU \(no GPU found; this package can use (CUDA or )?Vulkan\)$/);
  });
});

describe('Show Stats says whether the model files were verified', () => {
  it('a verified download and a file from disk, each in a line of its own; nothing when not known', () => {
    const info: BackendInfo = { kind: 'local', model: 'draftline-code-target', local: models() };
    const report = statsReport(new StatsCollector(), 'hybrid', info, {
      target: "verified: sha256 29871c94d157… matched the hub's on 2026-11-24 22:10 UTC",
      draft: 'local file, not verified (not downloaded by Draftline)',
    });
    assert.match(report, /^Target file: verified: sha256 29871c94d157… matched the hub's on 2026-11-24 22:10 UTC$/m);
    assert.match(report, /^Draft file: local file, not verified \(not downloaded by Draftline\)$/m);
    assert.doesNotMatch(statsReport(new StatsCollector(), 'hybrid', info), /file:/);
    // No draft loaded: no draft line.
    const alone = statsReport(new StatsCollector(), 'hybrid', { ...info, local: models({ draft: null }) }, { target: 'embedded (ships with Draftline)', draft: null });
    assert.match(alone, /^Target file: embedded \(ships with Draftline\)$/m);
    assert.doesNotMatch(alone, /Draft file:/);
    // The next-edit model's file, once next edits resolved it.
    const withNextEdit = statsReport(new StatsCollector(), 'hybrid', info, {
      target: 'embedded (ships with Draftline)',
      draft: 'embedded (ships with Draftline)',
      nextEdit: 'local file, not verified (chosen in place of a download, not downloaded by Draftline)',
    });
    assert.match(withNextEdit, /^Next-edit file: local file, not verified \(chosen in place of a download, not downloaded by Draftline\)$/m);
  });
});

describe('Show Stats says which inference worker runs the models', () => {
  it('a shared one and for how many windows, or the window’s own; nothing when not asked', () => {
    const info: BackendInfo = { kind: 'local', model: 'draftline-code-target', local: models() };
    const shared = statsReport(new StatsCollector(), 'hybrid', info, undefined, { shared: true, pid: 4242, windows: 3, idleMinutes: 10 });
    assert.match(shared, /^Inference worker: shared, running for 3 windows with these models \(pid 4242; stays up 10 min after the last window closes\)$/m);
    const last = statsReport(new StatsCollector(), 'hybrid', info, undefined, { shared: true, pid: 4242, windows: 1, idleMinutes: 0 });
    assert.match(last, /^Inference worker: shared, running for 1 window with these models \(pid 4242; exits with the last window\)$/m);
    assert.match(statsReport(new StatsCollector(), 'hybrid', info, undefined, { shared: false, pid: 7, windows: 1, idleMinutes: 10 }), /^Inference worker: this window's own \(pid 7\)$/m);
    assert.doesNotMatch(statsReport(new StatsCollector(), 'hybrid', info), /Inference worker/);
  });
});
