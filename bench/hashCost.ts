// What verifying a download costs (issue #28): sha256 of a model-sized file the way the worker
// hashes a finished download (src/inference/modelVerification.ts sha256File: streamed, 1 MiB reads),
// and how long the event loop waits meanwhile (the worker keeps serving completions while it hashes).
//
//   node --import tsx bench/hashCost.ts [--gb 2] [--file path]
//
// Without --file it writes a file of --gb GB (a 16 MiB random block repeated: incompressible for
// the hash, cheap to make) under test-output/, hashes it twice (the first read right after the
// write, as after a download, so mostly from the page cache), and deletes it.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { sha256File } from '../src/inference/modelVerification';

const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
};

async function main(): Promise<void> {
  const gb = Number(arg('gb') ?? 2);
  let file = arg('file');
  const generated = !file;
  if (!file) {
    file = path.resolve(__dirname, '../test-output/hash-cost.bin');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const block = Buffer.alloc(16 << 20);
    for (let i = 0; i < block.length; i += 65536) block.set(createHash('sha256').update(String(i)).digest().subarray(0, 32), i);
    const fd = fs.openSync(file, 'w');
    for (let written = 0; written < gb * 1e9; written += block.length) fs.writeSync(fd, block);
    fs.closeSync(fd);
  }
  const size = fs.statSync(file).size;
  // The same wait with nothing to do: what the machine's load alone does to the event loop.
  const idle = monitorEventLoopDelay({ resolution: 5 });
  idle.enable();
  await new Promise((r) => setTimeout(r, 3000));
  idle.disable();
  console.log(JSON.stringify({ idleEventLoopDelayMs: { p50: +(idle.percentile(50) / 1e6).toFixed(1), p99: +(idle.percentile(99) / 1e6).toFixed(1), max: +(idle.max / 1e6).toFixed(1) } }));
  try {
    for (const run of [1, 2]) {
      const delay = monitorEventLoopDelay({ resolution: 5 });
      delay.enable();
      const started = performance.now();
      const digest = await sha256File(file);
      const ms = performance.now() - started;
      delay.disable();
      console.log(
        JSON.stringify({
          run,
          bytes: size,
          seconds: +(ms / 1000).toFixed(2),
          mbPerSecond: Math.round(size / 1e6 / (ms / 1000)),
          secondsPer2GB: +((2e9 / size) * (ms / 1000)).toFixed(2),
          eventLoopDelayMs: { p50: +(delay.percentile(50) / 1e6).toFixed(1), p99: +(delay.percentile(99) / 1e6).toFixed(1), max: +(delay.max / 1e6).toFixed(1) },
          sha256: digest.slice(0, 12),
        }),
      );
    }
  } finally {
    if (generated) fs.rmSync(file, { force: true });
  }
}

void main();
