// Regime 5: cold start as the extension does it, without an editor around it: fork the bundled
// worker (dist/worker.js), hello, load the pair, first completion. Where the time goes comes from
// the worker's own load timings (headers, llama.cpp binding, draft, target). "preload" is what the
// extension does: the worker starts loading the binding for the configured backend as soon as it
// runs, while the host is still sending the load request; "no preload" waits for that request.
// A second worker started while the first is alive stands for a second editor window.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CompletionRequest, LoadTimings } from '../src/shared/types';
import { DEFAULT_SPECULATION } from '../src/inference/inferenceSession';
import { WorkerClient } from '../src/worker/workerClient';
import { median } from './stats';

export interface StartupRun {
  variant: 'preload' | 'no preload' | 'second window';
  /** Fork to the worker's answer to hello. */
  helloMs: number;
  /** Fork to models loaded (what "ready after activation" is, less the host's own activation work). */
  readyMs: number;
  /** Fork to the first completion's text. */
  firstCompletionMs: number;
  load: LoadTimings;
}

const REQUEST: CompletionRequest = { prefix: 'export function average(values: number[]): number {\n  if (values.length === 0) ', suffix: '\n}\n', maxTokens: 16, mode: 'hybrid' };

async function startOnce(workerPath: string, pair: { target: string; draft: string }, threads: number, preload: boolean) {
  const t0 = performance.now();
  const client = new WorkerClient({ workerPath, env: preload ? { DRAFTLINE_PRELOAD_GPU: 'auto' } : {} });
  await client.start();
  const helloMs = performance.now() - t0;
  const info = await client.request('load', {
    models: { targetModel: pair.target, draftModel: pair.draft, gpu: 'auto', gpuLayers: 'auto', threads, contextSize: 2048 },
    speculation: DEFAULT_SPECULATION,
  });
  const readyMs = performance.now() - t0;
  await client.request('complete', { request: REQUEST });
  const firstCompletionMs = performance.now() - t0;
  return { client, run: { helloMs, readyMs, firstCompletionMs, load: info.loadTimings! } };
}

export async function regimeStartup(root: string, pair: { target: string; draft: string }, threads: number, repeats: number) {
  const workerPath = path.join(root, 'dist/worker.js');
  if (!fs.existsSync(workerPath)) throw new Error(`${workerPath} is missing: run \`node esbuild.mjs\` first`);
  const runs: StartupRun[] = [];
  for (let i = 0; i < repeats; i++) {
    // Alternate, so the page cache and the machine's state favour neither.
    for (const preload of i % 2 ? [true, false] : [false, true]) {
      const { client, run } = await startOnce(workerPath, pair, threads, preload);
      runs.push({ variant: preload ? 'preload' : 'no preload', ...run });
      if (preload) {
        const second = await startOnce(workerPath, pair, threads, true);
        runs.push({ variant: 'second window', ...second.run });
        second.client.dispose();
      }
      client.dispose();
    }
  }
  const variants = ['no preload', 'preload', 'second window'] as const;
  const rows = variants.map((variant) => {
    const rs = runs.filter((r) => r.variant === variant);
    const m = (f: (r: StartupRun) => number | undefined) => median(rs.map(f).filter((x): x is number => x !== undefined));
    return {
      variant,
      runs: rs.length,
      helloMs: m((r) => r.helloMs),
      readyMs: m((r) => r.readyMs),
      firstCompletionMs: m((r) => r.firstCompletionMs),
      headersMs: m((r) => r.load.inspectMs),
      bindingWaitMs: m((r) => r.load.runtimeMs),
      libraryAtMs: m((r) => r.load.libraryAtMs),
      bindingAtMs: m((r) => r.load.bindingAtMs),
      draftMs: m((r) => r.load.draftMs),
      targetMs: m((r) => r.load.targetMs),
    };
  });
  return { rows, runs };
}
