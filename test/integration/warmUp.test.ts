// Issue #27 item 7: the worker warms the models up after a load with one short completion, so the
// user's first completion does not pay for the first evaluation of the contexts. It must not delay
// the load's answer, must not count as a user's completion, and a real request goes first.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import { WorkerClient } from '../../src/worker/workerClient';

const ROOT = path.resolve(__dirname, '../..');
const WORKER = path.join(ROOT, 'dist/worker.js');
const models = {
  targetModel: path.join(ROOT, 'models/tiny-code-target.gguf'),
  draftModel: path.join(ROOT, 'models/tiny-code-draft.gguf'),
  gpu: 'cpu' as const,
  gpuLayers: 0,
  threads: 1,
  contextSize: 2048,
};
const WARM_UP_LINE = /^warm-up completion: \d+ ms( \(cut short by a request\))?$/;

describe('warm-up after a load', { skip: fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs`' }, () => {
  const clients: WorkerClient[] = [];
  after(() => {
    for (const c of clients) c.dispose();
  });
  const start = () => {
    const events: { at: number; text: string }[] = [];
    const client = new WorkerClient({ workerPath: WORKER, log: (_level, message) => events.push({ at: performance.now(), text: message }) });
    clients.push(client);
    return { client, events };
  };
  const warmUpLogged = async (events: { at: number; text: string }[]) => {
    const deadline = Date.now() + 20_000;
    while (!events.some((e) => e.text.startsWith('warm-up completion')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return events.find((e) => e.text.startsWith('warm-up completion'));
  };

  it('runs one short completion once the load has answered, not counted as a completion', async () => {
    const { client, events } = start();
    await client.request('load', { models, speculation: DEFAULT_SPECULATION });
    const answeredAt = performance.now();
    const warm = await warmUpLogged(events);
    assert.ok(warm, `no warm-up logged: ${events.map((e) => e.text).join(' | ')}`);
    assert.match(warm.text, WARM_UP_LINE);
    assert.ok(warm.at >= answeredAt, 'the load answered before the warm-up ended');
    assert.equal((await client.request('diagnostics', {})).completions, 0);
  });

  it('gives way to a request sent right after the load', async () => {
    const { client, events } = start();
    await client.request('load', { models, speculation: DEFAULT_SPECULATION });
    const r = await client.request('complete', { request: { prefix: 'function add(a, b) {\n  return', suffix: '\n}\n', maxTokens: 8, mode: 'hybrid' } });
    assert.notEqual(r.stats.stopReason, 'abort');
    // The request aborted the warm-up at its next step, or came after it had ended.
    const warm = await warmUpLogged(events);
    assert.ok(warm && WARM_UP_LINE.test(warm.text));
    assert.equal((await client.request('diagnostics', {})).completions, 1);
  });
});
