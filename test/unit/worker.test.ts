// The inference worker as the extension uses it: a child process behind WorkerClient (dist/worker.js,
// built by `npm test`). Covers KV reuse, cancellation, a native crash and every bad model input.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CompletionRequest, ModelSettings } from '../../src/shared/types';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import { WorkerClient } from '../../src/worker/workerClient';
import { truncateFile, writeNotGguf } from '../support/ggufWriter';
import { ensureTestModel } from '../support/models';

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
    const r = await client.request('complete', { request: request(PREFIX) });
    assert.ok(r.tokens.length > 0);
    assert.equal(typeof r.text, 'string');
  });

  it('typing one more character reuses the KV cache of the prompt', async () => {
    const first = await client.request('complete', { request: request(PREFIX + '+', { mode: 'plain' }) });
    const second = await client.request('complete', { request: request(PREFIX + '++', { mode: 'plain' }) });
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
