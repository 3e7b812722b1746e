// The real download path (node-llama-cpp's downloader) against a local server: no hub is reachable here.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gpuLayersFor } from '../../src/inference/inferenceSession';
import { describeRuntimeChoice, getRuntime } from '../../src/inference/llamaRuntime';
import { backendExplanation } from '../../src/engine/statusText';
import { CATALOG, recommendPair } from '../../src/models/catalog';
import { DownloadError, downloadedPath, isModelUri, SpeedMeter, type DownloadProgress } from '../../src/models/downloadIndex';
import { downloadModels } from '../../src/inference/modelDownloader';
import { startDownloadServer } from '../support/downloadModels';
import { startModelServer } from '../support/modelServer';
import { ensureTestModel } from '../support/models';

const ROOT = path.resolve(__dirname, '../..');
const OUT = path.join(ROOT, 'test-output/downloads');
const GB = 1e9;

describe('recommended pair for a machine', () => {
  const cases: [string, { vramBytes: number; ramBytes: number; unifiedMemory?: boolean }, string][] = [
    ['no GPU, 8 GB RAM', { vramBytes: 0, ramBytes: 8 * GB }, '1.5B'],
    ['no GPU, 24 GB RAM', { vramBytes: 0, ramBytes: 24 * GB }, '1.5B'],
    ['no GPU, 64 GB RAM', { vramBytes: 0, ramBytes: 64 * GB }, '3B'],
    ['4 GB GPU', { vramBytes: 4 * GB, ramBytes: 16 * GB }, '1.5B'],
    ['8 GB GPU', { vramBytes: 8 * GB, ramBytes: 32 * GB }, '3B'],
    ['12 GB GPU', { vramBytes: 12 * GB, ramBytes: 32 * GB }, '7B'],
    ['24 GB GPU', { vramBytes: 24 * GB, ramBytes: 64 * GB }, '7B'],
    ['16 GB unified memory', { vramBytes: 16 * GB, ramBytes: 16 * GB, unifiedMemory: true }, '3B'],
    ['2 GB GPU (tight)', { vramBytes: 2 * GB, ramBytes: 8 * GB }, '1.5B'],
  ];
  for (const [name, machine, params] of cases) {
    it(`${name} -> ${params} target + 0.5B draft`, () => {
      const pair = recommendPair(machine);
      assert.equal(pair.target.params, params);
      assert.equal(pair.draft, CATALOG.draft05);
      assert.match(pair.target.uri, /^hf:ggml-org\/Qwen2\.5-Coder-.*-Q8_0-GGUF\/qwen2\.5-coder-.*-q8_0\.gguf$/);
    });
  }
});

describe('model URIs and progress', () => {
  it('tells URIs from paths', () => {
    for (const u of ['hf:user/repo:Q4_K_M', 'hf:user/repo/file.gguf', 'https://x.org/m.gguf', 'http://127.0.0.1:1/m.gguf']) assert.ok(isModelUri(u), u);
    for (const p of ['/home/me/m.gguf', 'C:\\models\\m.gguf', 'models/hf.gguf', '']) assert.ok(!isModelUri(p), p);
  });
  it('computes speed and ETA over a sliding window', () => {
    let t = 0;
    const meter = new SpeedMeter(5000, () => t);
    meter.sample(0, 1000);
    t = 1000;
    const p = meter.sample(100, 1000);
    assert.equal(p.bytesPerSecond, 100);
    assert.equal(p.etaSeconds, 9);
    t = 2000;
    assert.equal(meter.sample(1000, 1000).etaSeconds, 0);
  });
});

