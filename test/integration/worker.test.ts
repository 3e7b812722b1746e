// The inference worker as the extension uses it: a child process behind WorkerClient (dist/worker.js,
// built by `npm test`). Covers KV reuse, cancellation, a native crash, every bad model input, and
// model downloads run in the worker for the extension host (progress, cancel, error codes).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CompletionRequest } from '../../src/shared/completion';
import type { ModelSettings } from '../../src/shared/settings';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import { DownloadError, describeProvenance, downloadedPath, type DownloadProgress } from '../../src/models/downloadIndex';
import { downloadInWorker } from '../../src/backend/downloadInWorker';
import { WorkerClient, WorkerError } from '../../src/worker/workerClient';
import { truncateFile, writeNotGguf } from '../../testbed/ggufWriter';
import { startDownloadServer } from '../support/downloadModels';
import { sha256Of, type startModelServer } from '../support/modelServer';
import { ensureTestModel } from '../../testbed/models';

const ROOT = path.resolve(__dirname, '../..');
const WORKER = path.join(ROOT, 'dist/worker.js');
const TARGET = path.join(ROOT, 'models/tiny-code-target.gguf');
const DRAFT = path.join(ROOT, 'models/tiny-code-draft.gguf');
const TMP = path.join(ROOT, 'test-output/worker');

const models = (over: Partial<ModelSettings> = {}): ModelSettings => ({ targetModel: TARGET, draftModel: DRAFT, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 2048, ...over });
const request = (prefix: string, over: Partial<CompletionRequest> = {}): CompletionRequest => ({ prefix, suffix: '\n}\n', maxTokens: 24, mode: 'hybrid', ...over });
// Mid-line, where the tiny target writes on (after a bare indented line it often ends at once).
const PREFIX = 'export function sum(values: number[]): number {\n  let total = 0;\n  for (let i = 0; i < values.length; i';

