// `npm run soak`: the long typing storm and a kill -9 loop against the real worker (dist/worker.js,
// built first by `node esbuild.mjs`), printing the reliability figures of the README. Not in CI.
//
//   npm run soak                          # v3 pair (the default models), 5 min storm, then 6 kills
//   npm run soak -- --pair tiny --minutes 2 --kills 4
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import { embeddedPairPaths, type EmbeddedPairName } from '../../src/models/embedded';
import { WorkerClient } from '../../src/worker/workerClient';
import { describeStorm, percentile, typingStorm } from '../support/typingStorm';

const ROOT = path.resolve(__dirname, '../..');
const WORKER = path.join(ROOT, 'dist/worker.js');
const { values: args } = parseArgs({
  options: {
    pair: { type: 'string', default: 'v3' },
    minutes: { type: 'string', default: '5' },
    kills: { type: 'string', default: '6' },
    threads: { type: 'string', default: '1' },
  },
});

async function main(): Promise<void> {
  if (!fs.existsSync(WORKER)) throw new Error('dist/worker.js is missing: run `node esbuild.mjs` first');
  const pair = embeddedPairPaths(ROOT, args.pair as EmbeddedPairName);
  const models = { targetModel: pair.target, draftModel: pair.draft, gpu: 'cpu' as const, gpuLayers: 0, threads: Number(args.threads), contextSize: 2048 };
  const source = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
  const text = source('src/engine/completionEngine.ts') + source('src/worker/workerClient.ts');
  const openDocuments = { 'file:///soak/a.ts': source('src/ngram/ngramIndex.ts'), 'file:///soak/b.ts': source('src/inference/inferenceSession.ts') };
  const unhandled: unknown[] = [];
  process.on('unhandledRejection', (reason) => unhandled.push(reason));

  const crashes: { at: number; announcedMs: number }[] = [];
  let restarted: () => void = () => undefined;
  const client = new WorkerClient({
    workerPath: WORKER,
    onCrash: (_description, restartInMs) => crashes.push({ at: performance.now(), announcedMs: restartInMs }),
    // As the extension does: a restarted worker loads the models again.
    onRestart: () =>
      void client.request('load', { models, speculation: DEFAULT_SPECULATION }).then(
        () => restarted(),
        () => undefined,
      ),
  });
  const hostRssStart = process.memoryUsage().rss / 2 ** 20;
  console.log(`soak: ${args.pair} pair, ${args.threads} thread(s), ${args.minutes} min storm at 20 keys/s (debounce 0), then ${args.kills} kill -9`);
  await client.request('load', { models, speculation: DEFAULT_SPECULATION });

  // ---- the storm
  const stormMs = Number(args.minutes) * 60_000;
  const storm = await typingStorm({ client, text, durationMs: stormMs, keyIntervalMs: 50, warmupMs: Math.min(60_000, stormMs / 3), openDocuments });
  console.log('\n## typing storm');
  console.log(describeStorm(storm, stormMs));

  // ---- kill -9 while generating, in a row (the backoff doubles), recovery = next completed request
  console.log('\n## kill -9 loop');
  const kills: { noticeMs: number; announcedMs: number; recoveryMs: number | null }[] = [];
  for (let k = 0; k < Number(args.kills); k++) {
    let killedAt = 0;
    let recoveredAt: number | null = null;
    let killed = false;
    const back = new Promise<void>((resolve) => (restarted = resolve));
    const crashCount = crashes.length;
    await typingStorm({
      client,
      text,
      // Long enough for the backoff (1 s, doubling with each kill in a row, at most 30 s) and a reload.
      durationMs: 2000 + Math.min(30_000, 1000 * 2 ** k) + 10_000,
      keyIntervalMs: 50,
      warmupMs: Infinity,
      onTick: (elapsedMs) => {
        // Two seconds into typing a generation is running: kill the worker under it.
        if (!killed && elapsedMs >= 2000 && client.pid) {
          killed = true;
          killedAt = performance.now();
          process.kill(client.pid, 'SIGKILL');
        }
      },
      onCompleted: (at) => {
        if (killed && recoveredAt === null && at > killedAt && crashes.length > crashCount) recoveredAt = at;
      },
    }).catch(() => undefined);
    await Promise.race([back, new Promise((r) => setTimeout(r, 5000))]);
    const crash = crashes[crashCount];
    const kill = { noticeMs: crash ? crash.at - killedAt : NaN, announcedMs: crash?.announcedMs ?? NaN, recoveryMs: recoveredAt === null ? null : recoveredAt - killedAt };
    kills.push(kill);
    console.log(
      `kill ${k + 1}: crash noticed in ${kill.noticeMs.toFixed(0)} ms, restart announced in ${kill.announcedMs} ms, first completion again after ${kill.recoveryMs === null ? 'none in time' : `${(kill.recoveryMs / 1000).toFixed(1)} s`}`,
    );
  }
  const notice = kills.map((k) => k.noticeMs);
  const recovered = kills.flatMap((k) => (k.recoveryMs === null ? [] : [k.recoveryMs - k.announcedMs]));
  console.log(
    `crash notice: max ${Math.max(...notice).toFixed(0)} ms; recovery beyond the announced wait: p50 ${(percentile(recovered, 50) / 1000).toFixed(1)} s, max ${(Math.max(...recovered) / 1000).toFixed(1)} s`,
  );
  const hostRssEnd = process.memoryUsage().rss / 2 ** 20;
  console.log(`\nhost process: alive, RSS ${hostRssStart.toFixed(0)} -> ${hostRssEnd.toFixed(0)} MB; unhandled rejections: ${unhandled.length}`);
  client.dispose();
  if (unhandled.length > 0 || storm.maxConcurrentGenerations > 1 || recovered.length < kills.length) process.exitCode = 1;
}

main().catch((error: Error) => {
  console.error(error);
  process.exit(1);
});
