// The inference worker as the integration tests drive it: the bundled dist/worker.js (`node
// esbuild.mjs` builds it) with the tiny embedded pair on one CPU thread, through the real
// WorkerClient: a private worker for the suite, or windows of a shared worker of the test's own.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before } from 'node:test';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import { embeddedPairPaths } from '../../src/models/embedded';
import type { ModelSettings } from '../../src/shared/settings';
import { isolatedAddress, sharedWorkerAddress } from '../../src/worker/sharedWorker';
import { WorkerClient } from '../../src/worker/workerClient';
import { removeSocketDirs, socketDir } from './socketDir';

export const ROOT = path.resolve(__dirname, '../..');
export const WORKER = path.join(ROOT, 'dist/worker.js');
/** The suites' skip reason without a built worker. */
export const workerMissing = fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs`';

const TINY = embeddedPairPaths(ROOT, 'tiny');
/** The tiny pair on the CPU, one thread: fast, and the same on every machine. */
export const tinyModels = (contextSize = 1024): ModelSettings => ({ targetModel: TINY.target, draftModel: TINY.draft, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize });

/** A private worker with the tiny pair loaded before the suite (no warm-up) and stopped after it; call it inside the describe(). */
export function loadedWorker(): { readonly client: WorkerClient } {
  let client: WorkerClient | undefined;
  before(async () => {
    client = new WorkerClient({ workerPath: WORKER, env: { DRAFTLINE_WARM_UP: '0' } });
    await client.request('load', { models: tinyModels(), speculation: DEFAULT_SPECULATION });
  });
  after(() => client?.dispose());
  return {
    get client() {
      if (!client) throw new Error('the worker has not started (use it inside its describe)');
      return client;
    },
  };
}

/**
 * Windows of shared workers of the suite's own: `windowsOf(label, pair)` gives a function that
 * connects one more window (no warm-up, and the worker exits with its last window) to the worker
 * serving `pair` in a socket directory named after `label`. Every window is closed, and the sockets
 * removed, after the suite; call it inside the describe().
 */
export function sharedWindows(): { windowsOf(label: string, pair: string): () => WorkerClient } {
  const clients: WorkerClient[] = [];
  after(() => {
    for (const c of clients) c.dispose();
    removeSocketDirs();
  });
  return {
    windowsOf(label, pair) {
      const address = isolatedAddress(sharedWorkerAddress(WORKER, socketDir(label)), pair);
      return () => {
        const c = new WorkerClient({ workerPath: WORKER, shared: address, env: { DRAFTLINE_SHARED_IDLE_MS: '0', DRAFTLINE_WARM_UP: '0' } });
        clients.push(c);
        return c;
      };
    },
  };
}