describe('inference worker', { skip: fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs` (npm test does)' }, () => {
  let client: WorkerClient;
  const events: string[] = [];
  before(() => {
    fs.mkdirSync(TMP, { recursive: true });
    client = new WorkerClient({
      workerPath: WORKER,
      env: { DRAFTLINE_TEST_HOOKS: '1' },
      backoff: { initialMs: 50, maxMs: 200, stableAfterMs: 60_000 },
      onCrash: (d) => events.push(`crash: ${d}`),
      onRestart: () => events.push('restart'),
    });
  });
  after(() => client.dispose());

  it('loads the embedded pair and completes with FIM', async () => {
    const info = await client.request('load', { models: models(), speculation: DEFAULT_SPECULATION });
    assert.equal(info.promptFormat, 'fim');
    assert.equal(info.draft?.name, 'tiny-code-draft');
    assert.equal(info.draftProblem, null);
    assert.equal(info.backend, 'cpu');
    assert.ok(info.contextSize <= 256, 'capped at the model training context');
    // The bundled worker reaches node-llama-cpp's own context lock, so its batches go straight to llama_decode.
    assert.match(info.tokenReader ?? '', /^native, direct decode$/, info.tokenReader);
    const r = await client.request('complete', { request: request(PREFIX) });
    assert.ok(r.tokens.length > 0);
    assert.equal(typeof r.text, 'string');
  });

  it('typing one more character reuses the KV cache of the prompt', async () => {
    const first = await client.request('complete', { request: request(`${PREFIX}+`, { mode: 'plain' }) });
    const second = await client.request('complete', { request: request(`${PREFIX}++`, { mode: 'plain' }) });
    assert.ok(first.stats.promptTokens > 30);
    // Only the tokens from the edit on (and the suffix) are evaluated again.
    const evaluated = second.stats.promptTokens - second.stats.reusedPromptTokens;
    assert.ok(evaluated <= 10, `evaluated ${evaluated} of ${second.stats.promptTokens} prompt tokens`);
  });

  it('cancels a running generation within a step', async () => {
    const controller = new AbortController();
    const started = performance.now();
    const pending = client.request('complete', { request: request(PREFIX, { maxTokens: 200, mode: 'plain', stopAtBlockEnd: false }) }, controller.signal);
    setTimeout(() => controller.abort(), 5);
    const r = await pending;
    assert.equal(r.stats.stopReason, 'abort');
    assert.ok(r.tokens.length < 200);
    assert.ok(performance.now() - started < 5000);
  });

  it('reports a precise error for each bad model file, and keeps working', async () => {
    const missing = path.join(TMP, 'missing.gguf');
    const notGguf = path.join(TMP, 'not.gguf');
    const truncated = path.join(TMP, 'truncated.gguf');
    await writeNotGguf(notGguf);
    await truncateFile(TARGET, truncated, 2_000_000);
    const noHeads = await ensureTestModel('worker-no-heads', { seed: 7, dModel: 64, nLayers: 1, nHeads: 4, ffn: 128, omitKeys: ['llama.attention.head_count'] });
    const cases: [string, RegExp][] = [
      [missing, /not found: .*missing\.gguf/],
      [notGguf, /not a GGUF model file/],
      [truncated, /truncated/],
      [noHeads, /head_count/],
    ];
    const pid = client.pid;
    for (const [file, pattern] of cases) {
      await assert.rejects(client.request('load', { models: models({ targetModel: file }), speculation: DEFAULT_SPECULATION }), (e: Error) => {
        assert.match(e.message, pattern);
        return true;
      });
    }
    assert.equal(client.pid, pid, 'the worker survived every bad file (no native abort)');
    await client.request('load', { models: models(), speculation: DEFAULT_SPECULATION });
    assert.ok((await client.request('complete', { request: request(PREFIX) })).tokens.length > 0);
  });

  it('a draft with another vocabulary turns the draft off with a message; the target keeps working', async () => {
    const odd = await ensureTestModel('worker-odd-vocab', { seed: 8, dModel: 64, nLayers: 1, nHeads: 4, ffn: 128, vocabMutation: { index: 812, text: 'qqzzy' } });
    const info = await client.request('load', { models: models({ draftModel: odd }), speculation: DEFAULT_SPECULATION });
    assert.equal(info.draft, null);
    assert.match(info.draftProblem ?? '', /token 812 differs/);
    const r = await client.request('complete', { request: request(PREFIX, { mode: 'hybrid' }) });
    assert.ok(r.tokens.length > 0);
    assert.notEqual(r.stats.speculation.mode, 'hybrid', 'hybrid falls back to n-gram only');
  });

  it('a model without FIM tokens completes from the prefix alone', async () => {
    const noFim = await ensureTestModel('worker-no-fim', { seed: 9, dModel: 64, nLayers: 1, nHeads: 4, ffn: 128, fim: false });
    const info = await client.request('load', { models: models({ targetModel: noFim, draftModel: '' }), speculation: DEFAULT_SPECULATION });
    assert.equal(info.promptFormat, 'prefix-only');
    const r = await client.request('complete', { request: request(PREFIX) });
    assert.ok(r.stats.promptTokens > 0);
  });

  it('a native crash kills only the worker; it restarts with backoff and serves again', async () => {
    await client.request('load', { models: models(), speculation: DEFAULT_SPECULATION });
    const pid = client.pid;
    await assert.rejects(client.request('crash', {}), /killed by SIGABRT|exited/);
    assert.ok(events.some((e) => e.startsWith('crash:')));
    const deadline = Date.now() + 10_000;
    while (!events.includes('restart') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.ok(events.includes('restart'), 'restarted');
    assert.notEqual(client.pid, pid);
    await client.request('load', { models: models(), speculation: DEFAULT_SPECULATION });
    assert.ok((await client.request('complete', { request: request(PREFIX) })).tokens.length > 0);
  });
});

describe('model downloads in the worker (the extension host never loads node-llama-cpp)', {
  skip: fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs` (npm test does)',
}, () => {
  const OUT = path.join(TMP, 'downloads');
  let client: WorkerClient;
  let server: Awaited<ReturnType<typeof startModelServer>>;
  let model: string;
  let draft: string;
  let big: string;
  let tampered: string;
  const size = (file: string) => fs.statSync(file).size;
  /** What is left in a download folder apart from the index: nothing after a cancel or a failure. */
  const leftovers = (dir: string) => (fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f !== 'downloads.json') : []);
  /** node-llama-cpp deletes a cancelled download's temporary file a moment after it stops. */
  async function settledLeftovers(dir: string): Promise<string[]> {
    for (const deadline = Date.now() + 3000; leftovers(dir).length > 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    return leftovers(dir);
  }

  before(async () => {
    ({ server, model, draft, big, tampered } = await startDownloadServer(OUT, (f) => ({ '/m/slow-small.gguf': { file: f.model, rate: 1_000_000 } })));
    client = new WorkerClient({ workerPath: WORKER, env: { DRAFTLINE_TEST_HOOKS: '1' }, backoff: { initialMs: 50, maxMs: 200, stableAfterMs: 60_000 } });
  });
  after(async () => {
    client?.dispose();
    await server?.close();
  });

  it('downloads a pair as one operation, its progress reaching the host, and records it for offline use', async () => {
    const dir = path.join(OUT, 'pair');
    const progress: DownloadProgress[] = [];
    const uris = [`${server.url}/m/target.gguf`, `${server.url}/m/draft.gguf`];
    const files = await client.request('download', { uris, dirPath: dir }, undefined, (p) => progress.push(p));
    assert.equal(files.length, 2);
    for (const [i, f] of files.entries()) assert.ok(fs.readFileSync(f).equals(fs.readFileSync([model, draft][i])), `${f} byte-identical`);
    assert.ok(progress.length > 0, 'progress messages arrived');
    const last = progress.at(-1)!;
    assert.equal(last.totalBytes, size(model) + size(draft));
    assert.equal(last.downloadedBytes, last.totalBytes, 'the last progress is the finished download');
    // The index the host reads (host-safe) knows them now; the host's download resolves offline.
    assert.equal(downloadedPath(dir, uris[1]), files[1]);
    const requests = server.requests.length;
    assert.deepEqual(await downloadInWorker(client, uris, { dirPath: dir }), files);
    assert.equal(server.requests.length, requests, 'no request to the server');
  });

  it('resolves a hub URI against the endpoint the host passes, and verifies it there (progress of the check reaches the host)', async () => {
    const dir = path.join(OUT, 'hub');
    const progress: DownloadProgress[] = [];
    const [file] = await downloadInWorker(client, ['hf:tester/tiny-repo/tiny-target.gguf'], { dirPath: dir, huggingFaceEndpoint: `${server.url}/`, onProgress: (p) => progress.push(p) });
    assert.equal(size(file), size(model));
    assert.equal(progress.at(-1)?.verifiedBytes, size(model), 'the last progress is the finished sha256 check');
    // The host reads what the worker recorded: the file's hash, checked against the hub's.
    const provenance = describeProvenance(dir, file);
    assert.ok(provenance.verified, provenance.text);
    assert.match(provenance.text, /matched the hub's/);
  });

  it("a file whose bytes do not match the hub's hash: the host gets DownloadError invalid naming both hashes, and nothing is kept", async () => {
    const dir = path.join(OUT, 'tampered');
    await assert.rejects(downloadInWorker(client, ['hf:tester/tampered-repo/tiny-target.gguf'], { dirPath: dir, huggingFaceEndpoint: `${server.url}/` }), (e: DownloadError) => {
      assert.ok(e instanceof DownloadError);
      assert.equal(e.code, 'invalid');
      assert.ok(e.message.includes(sha256Of(model)) && e.message.includes(sha256Of(tampered)), e.message);
      return true;
    });
    assert.deepEqual(leftovers(dir), []);
    assert.equal(downloadedPath(dir, 'hf:tester/tampered-repo/tiny-target.gguf'), undefined);
  });

  it('cancel mid-download: the worker stops, answers code cancelled, and leaves no partial file', async () => {
    const dir = path.join(OUT, 'cancel');
    const uri = `${server.url}/m/slow.gguf`;
    const controller = new AbortController();
    const progress: DownloadProgress[] = [];
    const pending = client.request('download', { uris: [uri], dirPath: dir }, controller.signal, (p) => {
      progress.push(p);
      if (p.downloadedBytes > 200_000) controller.abort();
    });
    await assert.rejects(pending, (e: WorkerError) => {
      assert.ok(e instanceof WorkerError);
      assert.equal(e.code, 'cancelled', e.message);
      return true;
    });
    assert.ok(progress.length > 0, 'progress arrived before the cancel');
    assert.ok(progress.at(-1)!.downloadedBytes < size(big), 'cancelled mid-file');
    assert.deepEqual(await settledLeftovers(dir), []);
    assert.equal(downloadedPath(dir, uri), undefined);
  });

  it("the host's download function: a cancel is a DownloadError 'cancelled' (what onboarding tells from a failure)", async () => {
    const dir = path.join(OUT, 'cancel-host');
    const uri = `${server.url}/m/slow.gguf`;
    const controller = new AbortController();
    let seen = 0;
    const pending = downloadInWorker(client, [uri], {
      dirPath: dir,
      signal: controller.signal,
      onProgress: (p) => {
        seen = p.downloadedBytes;
        if (p.downloadedBytes > 200_000) controller.abort();
      },
    });
    await assert.rejects(pending, (e: DownloadError) => e instanceof DownloadError && e.code === 'cancelled');
    assert.ok(seen > 0 && seen < size(big));
    assert.deepEqual(await settledLeftovers(dir), []);
    // Already cancelled: nothing is asked of the worker.
    await assert.rejects(downloadInWorker(client, [uri], { dirPath: dir, signal: AbortSignal.abort() }), (e: DownloadError) => e.code === 'cancelled');
  });

  it("failures keep their DownloadError code across the process boundary ('failed', 'invalid')", async () => {
    const dir = path.join(OUT, 'errors');
    await assert.rejects(client.request('download', { uris: [`${server.url}/m/missing.gguf`], dirPath: dir }), (e: WorkerError) => {
      assert.equal(e.code, 'failed');
      assert.match(e.message, /404|not found|failed/i);
      return true;
    });
    await assert.rejects(downloadInWorker(client, [`${server.url}/m/text.gguf`], { dirPath: dir }), (e: DownloadError) => {
      assert.ok(e instanceof DownloadError);
      assert.equal(e.code, 'invalid');
      assert.match(e.message, /not a GGUF model file/);
      return true;
    });
    assert.deepEqual(leftovers(dir), []);
  });

  it('a completion does not cancel a download under way (they are apart in the worker)', async () => {
    await client.request('load', { models: models(), speculation: DEFAULT_SPECULATION });
    const dir = path.join(OUT, 'with-completion');
    let completed: Promise<unknown> | undefined;
    const [file] = await client.request('download', { uris: [`${server.url}/m/slow-small.gguf`], dirPath: dir }, undefined, (p) => {
      if (p.downloadedBytes > 100_000) completed ??= client.request('complete', { request: request(PREFIX) });
    });
    assert.ok(completed, 'a completion ran during the download');
    assert.ok(((await completed) as { tokens: number[] }).tokens.length > 0);
    assert.ok(fs.readFileSync(file).equals(fs.readFileSync(model)), 'byte-identical');
  });

  it('a worker crash mid-download is the WorkerError (the controller shows the restart), and a new download then completes', async () => {
    const dir = path.join(OUT, 'crash');
    const uri = `${server.url}/m/slow-small.gguf`;
    const pid = client.pid;
    let crashed: Promise<unknown> | undefined;
    const pending = downloadInWorker(client, [uri], {
      dirPath: dir,
      onProgress: (p) => {
        if (p.downloadedBytes > 100_000) crashed ??= client.request('crash', {}).catch(() => undefined);
      },
    });
    await assert.rejects(pending, (e: WorkerError) => {
      assert.ok(e instanceof WorkerError && !(e instanceof DownloadError));
      assert.equal(e.code, 'crashed');
      return true;
    });
    await crashed;
    assert.equal(downloadedPath(dir, uri), undefined);
    const deadline = Date.now() + 10_000;
    while ((client.restartStatus() || client.pid === undefined || client.pid === pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const [file] = await downloadInWorker(client, [uri], { dirPath: dir });
    assert.notEqual(client.pid, pid);
    assert.ok(fs.readFileSync(file).equals(fs.readFileSync(model)), 'byte-identical');
  });
});
