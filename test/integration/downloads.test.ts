// The real download path (node-llama-cpp's downloader) against a local server: no hub is reachable here.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gpuLayersFor } from '../../src/inference/inferenceSession';
import { describeRuntimeChoice, getRuntime, loadLibrary } from '../../src/inference/llamaRuntime';
import { backendExplanation } from '../../src/stats/statusText';
import { CATALOG, catalogModelByUri, recommendPair } from '../../src/models/catalog';
import { DownloadError, describeProvenance, downloadedPath, isModelUri, readDownloadIndex, recordDownload, SpeedMeter, type DownloadProgress } from '../../src/models/downloadIndex';
import { downloadModels } from '../../src/inference/modelDownloader';
import { modelFileUrl, sha256FromEtag, sha256File } from '../../src/inference/modelVerification';
import { startDownloadServer, tamperedCopy } from '../support/downloadModels';
import { type ServedFile, sha256Of, startModelServer } from '../support/modelServer';
import { ensureTestModel } from '../../testbed/models';

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
      // Pinned: the file and the repository commit it comes from.
      assert.match(pair.target.uri, /^hf:ggml-org\/Qwen2\.5-Coder-.*-Q8_0-GGUF\/qwen2\.5-coder-.*-q8_0\.gguf#[0-9a-f]{40}$/);
      assert.ok(pair.target.uri.endsWith(`#${pair.target.revision}`));
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

describe('what a download is checked against', () => {
  it("reads a sha256 from the hub's ETag headers, and nothing else as one", () => {
    const sha = 'd0f8cd6c49bab52a0abdbe47948518b1f4d9b1a8a2a6825099cea31cea10ac56';
    assert.equal(sha256FromEtag(`"${sha}"`), sha);
    assert.equal(sha256FromEtag(`W/"${sha.toUpperCase()}"`), sha);
    // A file kept in git: its blob sha1. S3: an md5. Others: opaque tags.
    for (const other of ['"4a9ec2d8f9b6e1c3a2b4d6e8f0a1b3c5d7e9f1a2"', '"9e107d9d372bb6826bd81d3542a419d6"', '"65f1c2-1a2b3c"', '', null]) assert.equal(sha256FromEtag(other), null, String(other));
  });

  it('builds the resolve URL node-llama-cpp downloads from: revision, endpoint (option, then HF_ENDPOINT), encoding', () => {
    const saved = { MODEL_ENDPOINT: process.env.MODEL_ENDPOINT, HF_ENDPOINT: process.env.HF_ENDPOINT };
    try {
      delete process.env.MODEL_ENDPOINT;
      delete process.env.HF_ENDPOINT;
      assert.equal(modelFileUrl('hf:u/r/m.gguf'), 'https://huggingface.co/u/r/resolve/main/m.gguf?download=true');
      assert.equal(modelFileUrl(CATALOG.draft05.uri), `https://huggingface.co/ggml-org/Qwen2.5-Coder-0.5B-Q8_0-GGUF/resolve/${CATALOG.draft05.revision}/qwen2.5-coder-0.5b-q8_0.gguf?download=true`);
      assert.equal(modelFileUrl('hf:u/r/sub dir/m.gguf#v1', 'http://127.0.0.1:9'), 'http://127.0.0.1:9/u/r/resolve/v1/sub%20dir/m.gguf?download=true');
      process.env.HF_ENDPOINT = 'https://mirror.example/';
      assert.equal(modelFileUrl('hf:u/r/m.gguf'), 'https://mirror.example/u/r/resolve/main/m.gguf?download=true');
      assert.equal(modelFileUrl('https://x.org/m.gguf'), 'https://x.org/m.gguf');
      // Resolved through the hub's manifest: the downloader knows the URL.
      assert.equal(modelFileUrl('hf:u/r:Q4_K_M'), null);
    } finally {
      for (const [k, v] of Object.entries(saved)) v === undefined ? delete process.env[k] : (process.env[k] = v);
    }
  });

  it('the catalog names revisions; settings written before that still find their entry (unpinned)', () => {
    const legacy = CATALOG.target15.uri.slice(0, CATALOG.target15.uri.indexOf('#'));
    assert.equal(catalogModelByUri(legacy), CATALOG.target15);
    assert.equal(catalogModelByUri(legacy, { exact: true }), undefined);
    assert.equal(catalogModelByUri(CATALOG.target15.uri, { exact: true }), CATALOG.target15);
  });

  it('reads an index written before hashes were kept, and says what each file is', () => {
    const dir = path.join(OUT, 'index');
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'downloads.json'), JSON.stringify({ 'hf:u/r/old.gguf': path.join(dir, 'old.gguf') }));
    assert.deepEqual(readDownloadIndex(dir), { 'hf:u/r/old.gguf': { file: path.join(dir, 'old.gguf') } });
    recordDownload(dir, 'hf:u/r/new.gguf', { file: path.join(dir, 'new.gguf'), sha256: 'ab'.repeat(32), size: 3, checkedAt: '2026-11-24T22:10:00.000Z', verifiedBy: 'hub' });
    assert.match(describeProvenance(dir, path.join(dir, 'old.gguf')).text, /^not verified \(downloaded before Draftline checked hashes\)$/);
    assert.deepEqual(describeProvenance(dir, path.join(dir, 'new.gguf')), {
      verified: true,
      text: "verified: sha256 abababababab… matched the hub's on 2026-11-24 22:10 UTC",
      short: 'verified 2026-11-24',
    });
    assert.deepEqual(describeProvenance(dir, '/elsewhere/mine.gguf'), { verified: false, text: 'local file, not verified (not downloaded by Draftline)', short: 'local file, not verified' });
    // A local file chosen in place of a download (Use a Local File…): recorded for its URI, still a local file.
    recordDownload(dir, 'hf:u/r/chosen.gguf', { file: '/elsewhere/chosen.gguf', verifiedBy: null, note: 'a local file chosen for this model, not downloaded by Draftline' });
    assert.deepEqual(describeProvenance(dir, '/elsewhere/chosen.gguf'), {
      verified: false,
      text: 'local file, not verified (chosen in place of a download, not downloaded by Draftline)',
      short: 'local file, not verified',
    });
    assert.equal(describeProvenance(dir, '/ext/models/t.gguf', ['/ext/models/t.gguf']).text, 'embedded (ships with Draftline)');
  });
});

