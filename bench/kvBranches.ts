// npm run bench:kv-branches [-- --targets v3,1.5b] [--prefix 1000] [--context 2048] [--threads N] [--rounds 15] [--gpu cpu|cuda]
//   [--flash-attention off|on|off,on] [--shapes off]
//
// The two ways a token tree's branches can share a cached prefix, measured:
// (a) branches in KV sequences of node-llama-cpp's context, which keeps one KV stream per sequence
//     (kv_unified off): a branch's sequence gets the prefix by llama_memory_seq_cp, which between two
//     streams copies the source's whole stream buffer at the next decode (llama-kv-cache.cpp), and
//     llama.cpp refuses a batch token that belongs to several sequences there, so a node shared by
//     several branches is evaluated once per branch;
// (b) Draftline's unified context (src/llama/unifiedContext.ts: one stream for all sequences), where
//     seq_cp adds a sequence id to the prefix's cells and a shared node is evaluated once.
// Measured: (a) seq_cp of a `prefix`-token sequence and the one-token decode that performs it, against
// that decode alone; (b) the seq_cp and seq_rm a tree step makes per path, and a tree step's batch
// against a chain's of the same size; and how many tokens a batch holds for the same trees each way
// (suffix-style trees over the regime-1 corpus: the continuations of every earlier occurrence of the
// text's last tokens, the best B − 1 nodes).
import * as os from 'node:os';
import type { LlamaModel } from '../src/llama/llamaTypes';
import { getRuntime } from '../src/inference/llamaRuntime';
import { cellsPerSequence, kvBytesPerToken } from '../src/inference/sequenceBudget';
import { LlamaSequenceEvaluator } from '../src/llama/llamaSequenceEvaluator';
import { loadNativeAddon, type NativeAddon } from '../src/llama/nativeAddon';
import { UnifiedContext } from '../src/llama/unifiedContext';
import type { ModelSettings } from '../src/shared/settings';
import type { Token } from '../src/shared/decoding';
import { addContinuations, nodeDepths, ScoredTrie, type TokenTree } from '../src/speculation/tokenTree';
import { inspectModelFile } from '../src/gguf/modelFileCheck';
import { ensureCorpus, sampleTasks, sourceFiles } from './corpus';
import { runBenchmark, saveReport } from './savedRun';
import { benchTarget } from './targets';

const argv = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1]! : fallback;
};
const targets = arg('targets', 'v3,1.5b').split(',').filter(Boolean);
const prefixLength = Number(arg('prefix', '1000'));
const contextSize = Number(arg('context', '2048'));
const threads = Number(arg('threads', '2'));
const rounds = Number(arg('rounds', '25'));
/** `--shapes off` leaves out the tree shapes' table (the same on any backend: a GPU's lease need not spend its time on it). */
const withShapes = arg('shapes', 'on') !== 'off';
const gpu = arg('gpu', 'cpu') as ModelSettings['gpu'];
/** Each target is measured once per setting: one stream's attention over the other sequences' cells may cost otherwise with flash attention (a GPU's usual choice). */
const flashAttentionSettings = arg('flash-attention', 'off')
  .split(',')
  .map((s) => {
    if (s !== 'on' && s !== 'off') throw new Error(`--flash-attention takes off, on or off,on, not ${s}`);
    return s === 'on';
  });
/** Other sequences (prompt states) beside the measured one in (b), each holding a prompt as long as its prefix. */
const CROWD = 3;
/** Paths a tree step's tree has in (b)'s timing (the suffix trees below have about as many at B = 16). */
const PATHS = 4;
const SHAPES = [8, 16, 32];
const MB = 1e6;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Row {
  target: string;
  bytesPerToken: number;
  /** (a): ms of seq_cp and the update that performs it, of the same round without the copy, of a one-token decode step, and the bytes a copy moves. */
  streamCopy: { copyMs: number; baselineMs: number; decodeMs: number; bytes: number };
  /** (b): µs of a seq_cp (an id added to the prefix's cells) and of a seq_rm of a path, and ms of a tree step's batch vs a chain's at B = 16. */
  unified: { copyUs: number; removeUs: number; treeStepMs: number; chainStepMs: number; crowdedChainStepMs: number; aloneChainStepMs: number };
  backend: string;
  flashAttention: boolean;
}

