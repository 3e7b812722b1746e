// npm run bench:long-context [-- --targets v3-long,big-long] [--contexts 1024,4096,16384] [--windows 256,512] [--acceptance 0.72] [--threads N] [--gpu X]
//
// Issue 16, the cost side of self-speculation with a sparse KV (MagicDec / StreamingLLM): the
// target itself, attending only to a window of W tokens (attention sinks + the most recent ones),
// as the draft of the same target at the full context C. It can only pay where one token on the
// window costs well under one token on the full context; this measures V1(W) / V1(C), and the
// verify batches V2..V6(C), on this machine. Forward passes only (the native decode calls,
// bench/nativeClock.ts), at each depth, sizes interleaved, medians of 9 rounds. With a per-token
// acceptance a (regime 8 of npm run bench measures it for a window on the v3 target), it projects
// the best speedup over plain: max over k of E(a, k) / (V(k+1)(C) / V1(C) + k V1(W) / V1(C)).
import * as os from 'node:os';
import { DEFAULT_SPECULATION } from '../src/inference/inferenceSession';
import { loadBenchSession } from './decodePath';
import type { ModelSettings } from '../src/shared/settings';
import { clockNative, measureForwardPass } from './nativeClock';
import { runBenchmark, saveReport } from './savedRun';
import { benchTarget } from './targets';

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
const VERIFY_SIZES = [1, 2, 3, 4, 5, 6];
const acceptance = Number(arg('acceptance', '0.72'));
const fmt = (x: number | null, d = 2) => (x === null ? '-' : x.toFixed(d));

interface Row {
  target: string;
  context: number;
  /** Forward pass of b tokens at the full context, ms. */
  v: Record<number, number>;
  window: Record<number, number>;
  backend: string;
}

/** Expected tokens per verify step with k drafted tokens each kept with probability a. */
const expectedTokens = (a: number, k: number) => (a >= 1 ? k + 1 : (1 - a ** (k + 1)) / (1 - a));

/** The best projected speedup of a window draft over plain at this context and acceptance, and its k. */
function projection(r: Row, w: number, a = acceptance): { speedup: number; k: number } {
  let best = { speedup: 1, k: 0 };
  for (let k = 1; k + 1 <= Math.max(...VERIFY_SIZES); k++) {
    const speedup = expectedTokens(a, k) / (r.v[k + 1] / r.v[1] + (k * r.window[w]) / r.v[1]);
    if (speedup > best.speedup) best = { speedup, k };
  }
  return best;
}

/** The lowest per-token acceptance at which some proposal length pays (null: not even at 0.99). */
function acceptanceNeeded(r: Row, w: number): number | null {
  if (projection(r, w, 0.99).k === 0) return null;
  let lo = 0;
  let hi = 0.99;
  for (let i = 0; i < 30; i++) {
    const mid = (lo + hi) / 2;
    if (projection(r, w, mid).k > 0) hi = mid;
    else lo = mid;
  }
  return hi;
}

async function measure(name: string): Promise<Row[]> {
  const target = await benchTarget(name);
  const rows: Row[] = [];
  for (const context of contexts) {
    const started = Date.now();
    const session = await loadBenchSession({ targetModel: target.file, draftModel: '', gpu, gpuLayers: 'auto', threads, contextSize: context + 64 }, DEFAULT_SPECULATION, () => undefined);
    const clock = clockNative(session);
    const full = await measureForwardPass(session, clock, VERIFY_SIZES, context);
    const window: Record<number, number> = {};
    for (const w of windows) window[w] = (await measureForwardPass(session, clock, [1], w))[1];
    rows.push({ target: name, context, v: full, window, backend: session.info.backend });
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
    `Backend ${rows[0]?.backend ?? '-'}, ${threads} thread(s), ${os.cpus()[0]?.model ?? 'CPU'}. Forward pass of one token (V1) and of b tokens (Vb, a verify batch) at the full context C; one token at a window of W tokens, relative to V1(C). Projected: the best speedup of a window draft over plain, max over k of E(a, k) / (V(k+1)(C) / V1(C) + k V1(W) / V1(C)), at a per-token acceptance a = ${acceptance}.`,
    '',
    `| target | C | V1(C) ms | ${VERIFY_SIZES.slice(1)
      .map((b) => `V${b}/V1`)
      .join(
        ' | ',
      )} | ${windows.map((w) => `V1(W=${w}) / V1(C)`).join(' | ')} | ${windows.map((w) => `projected, W=${w}`).join(' | ')} | ${windows.map((w) => `acceptance needed, W=${w}`).join(' | ')} |`,
    `|---|---|---|${VERIFY_SIZES.slice(1)
      .map(() => '---')
      .join('|')}|${windows.map(() => '---').join('|')}|${windows.map(() => '---').join('|')}|${windows.map(() => '---').join('|')}|`,
    ...rows.map((r) => {
      const projected = windows.map((w) => {
        const p = projection(r, w);
        return p.k ? `${fmt(p.speedup)}x (k=${p.k})` : 'none pays';
      });
      return `| ${r.target} | ${r.context} | ${fmt(r.v[1], 3)} | ${VERIFY_SIZES.slice(1)
        .map((b) => fmt(r.v[b] / r.v[1]))
        .join(' | ')} | ${windows.map((w) => fmt(r.window[w] / r.v[1])).join(' | ')} | ${projected.join(' | ')} | ${windows.map((w) => fmt(acceptanceNeeded(r, w))).join(' | ')} |`;
    }),
    '',
    `${((Date.now() - started) / 1000).toFixed(0)} s.`,
  ];
  saveReport('long-context', 'long-context', md, { threads, gpu, acceptance, rows });
}

runBenchmark(main);