/** ipull's chunk (node-llama-cpp's downloader leaves it at the default): the unit a partial file is kept in. */
const CHUNK = 5 * 1024 * 1024;

describe("verifying downloads against the hub's sha256", () => {
  const dir = path.join(OUT, 'verify');
  const routes: Record<string, ServedFile> = {};
  let server: Awaited<ReturnType<typeof startModelServer>>;
  let model: string;
  let big: string;
  let tampered: string;
  let bigOther: string;
  const leftovers = (d: string) => (fs.existsSync(d) ? fs.readdirSync(d).filter((f) => f !== 'downloads.json') : []);
  const hubOpts = (sub: string) => ({ dirPath: path.join(dir, sub), huggingFaceEndpoint: server.url });

  before(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    model = await ensureTestModel('download-target', { seed: 61, dModel: 64, nLayers: 2, nHeads: 4, ffn: 128 });
    big = await ensureTestModel('download-big', { seed: 63, dModel: 256, nLayers: 4, nHeads: 4, ffn: 512 });
    tampered = tamperedCopy(model, path.join(dir, 'tampered.bin'));
    bigOther = tamperedCopy(big, path.join(dir, 'big-other.bin'));
    Object.assign(routes, {
      '/tester/verified/resolve/main/target.gguf': { file: model, hub: true },
      '/tester/tampered/resolve/main/target.gguf': { file: tampered, hub: sha256Of(model) },
      '/tester/nohash/resolve/main/target.gguf': { file: model },
      '/tester/big/resolve/main/big.gguf': { file: big, hub: true },
    } satisfies Record<string, ServedFile>);
    server = await startModelServer(routes);
  });
  after(async () => server?.close());

  it('right bytes: verified against the sha256 the hub put on its redirect, recorded with the commit', async () => {
    const [file] = await downloadModels(['hf:tester/verified/target.gguf'], hubOpts('right'));
    assert.ok(fs.readFileSync(file).equals(fs.readFileSync(model)));
    const record = readDownloadIndex(path.join(dir, 'right'))['hf:tester/verified/target.gguf'];
    assert.equal(record.sha256, sha256Of(model));
    assert.equal(record.size, fs.statSync(model).size);
    assert.equal(record.verifiedBy, 'hub');
    assert.equal(record.commit, 'c0ffee0000000000000000000000000000000000');
    assert.ok(Date.now() - Date.parse(record.checkedAt!) < 60_000);
    // One HEAD of the resolve URL, answered by the redirect (not followed to the CDN).
    assert.ok(server.requests.includes('HEAD /tester/verified/resolve/main/target.gguf'), server.requests.join(' | '));
    assert.match(describeProvenance(path.join(dir, 'right'), file).text, /^verified: sha256 [0-9a-f]{12}… matched the hub's on \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
  });

  it('wrong bytes with the right size: refused, the file deleted, the error names the file and both hashes', async () => {
    const sub = path.join(dir, 'wrong');
    await assert.rejects(downloadModels(['hf:tester/tampered/target.gguf'], hubOpts('wrong')), (e: DownloadError) => {
      assert.equal(e.code, 'invalid');
      assert.ok(e.message.includes('target.gguf'), e.message);
      assert.ok(e.message.includes(sha256Of(tampered)), e.message);
      assert.ok(e.message.includes(sha256Of(model)), e.message);
      assert.match(e.message, /deleted and nothing was loaded/);
      return true;
    });
    assert.deepEqual(leftovers(sub), []);
    assert.equal(downloadedPath(sub, 'hf:tester/tampered/target.gguf'), undefined);
  });

  it('a truncated file resumed with other bytes: verified whole, so refused; the next attempt fetches it whole and passes', async () => {
    const url = `${server.url}/tester/resumed/resolve/main/big.gguf`;
    const sub = path.join(dir, 'resumed');
    fs.mkdirSync(sub, { recursive: true });
    // What an editor closed mid-download leaves, written by node-llama-cpp's downloader itself: the
    // partial file with the old version's second chunk (ipull: 5 MiB chunks) and its progress.
    routes['/tester/resumed/resolve/main/big.gguf'] = { file: big, hub: true, stallAfter: 1_000_000 };
    const lib = await loadLibrary();
    const interrupted = await lib.createModelDownloader({ modelUri: url, dirPath: sub, deleteTempFileOnCancel: false });
    void interrupted.download().catch(() => undefined);
    const secondChunk = fs.statSync(big).size - CHUNK;
    for (const deadline = Date.now() + 20_000; interrupted.downloadedSize < secondChunk + 1_000_000 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300));
    await interrupted.cancel();
    assert.ok(
      leftovers(sub).some((f) => f.endsWith('.ipull')),
      `a partial file is left: ${leftovers(sub)}`,
    );
    // Upstream now serves (and announces) other bytes of the same size.
    routes['/tester/resumed/resolve/main/big.gguf'] = { file: bigOther, hub: true };
    let refused = '';
    await assert.rejects(downloadModels([url], { dirPath: sub }), (e: DownloadError) => {
      assert.equal(e.code, 'invalid');
      assert.ok(e.message.includes(sha256Of(bigOther)), e.message);
      refused = /its sha256 is ([0-9a-f]{64})/.exec(e.message)?.[1] ?? '';
      return true;
    });
    // The refused file is the new version's first chunk (fetched on resume) and the old version's
    // second (kept from the partial file): resumed, not fetched again, and checked whole.
    const mixed = createHash('sha256').update(fs.readFileSync(bigOther).subarray(0, CHUNK)).update(fs.readFileSync(big).subarray(CHUNK)).digest('hex');
    assert.equal(refused, mixed, 'the resumed file mixes the new first chunk with the old second one');
    assert.deepEqual(leftovers(sub), []);
    const [file] = await downloadModels([url], { dirPath: sub });
    assert.ok(fs.readFileSync(file).equals(fs.readFileSync(bigOther)), 'the whole file, fetched again');
    assert.equal(readDownloadIndex(sub)[url].verifiedBy, 'hub');
  });

  it('a hub that announces no hash: the download works, recorded as not verified, and says why', async () => {
    const sub = path.join(dir, 'nohash');
    const [file] = await downloadModels(['hf:tester/nohash/target.gguf'], hubOpts('nohash'));
    const record = readDownloadIndex(sub)['hf:tester/nohash/target.gguf'];
    assert.equal(record.verifiedBy, null);
    assert.equal(record.sha256, sha256Of(model), 'the hash is recorded all the same');
    assert.match(record.note!, /127\.0\.0\.1:\d+ announced no sha256 for this file/);
    assert.match(describeProvenance(sub, file).text, /^not verified: 127\.0\.0\.1:\d+ announced no sha256 for this file \(sha256 [0-9a-f]{12}… recorded on .* UTC\)$/);
  });

  it('a mirror set through HF_ENDPOINT: the hash comes from the mirror the bytes come from', async () => {
    const saved = process.env.HF_ENDPOINT;
    process.env.HF_ENDPOINT = `${server.url}/`;
    try {
      const sub = path.join(dir, 'mirror');
      const before = server.requests.length;
      const [file] = await downloadModels(['hf:tester/verified/target.gguf'], { dirPath: sub });
      assert.ok(fs.readFileSync(file).equals(fs.readFileSync(model)));
      assert.equal(readDownloadIndex(sub)['hf:tester/verified/target.gguf'].verifiedBy, 'hub');
      assert.ok(server.requests.slice(before).includes('HEAD /tester/verified/resolve/main/target.gguf'));
      // And a mirror serving other bytes than it announces is caught the same way.
      process.env.HF_ENDPOINT = server.url;
      await assert.rejects(downloadModels(['hf:tester/tampered/target.gguf'], { dirPath: path.join(dir, 'mirror-wrong') }), (e: DownloadError) => e.code === 'invalid');
    } finally {
      if (saved === undefined) delete process.env.HF_ENDPOINT;
      else process.env.HF_ENDPOINT = saved;
    }
  });

  it('cancel mid-hash: cancelled, nothing recorded, nothing left', async () => {
    const sub = path.join(dir, 'cancel-hash');
    const controller = new AbortController();
    let hashedAtCancel = -1;
    const pending = downloadModels(['hf:tester/big/big.gguf'], {
      ...hubOpts('cancel-hash'),
      signal: controller.signal,
      onProgress: (p) => {
        if (p.verifiedBytes !== undefined && p.verifiedBytes > 0 && hashedAtCancel < 0) {
          hashedAtCancel = p.verifiedBytes;
          controller.abort();
        }
      },
    });
    await assert.rejects(pending, (e: DownloadError) => e.code === 'cancelled');
    assert.ok(hashedAtCancel > 0 && hashedAtCancel < fs.statSync(big).size, `cancelled mid-hash (at ${hashedAtCancel} bytes)`);
    assert.deepEqual(leftovers(sub), []);
    assert.equal(downloadedPath(sub, 'hf:tester/big/big.gguf'), undefined);
  });

  it('hashes in 1 MiB steps, the event loop free between them', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    let steps = 0;
    const digest = await sha256File(big, { onProgress: () => steps++ });
    clearInterval(timer);
    assert.equal(digest, sha256Of(big));
    assert.equal(steps, Math.ceil(fs.statSync(big).size / (1 << 20)));
    assert.ok(ticks > 0, 'timers ran while the file was hashed');
  });
});

