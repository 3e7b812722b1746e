// Issue #27 item 5: Ctrl+C on scripts/start.sh left the shared inference worker running for its
// 10-minute idle time (~300 MB with the demo pair). start.sh now runs the demo's worker in a
// directory of its own and, on exit, stops it with scripts/stop-shared-worker.sh: tested here on a
// real shared worker (dist/worker.js) whose window went away.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { DEFAULT_SPECULATION } from '../../src/settings/declaredSettings';
import { embeddedPairPaths } from '../../src/models/embedded';
import { sharedWorkerAddress } from '../../src/worker/sharedWorker';
import { WorkerClient } from '../../src/worker/workerClient';
import { isAlive } from '../support/processes';

const ROOT = path.resolve(__dirname, '../..');
const WORKER = path.join(ROOT, 'dist/worker.js');
const TINY = embeddedPairPaths(ROOT, 'tiny');
// Asynchronous: this process is the worker's parent here and must reap it while the script waits.
const stopScript = async (dir: string) => (await promisify(execFile)('bash', [path.join(ROOT, 'scripts/stop-shared-worker.sh'), dir], { encoding: 'utf8' })).stdout;

const reaped = async (pid: number) => {
  const deadline = Date.now() + 2000;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(isAlive(pid), false);
};

describe('scripts/stop-shared-worker.sh', { skip: fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs`' }, () => {
  it('stops the shared worker that outlives its window, and removes its socket', async () => {
    const dir = path.join(ROOT, 'test-output', `stop-worker-${process.pid}`);
    fs.rmSync(dir, { recursive: true, force: true });
    const address = sharedWorkerAddress(WORKER, dir);
    const client = new WorkerClient({ workerPath: WORKER, shared: address });
    try {
      // The demo's models: a worker keeps them for a window that comes back (one with none exits with its last window).
      await client.request('load', { models: { targetModel: TINY.target, draftModel: TINY.draft, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 256 }, speculation: DEFAULT_SPECULATION });
      const pid = client.pid;
      assert.ok(pid && isAlive(pid));
      // The window goes away (code-server stopped): the worker stays, waiting for a reload.
      client.dispose();
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.ok(isAlive(pid), 'the shared worker outlives its last window');
      const started = Date.now();
      const out = await stopScript(dir);
      assert.match(out, new RegExp(`stopped the shared inference worker \\(pid ${pid}\\)`));
      // Stopped: a zombie the script counts as such (this process, its parent, reaps it a moment later).
      await reaped(pid);
      // It stopped on the SIGTERM (no 5 s wait for the SIGKILL) and cleaned up after itself.
      assert.ok(Date.now() - started < 4000, `took ${Date.now() - started} ms`);
      assert.equal(fs.existsSync(address.socketPath), false);
      assert.equal(fs.existsSync(`${address.socketPath}.lock`), false);
    } finally {
      client.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops a worker that still has a client, and does nothing where none runs', async () => {
    const dir = path.join(ROOT, 'test-output', `stop-worker-busy-${process.pid}`);
    fs.rmSync(dir, { recursive: true, force: true });
    const client = new WorkerClient({ workerPath: WORKER, shared: sharedWorkerAddress(WORKER, dir) });
    try {
      await client.start();
      const pid = client.pid!;
      const started = Date.now();
      await stopScript(dir);
      // The script counts a zombie as stopped; this process, its parent, reaps it a moment later.
      await reaped(pid);
      assert.ok(Date.now() - started < 4000, `a SIGTERM stops it even with a window connected (an extension host code-server left behind); took ${Date.now() - started} ms`);
      assert.equal(await stopScript(dir), '');
    } finally {
      client.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