/** `name`'s rows, one per flash-attention setting, its model loaded once; each given to `measured` as it comes. */
async function measure(name: string, measured: (row: Row) => void): Promise<void> {
  const target = await benchTarget(name);
  const info = await inspectModelFile(target.file);
  const llama = await getRuntime({ gpu }, threads, () => undefined);
  const model = await llama.loadModel({ modelPath: target.file, gpuLayers: gpu === 'cpu' ? 0 : 'max' });
  const loaded = loadNativeAddon();
  if ('error' in loaded) throw new Error(loaded.error);
  try {
    for (const flashAttention of flashAttentionSettings) {
      process.stderr.write(`measuring ${name}, flash attention ${flashAttention ? 'on' : 'off'}\n`);
      measured(
        await measureWith(
          { name, note: target.note, model, addon: loaded.addon, vocabSize: info.vocabSize, bytesPerToken: kvBytesPerToken(info), backend: llama.gpu === false ? 'cpu' : llama.gpu },
          flashAttention,
        ),
      );
    }
  } finally {
    await model.dispose();
  }
}

async function measureWith(t: { name: string; note: string; model: LlamaModel; addon: NativeAddon; vocabSize: number; bytesPerToken: number; backend: string }, flashAttention: boolean): Promise<Row> {
  const { name, model, addon, bytesPerToken } = t;
  const prefix = tokens(prefixLength, t.vocabSize);
  const batchSize = 512;
  // (a) node-llama-cpp's context: a stream per sequence.
  const context = await model.createContext({ contextSize, sequences: 2, threads, batchSize, flashAttention });
  const native = (context as unknown as { _ctx: object & { removeTokenCellsFromSequence(seq: number, from: number, to: number): boolean } })._ctx;
  const main = new LlamaSequenceEvaluator(context.getSequence(), model);
  for (let at = 0; at < prefix.length; at += batchSize) await main.append(prefix.slice(at, at + batchSize), 0);
  const one = Int32Array.of(prefix[7]!);
  // The copy alone (the native micro-benchmark: seq_cp, then the decode that performs it and refuses the batch).
  const timed = addon.timeSequenceCopy(native, 0, 1, prefix[7]!, rounds + 2);
  if (timed.refusedWith === 0) throw new Error('llama.cpp took a token of two sequences on a context with a KV stream per sequence');
  // A one-token decode step on the prefix, for scale.
  const alone: number[] = [];
  for (let r = 0; r < rounds + 2; r++) {
    const t = performance.now();
    await addon.decode(native, 0, prefix.length, one, 0);
    alone.push(performance.now() - t);
    native.removeTokenCellsFromSequence(0, prefix.length, -1);
  }
  await main.dispose();
  await context.dispose();
  const streamCopy = {
    copyMs: median(timed.copyUs.slice(2)) / 1000,
    baselineMs: median(timed.baselineUs.slice(2)) / 1000,
    decodeMs: median(alone.slice(2)),
    bytes: bytesPerToken * cellsPerSequence(contextSize),
  };

  // (b) Draftline's unified context: one stream.
  const unified = await UnifiedContext.create(model, { sequences: 1 + CROWD, contextSize, batchSize, threads, flashAttention, treeNodes: 63 });
  try {
    const ev = unified.evaluators[0]!;
    for (let at = 0; at < prefix.length; at += batchSize) await ev.append(prefix.slice(at, at + batchSize), 0);
    const copies: number[] = [];
    const removes: number[] = [];
    const treeSteps: number[] = [];
    const chainSteps: number[] = [];
    const tree = pathsTree(prefix, PATHS, 15);
    for (let r = 0; r < rounds + 2; r++) {
      await unified.run(async () => {
        let t = performance.now();
        for (const path of unified.pathIds.slice(0, PATHS)) unified.copy(0, path, -1, -1);
        const copy = (performance.now() - t) / PATHS;
        t = performance.now();
        for (const path of unified.pathIds.slice(0, PATHS)) unified.remove(path, -1, -1);
        const remove = (performance.now() - t) / PATHS;
        if (r >= 2) {
          copies.push(copy * 1000);
          removes.push(remove * 1000);
        }
      });
      let t = performance.now();
      await ev.verifyTree(prefix[3]!, tree);
      const treeMs = performance.now() - t;
      await ev.truncate(prefix.length);
      t = performance.now();
      await ev.append([prefix[3]!, ...prefix.slice(10, 25)], 16, false, prefix.slice(10, 25));
      const chainMs = performance.now() - t;
      await ev.truncate(prefix.length);
      if (r >= 2) {
        treeSteps.push(treeMs);
        chainSteps.push(chainMs);
      }
    }
    // The same chain step on a second context whose other sequences hold prompts of their own (one
    // stream: every step's attention spans their cells too, masked, where a stream per sequence
    // spans its own), the two contexts' steps alternated round by round: the machine's speed drifts.
    const crowdedContext = await UnifiedContext.create(model, { sequences: 1 + CROWD, contextSize, batchSize, threads, flashAttention, treeNodes: 63 });
    const crowded: number[] = [];
    const alone: number[] = [];
    try {
      for (const [i, e] of crowdedContext.evaluators.entries()) {
        const own = i === 0 ? prefix : tokens(prefixLength, t.vocabSize, 31 * i);
        for (let at = 0; at < own.length; at += batchSize) await e.append(own.slice(at, at + batchSize), 0);
      }
      const crowdedEv = crowdedContext.evaluators[0]!;
      for (let r = 0; r < rounds + 2; r++) {
        for (const [e, times] of [
          [ev, alone],
          [crowdedEv, crowded],
        ] as const) {
          const t = performance.now();
          await e.append([prefix[3]!, ...prefix.slice(10, 25)], 16, false, prefix.slice(10, 25));
          if (r >= 2) times.push(performance.now() - t);
          await e.truncate(prefix.length);
        }
      }
    } finally {
      await crowdedContext.dispose();
    }
    return {
      target: `${name} (${t.note})${flashAttentionSettings.length > 1 || flashAttention ? `, flash attention ${flashAttention ? 'on' : 'off'}` : ''}`,
      bytesPerToken,
      streamCopy,
      unified: {
        copyUs: median(copies),
        removeUs: median(removes),
        treeStepMs: median(treeSteps),
        chainStepMs: median(chainSteps),
        crowdedChainStepMs: median(crowded),
        aloneChainStepMs: median(alone),
      },
      backend: t.backend,
      flashAttention,
    };
  } finally {
    await unified.dispose();
  }
}