describe('downloading from a local server', () => {
  let server: Awaited<ReturnType<typeof startModelServer>>;
  let model: string;
  let draft: string;
  let big: string;
  before(async () => {
    ({ server, model, draft, big } = await startDownloadServer(OUT, (f) => ({ '/m/drop.gguf': { file: f.big, dropAfter: { bytes: 1_500_000, times: 1 } } })));
  });
  after(async () => server?.close());

  it('downloads a pair as one operation with progress, validates it, and resolves it offline afterwards', async () => {
    const dir = path.join(OUT, 'pair');
    const progress: DownloadProgress[] = [];
    const uris = [`${server.url}/m/target.gguf`, `${server.url}/m/draft.gguf`];
    const files = await downloadModels(uris, { dirPath: dir, onProgress: (p) => progress.push(p) });
    assert.equal(files.length, 2);
    for (const [i, f] of files.entries()) assert.equal(fs.readFileSync(f).length, fs.statSync([model, draft][i]).size);
    assert.ok(progress.length > 0);
    const last = progress.at(-1)!;
    assert.equal(last.totalBytes, fs.statSync(model).size + fs.statSync(draft).size);
    assert.equal(last.downloadedBytes, last.totalBytes);
    assert.equal(downloadedPath(dir, uris[0]), files[0]);
    // A second call needs no server.
    const requestsBefore = server.requests.length;
    assert.deepEqual(await downloadModels(uris, { dirPath: dir }), files);
    assert.equal(server.requests.length, requestsBefore);
  });

  it('resolves a hub URI (hf:user/repo/file.gguf) against the configured endpoint', async () => {
    const dir = path.join(OUT, 'hub');
    const [file] = await downloadModels(['hf:tester/tiny-repo/tiny-target.gguf'], { dirPath: dir, huggingFaceEndpoint: `${server.url}/` });
    assert.equal(fs.statSync(file).size, fs.statSync(model).size);
    assert.ok(server.requests.some((r) => r.includes('/tester/tiny-repo/resolve/main/tiny-target.gguf')));
  });

  it('cancel: no file left behind and no success', async () => {
    const dir = path.join(OUT, 'cancel');
    const controller = new AbortController();
    let seen = 0;
    const pending = downloadModels([`${server.url}/m/slow.gguf`], {
      dirPath: dir,
      signal: controller.signal,
      onProgress: (p) => {
        seen = p.downloadedBytes;
        if (p.downloadedBytes > 200_000) controller.abort();
      },
    });
    await assert.rejects(pending, (e: DownloadError) => e.code === 'cancelled');
    assert.ok(seen < fs.statSync(big).size, 'cancelled mid-file');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f !== 'downloads.json') : [], []);
    assert.equal(downloadedPath(dir, `${server.url}/m/slow.gguf`), undefined);
  });

  it('a connection dropped mid-file is resumed (Range request) and the file is complete', async () => {
    const dir = path.join(OUT, 'drop');
    let error: unknown;
    let file: string | undefined;
    try {
      [file] = await downloadModels([`${server.url}/m/drop.gguf`], { dirPath: dir });
    } catch (e) {
      error = e;
    }
    if (!file) {
      // The downloader gave up: a second attempt must continue from the partial file.
      assert.ok(error instanceof DownloadError, String(error));
      [file] = await downloadModels([`${server.url}/m/drop.gguf`], { dirPath: dir });
    }
    assert.ok(fs.readFileSync(file).equals(fs.readFileSync(big)), 'byte-identical');
    assert.ok(
      server.requests.some((r) => r.startsWith('GET /m/drop.gguf bytes=') && !r.endsWith('bytes=0-')),
      `resumed with a Range request: ${server.requests.filter((r) => r.includes('drop')).join(' | ')}`,
    );
  });

  it('a 404 fails with a clear error and leaves nothing', async () => {
    const dir = path.join(OUT, '404');
    await assert.rejects(downloadModels([`${server.url}/m/missing.gguf`], { dirPath: dir }), (e: DownloadError) => {
      assert.ok(e instanceof DownloadError);
      assert.match(e.message, /404|not found|failed/i);
      return true;
    });
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f !== 'downloads.json'),
      [],
    );
  });

  it('a file that is not GGUF is rejected after download and deleted', async () => {
    const dir = path.join(OUT, 'text');
    await assert.rejects(downloadModels([`${server.url}/m/text.gguf`], { dirPath: dir }), (e: DownloadError) => {
      assert.equal(e.code, 'invalid');
      assert.match(e.message, /not a GGUF model file/);
      return true;
    });
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f !== 'downloads.json'),
      [],
    );
  });
});