describe('a catalog entry is pinned: its first download records the hash, later ones must match', () => {
  const dir = path.join(OUT, 'pin');
  const entry = CATALOG.draft05;
  const route = `/ggml-org/Qwen2.5-Coder-0.5B-Q8_0-GGUF/resolve/${entry.revision}/qwen2.5-coder-0.5b-q8_0.gguf`;
  const routes: Record<string, ServedFile> = {};
  let server: Awaited<ReturnType<typeof startModelServer>>;
  let draft: string;
  let model: string;
  const opts = () => ({ dirPath: dir, huggingFaceEndpoint: server.url });

  before(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    draft = await ensureTestModel('download-draft', { seed: 62, dModel: 32, nLayers: 1, nHeads: 2, ffn: 64 });
    model = await ensureTestModel('download-target', { seed: 61, dModel: 64, nLayers: 2, nHeads: 4, ffn: 128 });
    server = await startModelServer(routes);
  });
  after(async () => server?.close());

  it('first download: fetched at the named revision, verified, hash and size recorded', async () => {
    routes[route] = { file: draft, hub: true };
    const [file] = await downloadModels([entry.uri], opts());
    assert.ok(server.requests.some((r) => r.startsWith(`HEAD ${route}`)));
    const record = readDownloadIndex(dir)[entry.uri];
    assert.equal(record.sha256, sha256Of(draft));
    assert.equal(record.size, fs.statSync(draft).size);
    fs.rmSync(file);
  });

  it('upstream changed (the hub announces another hash): reported before anything is fetched', async () => {
    routes[route] = { file: model, hub: true };
    const before = server.requests.length;
    await assert.rejects(downloadModels([entry.uri], opts()), (e: DownloadError) => {
      assert.equal(e.code, 'invalid');
      assert.match(e.message, /changed upstream/);
      assert.ok(e.message.includes(sha256Of(model)) && e.message.includes(sha256Of(draft)), e.message);
      return true;
    });
    assert.ok(!server.requests.slice(before).some((r) => r.startsWith('GET')), `no bytes fetched: ${server.requests.slice(before).join(' | ')}`);
    assert.equal(downloadedPath(dir, entry.uri), undefined);
  });

  it('a server that announces no hash but serves other bytes: caught by the pin', async () => {
    routes[route] = { file: model };
    await assert.rejects(downloadModels([entry.uri], opts()), (e: DownloadError) => {
      assert.equal(e.code, 'invalid');
      assert.match(e.message, /pinned when it first downloaded it/);
      assert.ok(e.message.includes(sha256Of(model)) && e.message.includes(sha256Of(draft)), e.message);
      return true;
    });
    assert.equal(downloadedPath(dir, entry.uri), undefined);
  });

  it('the same bytes again, with no hash announced: verified by the pin', async () => {
    routes[route] = { file: draft };
    const [file] = await downloadModels([entry.uri], opts());
    assert.ok(fs.readFileSync(file).equals(fs.readFileSync(draft)));
    const record = readDownloadIndex(dir)[entry.uri];
    assert.equal(record.verifiedBy, 'pin');
    assert.match(describeProvenance(dir, file).text, /^verified: sha256 [0-9a-f]{12}… matched the pinned hash on /);
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