/** A tree of `paths` chains under the root, `nodes` in all (round robin), of tokens of `from`. */
function pathsTree(from: readonly Token[], paths: number, nodes: number): TokenTree {
  const tree: TokenTree = { tokens: [], parents: [] };
  const last = new Array<number>(paths).fill(-1);
  for (let i = 0; tree.tokens.length < nodes; i++) {
    const p = i % paths;
    tree.tokens.push(from[(last[p]! < 0 ? 100 + p : 200 + i) % from.length]!);
    tree.parents.push(last[p]!);
    last[p] = tree.tokens.length - 1;
  }
  return tree;
}

/** Tokens a batch evaluates for `tree` after its pending token: (b) each node once; (a) each branch's pending token and path again. */
function batchTokens(tree: TokenTree): { unified: number; branches: number; leaves: number } {
  const depths = nodeDepths(tree);
  const leaves = depths.filter((_, i) => !tree.parents.includes(i));
  return { unified: tree.tokens.length + 1, branches: leaves.reduce((n, d) => n + d + 1, 0) || 1, leaves: leaves.length };
}

/**
 * Suffix-style trees over the corpus (the v3 target's tokens): at every 7th position of each task's
 * text, the continuations of every earlier occurrence of its last 2 to 8 tokens (the longest match),
 * merged by frequency, the best B − 1 nodes.
 */
function treeShapes(texts: readonly Token[][], size: number): { trees: number; unified: number; branches: number; leaves: number } {
  const out = { trees: 0, unified: 0, branches: 0, leaves: 0 };
  for (const text of texts) {
    for (let end = 64; end < text.length; end += 7) {
      let continuations: Token[][] = [];
      for (let n = 8; n >= 2 && continuations.length === 0; n--) {
        const tail = text.slice(end - n, end).join();
        for (let at = n; at + 1 < end; at++) if (text.slice(at - n, at).join() === tail) continuations.push(text.slice(at, Math.min(at + size - 1, end)));
      }
      continuations = continuations.filter((c) => c.length > 0).slice(-32);
      if (continuations.length < 2) continue;
      const trie = new ScoredTrie();
      addContinuations(
        trie,
        continuations.map((tokens) => ({ tokens, weight: 1 })),
        { decay: 0.8 },
      );
      const counted = batchTokens(trie.best(size - 1).tree);
      out.trees++;
      out.unified += counted.unified;
      out.branches += counted.branches;
      out.leaves += counted.leaves;
    }
  }
  return out;
}

function tokens(count: number, vocab: number, from = 0): Token[] {
  const span = Math.max(2, Math.min(vocab, 4096) - 1);
  return Array.from({ length: count }, (_, i) => ((from + i * 7) % span) + 1);
}

/** The tree shapes' table's rows: suffix-style trees over the corpus, tokenized by the v3 vocabulary (on the run's own runtime). */
async function shapeRows(): Promise<ReturnType<typeof shapeRow>[]> {
  const llama = await getRuntime({ gpu }, threads, () => undefined);
  const vocabulary = await llama.loadModel({ modelPath: (await benchTarget('v3')).file, vocabOnly: true });
  const texts = sampleTasks(sourceFiles(ensureCorpus()), 40, 7).map((task) => vocabulary.tokenize(task.text.slice(0, 4000)) as Token[]);
  await vocabulary.dispose();
  return SHAPES.map((size) => shapeRow(texts, size));
}

