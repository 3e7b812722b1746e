// CI-size soak: a 20 s typing storm (20 keys/s, debounce 0) on the embedded pair through the real worker
// client and dist/worker.js (built by `node esbuild.mjs`). The longer storm with a kill -9 loop is
// `npm run soak` (test/soak/longSoak.ts).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import { embeddedPairPaths } from '../../src/models/embedded';
import { WorkerClient } from '../../src/worker/workerClient';
import { describeStorm, percentile, typingFixture, typingStorm } from '../support/typingStorm';

const ROOT = path.resolve(__dirname, '../..');
const WORKER = path.join(ROOT, 'dist/worker.js');
const STORM_MS = 20_000;
/** Generous (a cancel lands within a 32-token prompt chunk or one verify step); the point is to catch a cancel that waits for a whole generation. */
const CANCEL_TO_STOP_P95_MS = 100;
/**
 * RSS growth allowed from the end of the warm-up (5 s) to the end (20 s). The worker's heap still
 * grows to its working size then (measured +11 MB; it levels off after ~45 s, see `npm run soak`),
 * so this catches gross leaks only, e.g. a leaked context or a document index kept per request.
 */
const RSS_GROWTH_MB = 32;

describe('soak: typing storm on the embedded pair', { skip: fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs`' }, () => {
  let client: WorkerClient;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  before(async () => {
    process.on('unhandledRejection', onUnhandled);
    client = new WorkerClient({ workerPath: WORKER });
    // The default pair, not the tiny one: with a keystroke costing one prompt token the tiny pair
    // writes 128 tokens in ~20 ms, within the 50 ms between keys, and a storm would cancel nothing.
    const pair = embeddedPairPaths(ROOT);
    await client.request('load', {
      models: { targetModel: pair.target, draftModel: pair.draft, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 2048 },
      speculation: DEFAULT_SPECULATION,
    });
  });
  after(() => {
    client.dispose();
    process.off('unhandledRejection', onUnhandled);
  });

  it('one generation at a time, prompt cancels, flat memory, no unhandled rejection', async () => {
    const source = (file: string) => fs.readFileSync(typingFixture(file), 'utf8');
    const figures = await typingStorm({
      client,
      text: source('completionEngine.ts'),
      durationMs: STORM_MS,
      keyIntervalMs: 50,
      warmupMs: 5000,
      // Completions long enough to outlast a keystroke.
      maxTokens: 128,
      stopAtBlockEnd: false,
      openDocuments: { 'file:///storm/a.ts': source('workerClient.ts'), 'file:///storm/b.ts': source('ngramIndex.ts') },
      // Every fifth keystroke an accept: its request goes as a prefetch, which the next keystroke stops.
      prefetchEvery: 5,
    });
    console.log(describeStorm(figures, STORM_MS));
    assert.deepEqual([...figures.failures], [], 'no request failed');
    assert.deepEqual(unhandled, [], 'no unhandled rejection in the host');
    assert.ok(figures.keystrokes >= 200, `${figures.keystrokes} keystrokes`);
    assert.ok(figures.completed > 0, 'some completions ran to their end');
    assert.ok(figures.prefetches > 0 && figures.prefetchesRefused < figures.prefetches, `prefetches ran among the keystrokes (${figures.prefetches} sent, ${figures.prefetchesRefused} refused)`);
    assert.equal(figures.maxConcurrentGenerations, 1, 'at most one generation in flight');
    const p95 = percentile(figures.cancelToStopMs, 95);
    assert.ok(figures.cancelToStopMs.length > 0 && p95 <= CANCEL_TO_STOP_P95_MS, `cancel -> stop p95 ${p95.toFixed(1)} ms`);
    const growth = figures.rssEndMb! - figures.rssAfterWarmupMb!;
    assert.ok(growth <= RSS_GROWTH_MB, `worker RSS grew ${growth.toFixed(1)} MB after warm-up`);
  });
});
