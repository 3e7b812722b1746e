// npm run bench:sequences [-- --targets v3,1.5b] [--prompts 500,1000] [--threads N] [--rounds 15]
//
// Issue 40's measurements of KV sequences (one per prompt state), on this machine:
// 1. memory: the KV bytes of one sequence, computed from the model's shape (what the budget uses),
//    node-llama-cpp's own estimate, and measured (the process's RSS for a context of 4 sequences
//    against one of 1, per extra sequence);
// 2. batching two windows: one decode call that carries one step of each of two sequences, against
//    the two steps one after the other (llama.cpp evaluates several sequences in one batch);
// 3. restoring an evicted prompt: a sequence's state saved to a file and loaded back
//    (LlamaContextSequence.saveStateToFile / loadStateFromFile), against evaluating the prompt again.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_SPECULATION } from '../src/inference/inferenceSession';
import { loadBenchSession } from './decodePath';
import { LlamaSequenceEvaluator } from '../src/llama/llamaSequenceEvaluator';
import type { LlamaContextSequence } from '../src/llama/llamaTypes';
import { createContext, disposeContext } from '../src/inference/loadedPair';
import { cellsPerSequence, kvBytesPerToken } from '../src/inference/sequenceBudget';
import type { ModelSettings } from '../src/shared/settings';
import type { Token } from '../src/shared/decoding';
import { runBenchmark, saveReport } from './savedRun';
import { benchTarget } from './targets';

const argv = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1]! : fallback;
};
const targets = arg('targets', 'v3,1.5b').split(',').filter(Boolean);
const promptLengths = arg('prompts', '500,1000,2000').split(',').map(Number);
const threads = Number(arg('threads', '2'));
const rounds = Number(arg('rounds', '15'));
const gpu = arg('gpu', 'cpu') as ModelSettings['gpu'];
const MB = 1e6;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Row {
  target: string;
  contextSize: number;
  bytesPerSequence: { computed: number; estimated: number; measured: number };
  /** One step of each of two sequences: in one decode call, and one after the other (ms, medians). */
  twoSteps: { together: number; apart: number };
  /** Per prompt length: evaluating it again vs loading its saved state (ms), and the state file's size. */
  restore: { tokens: number; evaluateMs: number; saveMs: number; loadMs: number; fileBytes: number }[];
  backend: string;
}

function tokens(count: number, vocab: number, from = 0): Token[] {
  const span = Math.max(2, Math.min(vocab, 4096) - 1);
  return Array.from({ length: count }, (_, i) => ((from + i * 7) % span) + 1);
}