const shapeRow = (texts: readonly Token[][], size: number) => ({ size, ...treeShapes(texts, size) });

async function main(): Promise<void> {
  const rows: Row[] = [];
  let folder: string | undefined;
  // Saved after every row: a run stopped at a time limit keeps what it measured.
  const save = (shapes: ReturnType<typeof shapeRow>[] | null, quiet: boolean) => {
    folder = saveReport('kv-branches', 'kv-branches', report(rows, shapes), { threads, rounds, gpu, prefixLength, contextSize, rows, shapes }, { folder, quiet });
  };
  for (const name of targets) {
    await measure(name, (row) => {
      rows.push(row);
      save(null, true);
    });
  }
  save(withShapes ? await shapeRows() : null, false);
}

function report(rows: readonly Row[], shapes: ReturnType<typeof shapeRow>[] | null): string[] {
  const f = (x: number, d = 1) => x.toFixed(d);
  return [
    '# KV designs for token trees: branches in their own KV streams (a) vs one unified stream (b)',
    '',
    `Backend ${rows[0]?.backend ?? '-'}, ${threads} thread(s), ${os.cpus()[0]?.model ?? 'CPU'}; a ${prefixLength}-token prefix in a context of ${contextSize} tokens a sequence; medians of ${rounds} rounds.`,
    '',
    '## (a) node-llama-cpp’s context: llama_memory_seq_cp between two KV streams',
    '',
    '| target | KV bytes a token | bytes a copy moves (the whole stream) | seq_cp and its update (ms) | the same without the copy (ms) | a one-token decode step (ms) | the copy / a step |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.target} | ${f(r.bytesPerToken / 1e3)} KB | ${f(r.streamCopy.bytes / MB)} MB | ${f(r.streamCopy.copyMs, 2)} | ${f(r.streamCopy.baselineMs, 3)} | ${f(r.streamCopy.decodeMs, 2)} | ${f((r.streamCopy.copyMs - r.streamCopy.baselineMs) / r.streamCopy.decodeMs, 2)} |`,
    ),
    '',
    'Timed natively (NativeAddon.timeSequenceCopy): each round empties the branch sequence, copies the prefix sequence to it, and asks llama_decode for one token of both sequences, which llama.cpp refuses with a KV stream per sequence ("coupled sequences") after performing the pending copy: the round is the copy and nothing of a forward pass. A tree step of L branches pays it L times, besides evaluating each branch\'s path (the table below).',
    '',
    '## (b) Draftline’s unified context: seq_cp adds a sequence id',
    '',
    `| target | seq_cp of the prefix to a path (µs) | seq_rm of a path (µs) | tree step, ${PATHS} paths, B = 16 (ms) | chain step, B = 16 (ms) | tree / chain | chain step with ${CROWD} other sequences of ${prefixLength} tokens (ms) | crowded / alone |`,
    '|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.target} | ${f(r.unified.copyUs)} | ${f(r.unified.removeUs)} | ${f(r.unified.treeStepMs, 2)} | ${f(r.unified.chainStepMs, 2)} | ${f(r.unified.treeStepMs / r.unified.chainStepMs, 2)} | ${f(r.unified.crowdedChainStepMs, 2)} | ${f(r.unified.crowdedChainStepMs / r.unified.aloneChainStepMs, 2)} |`,
    ),
    '',
    `The context holds ${1 + CROWD} sequences of ${contextSize} cells each (and a batch). In one stream a step's attention spans every sequence's cells, the others' masked: the crowded column is what sharing the stream costs a step when other prompt states hold prompts, where a stream per sequence spans only its own (crowded / alone: its rounds alternated with the same step on the first context).`,
    '',
    '## Tokens a verify batch evaluates for the same trees (suffix-style trees over the corpus)',
    '',
    ...(shapes
      ? [
          '| B | trees | leaves (mean) | (b) unified: pending + nodes | (a) streams: each branch its pending token and path | (a) / (b) |',
          '|---|---|---|---|---|---|',
          ...shapes.map((s) => `| ${s.size} | ${s.trees} | ${f(s.leaves / s.trees)} | ${f(s.unified / s.trees)} | ${f(s.branches / s.trees)} | ${f(s.branches / s.unified, 2)} |`),
        ]
      : [withShapes ? 'Not measured yet: the run had not reached this table.' : 'Left out (`--shapes off`).']),
  ];
}

runBenchmark(main);