// A real small filesystem (tmpfs with a size limit): needs root, as on CI; skipped elsewhere.
describe('downloading onto a full disk', () => {
  const dir = path.join(OUT, 'full-disk');
  let server: Awaited<ReturnType<typeof startModelServer>>;
  let big: string;
  let mounted = false;
  before(async () => {
    fs.mkdirSync(dir, { recursive: true });
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
      mounted = true;
    } catch {}
    big = await ensureTestModel('download-big', { seed: 63, dModel: 256, nLayers: 4, nHeads: 4, ffn: 512 });
    server = await startModelServer({ '/m/big.gguf': { file: big }, '/m/big-nosize.gguf': { file: big, chunked: true } });
  });
  after(async () => {
    await server?.close();
    if (mounted) execFileSync('umount', [dir]);
  });

  it('is refused up front with the space needed and free, and nothing is written', async (t) => {
    if (!mounted) return t.skip('cannot mount a small tmpfs here (not root?)');
    await assert.rejects(downloadModels([`${server.url}/m/big.gguf`], { dirPath: dir }), (e: DownloadError) => {
      assert.equal(e.code, 'failed');
      assert.match(e.message, /Not enough disk space in .*full-disk: the download needs \d+\.\d MB, 1\.\d MB free/);
      return true;
    });
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f !== 'downloads.json'),
      [],
    );
  });

  it('a disk that fills up mid-file (size not announced) fails with a clear message, frees the partial file, and the process lives', async (t) => {
    if (!mounted) return t.skip('cannot mount a small tmpfs here (not root?)');
    // In a plain Node process of its own (no test runner listening for stray rejections): it must
    // not die of the downloader's unhandled ENOSPC writes.
    // (Asynchronously: the server answering it lives in this process.)
    const { stdout: out } = await promisify(execFile)(process.execPath, ['--import', 'tsx', path.join(__dirname, '../support/downloadOnce.ts'), `${server.url}/m/big-nosize.gguf`, dir], {
      encoding: 'utf8',
      cwd: ROOT,
      timeout: 60_000,
    });
    const result = JSON.parse(out.trim().split('\n').at(-1)!);
    assert.equal(result.code, 'failed', out);
    assert.match(result.message, /Not enough disk space in .*full-disk: the disk filled up during the download \(\d\.\d MB free\)/);
    assert.equal(result.aliveAfterMs, 2500, 'the process lived on after the failure');
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f !== 'downloads.json'),
      [],
    );
    assert.equal(downloadedPath(dir, `${server.url}/m/big-nosize.gguf`), undefined);
  });
});

describe('GPU layers asked of node-llama-cpp', () => {
  const fit = { fitContext: { contextSize: 2048 } };
  for (const [gpu, gpuLayers, role, expected] of [
    ['auto', 'auto', 'target', fit],
    ['auto', 'auto', 'draft', fit],
    ['cuda', 20, 'target', 20],
    ['cuda', 20, 'draft', fit],
    ['vulkan', 0, 'target', 0],
    ['vulkan', 0, 'draft', 0],
    ['cpu', 'auto', 'target', 0],
    ['cpu', 33, 'draft', 0],
  ] as const) {
    it(`gpu ${gpu}, gpuLayers ${gpuLayers}: ${role} -> ${JSON.stringify(expected)}`, () => {
      assert.deepEqual(gpuLayersFor(role, { gpu, gpuLayers }, 2048), expected);
    });
  }
});

describe('GPU backend choice on this machine', () => {
  it('an explicit GPU backend the machine cannot run fails with a message naming the setting', async () => {
    const llama = await getRuntime({ gpu: 'auto' }, 1, () => undefined);
    if (llama.gpu !== false) return; // a GPU machine: nothing to fall back from
    await assert.rejects(
      getRuntime({ gpu: 'cuda' }, 1, () => undefined),
      /GPU backend "cuda" is not available.*draftline\.gpu/,
    );
  });

  it('reports what node-llama-cpp picked on this machine (CPU here) as a fallback from auto', async () => {
    const llama = await getRuntime({ gpu: 'auto' }, 1, () => undefined);
    const backend = llama.gpu === false ? 'cpu' : llama.gpu;
    const runtime = await describeRuntimeChoice({ gpu: 'auto', threads: 0 }, llama);
    const text = backendExplanation({ backend, gpuLayers: { target: 0, draft: 0 }, runtime });
    // No GPU device here (a software Vulkan device is skipped unless GGML_VK_VISIBLE_DEVICES asks for it).
    assert.match(text, /^CPU \(/, `${backend}: ${text}`);
  });
});