async function measure(name: string): Promise<Row> {
  const target = await benchTarget(name);
  const session = await loadBenchSession(
    { targetModel: target.file, draftModel: '', gpu, gpuLayers: gpu === 'cpu' ? 0 : 'auto', threads, contextSize: 2048, kvSequences: 1 },
    DEFAULT_SPECULATION,
    () => undefined,
  );
  try {
    const model = session.target.model;
    const info = session.target.info;
    const contextSize = session.target.context.contextSize;
    const vocab = info.vocabSize;
    const base = { contextSize, threads, batchSize: Math.min(contextSize, 512), flashAttention: session.target.attention.flashAttention };
    // 1. Memory per sequence.
    const rssOf = async (sequences: number) => {
      const before = process.memoryUsage().rss;
      const created = await createContext(model, { ...base, sequences });
      const grown = process.memoryUsage().rss - before;
      await disposeContext(created);
      return grown;
    };
    const one = await rssOf(1);
    const four = await rssOf(4);
    const estimate = (sequences: number) => model.fileInsights.estimateContextResourceRequirements({ contextSize, modelGpuLayers: 0, sequences, batchSize: base.batchSize }).cpuRam;
    const bytesPerSequence = {
      computed: kvBytesPerToken(info) * cellsPerSequence(contextSize),
      estimated: (estimate(4) - estimate(1)) / 3,
      measured: (four - one) / 3,
    };
    // 2 and 3 on a context of two sequences.
    const created = await createContext(model, { ...base, sequences: 2 });
    try {
      const sequences: LlamaContextSequence[] = [created.context.getSequence(), created.context.getSequence()];
      const evaluators = sequences.map((s) => new LlamaSequenceEvaluator(s, model));
      const depth = Math.min(400, contextSize - rounds * 4 - 8);
      for (const [i, e] of evaluators.entries()) {
        const prompt = tokens(depth, vocab, i * 13);
        for (let at = 0; at < prompt.length; at += base.batchSize) await e.append(prompt.slice(at, at + base.batchSize), at + base.batchSize >= prompt.length ? 1 : 0);
      }
      const together: number[] = [];
      const apart: number[] = [];
      for (let r = 0; r < rounds; r++) {
        let t = performance.now();
        await Promise.all(evaluators.map((e, i) => e.append(tokens(1, vocab, r * 3 + i), 1)));
        together.push(performance.now() - t);
        t = performance.now();
        for (const [i, e] of evaluators.entries()) await e.append(tokens(1, vocab, r * 5 + i), 1);
        apart.push(performance.now() - t);
      }
      const restore: Row['restore'] = [];
      const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-state-')), 'state.bin');
      const evaluator = evaluators[0]!;
      for (const length of promptLengths.filter((n) => n < contextSize - 8)) {
        const prompt = tokens(length, vocab, length);
        await evaluator.truncate(0);
        let t = performance.now();
        for (let at = 0; at < prompt.length; at += base.batchSize) await evaluator.append(prompt.slice(at, at + base.batchSize), at + base.batchSize >= prompt.length ? 1 : 0);
        const evaluateMs = performance.now() - t;
        t = performance.now();
        const { fileSize } = await sequences[0]!.saveStateToFile(file);
        const saveMs = performance.now() - t;
        // Loaded into the other sequence, emptied first (as a sequence taken for an evicted prompt would be).
        await sequences[1]!.clearHistory();
        t = performance.now();
        await sequences[1]!.loadStateFromFile(file, { acceptRisk: true });
        const loadMs = performance.now() - t;
        if (sequences[1]!.contextTokens.length !== length) throw new Error(`restored ${sequences[1]!.contextTokens.length} tokens, not ${length}`);
        restore.push({ tokens: length, evaluateMs, saveMs, loadMs, fileBytes: fileSize });
      }
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
      for (const e of evaluators) await e.dispose();
      return { target: name, contextSize, bytesPerSequence, twoSteps: { together: median(together), apart: median(apart) }, restore, backend: session.info.backend };
    } finally {
      await disposeContext(created);
    }
  } finally {
    await session.dispose();
  }
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (const name of targets) {
    process.stderr.write(`measuring ${name}\n`);
    rows.push(await measure(name));
  }
  const f = (x: number, d = 1) => x.toFixed(d);
  const md = [
    '# KV sequences (issue 40)',
    '',
    `Backend ${rows[0]?.backend ?? '-'}, ${threads} thread(s), ${os.cpus()[0]?.model ?? 'CPU'}; medians of ${rounds} rounds.`,
    '',
    '## Memory of one sequence (context size × KV bytes per token)',
    '',
    '| target | context | computed (the budget) | node-llama-cpp estimate | measured (RSS, 4 sequences vs 1) |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.target} | ${r.contextSize} | ${f(r.bytesPerSequence.computed / MB)} MB | ${f(r.bytesPerSequence.estimated / MB)} MB | ${f(r.bytesPerSequence.measured / MB)} MB |`),
    '',
    '## One step of each of two windows: one decode call, or one after the other',
    '',
    '| target | together (ms) | apart (ms) | together / apart |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${r.target} | ${f(r.twoSteps.together, 2)} | ${f(r.twoSteps.apart, 2)} | ${f(r.twoSteps.together / r.twoSteps.apart, 2)} |`),
    '',
    '## An evicted prompt: evaluated again, or its saved state loaded back',
    '',
    '| target | prompt tokens | evaluate (ms) | save (ms) | load (ms) | state file | load / evaluate |',
    '|---|---|---|---|---|---|---|',
    ...rows.flatMap((r) => r.restore.map((x) => `| ${r.target} | ${x.tokens} | ${f(x.evaluateMs)} | ${f(x.saveMs)} | ${f(x.loadMs)} | ${f(x.fileBytes / MB)} MB | ${f(x.loadMs / x.evaluateMs, 3)} |`)),
  ];
  saveReport('kv-sequences', 'kv-sequences', md, { threads, rounds, gpu, rows });
}

runBenchmark(main);
