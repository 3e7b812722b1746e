// npm run bench:long-context [-- --targets v3-long,big-long] [--contexts 1024,4096,16384] [--windows 256,512] [--threads N] [--gpu X]
//
// Issue 16, the cost side of self-speculation with a sparse KV (MagicDec / StreamingLLM): the
// target itself, attending only to a window of W tokens (attention sinks + the most recent ones),
// as the draft of the same target at the full context C. It can only pay where one token on the
// window costs well under one token on the full context; this measures V1(W) / V1(C), and the
// verify batch V6(C), on this machine, before anything is built. Forward passes only (the native
// decode calls, bench/nativeClock.ts), at each depth, sizes interleaved, medians of 9 rounds.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_SPECULATION, InferenceSession } from '../src/inference/inferenceSession';
import type { ModelSettings } from '../src/shared/types';
import { clockNative, measureForwardPass } from './nativeClock';
import { benchTarget } from './targets';

const ROOT = path.resolve(__dirname, '..');
const argv = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const list = (name: string, fallback: string) => arg(name, fallback).split(',').filter(Boolean);
const targets = list('targets', 'v3-long,big-long');
const contexts = list('contexts', '1024,4096,16384').map(Number);
const windows = list('windows', '256,512').map(Number);
const threads = Number(arg('threads', '1'));
const gpu = arg('gpu', 'auto') as ModelSettings['gpu'];
const VERIFY = 6;
const fmt = (x: number, d = 2) => x.toFixed(d);

interface Row {
  target: string;
  context: number;
  v1: number;
  v6: number;
  window: Record<number, number>;
  backend: string;
}

async function measure(name: string): Promise<Row[]> {
  const target = await benchTarget(name);
  const rows: Row[] = [];
  for (const context of contexts) {
    const started = Date.now();
    const session = await InferenceSession.load({ targetModel: target.file, draftModel: '', gpu, gpuLayers: 'auto', threads, contextSize: context + 64 }, DEFAULT_SPECULATION, () => undefined);
    const clock = clockNative(session);
    const full = await measureForwardPass(session, clock, [1, VERIFY], context);
    const window: Record<number, number> = {};
    for (const w of windows) window[w] = (await measureForwardPass(session, clock, [1], w))[1];
    rows.push({ target: name, context, v1: full[1], v6: full[VERIFY], window, backend: session.info.backend });
    process.stderr.write(`${name} at ${context}: V1 ${fmt(full[1], 3)} ms (${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
    await session.dispose();
  }
  return rows;
}

async function main() {
  const started = Date.now();
  const rows: Row[] = [];
  for (const name of targets) rows.push(...(await measure(name)));
  const md = [
    '# Self-speculation on a KV window: the cost side (issue 16)',
    '',
    `Backend ${rows[0]?.backend ?? '-'}, ${threads} thread(s), ${os.cpus()[0]?.model ?? 'CPU'}. Forward pass of one token (V1) and of ${VERIFY} (V${VERIFY}, the verify batch) at the full context C; one token at a window of W tokens, relative to V1(C). A window draft can pay only where that ratio is well under 0.5.`,
    '',
    `| target | C | V1(C) ms | V${VERIFY}(C) / V1(C) | ${windows.map((w) => `V1(W=${w}) / V1(C)`).join(' | ')} |`,
    `|---|---|---|---|${windows.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.target} | ${r.context} | ${fmt(r.v1, 3)} | ${fmt(r.v6 / r.v1)} | ${windows.map((w) => fmt(r.window[w] / r.v1)).join(' | ')} |`),
    '',
    `${((Date.now() - started) / 1000).toFixed(0)} s.`,
  ];
  const dir = path.join(ROOT, 'bench', 'results', `${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}-long-context`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'long-context.md'), `${md.join('\n')}\n`);
  fs.writeFileSync(path.join(dir, 'long-context.json'), JSON.stringify({ threads, gpu, rows }, null, 2));
  process.stdout.write(`${md.join('\n')}\n\nsaved ${path.relative(ROOT, dir)}\n`);
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    process.exit(1);
  },
);
