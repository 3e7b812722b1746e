// Targets the speculation benchmarks (regime 2, bench/profile.ts) run on, by name: the embedded
// targets (small: the per-step overhead decides, as on a GPU), a random model with Qwen2.5's
// 151,936-token vocabulary (the per-output cost decides), and random models of real shapes whose
// greedy choices stay stable under a GPU's batch drift. Random ones are written once into
// bench/cache/models.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { embeddedPairPaths } from '../src/models/embedded';
import { loadEmbeddedVocab, writeRandomLlamaModel, type RandomLlamaOptions } from '../testbed/ggufWriter';
import { realVocabModel } from '../testbed/realVocab';
import { CACHE } from './corpus';
import { serverEnv } from '../testbed/llamaServer';

const ROOT = path.resolve(__dirname, '..');

/** Qwen2.5's vocabulary size: 4,096 embedded tokens plus this many filler tokens. */
export const QWEN_VOCAB_SIZE = 151_936;
const EMBEDDED_VOCAB_SIZE = 4096;

/**
 * Random shapes. Stable ones scale the residual branches and widen the output layer so that a
 * position's argmax does not depend on the batch it was evaluated in (on a GPU, deep random models
 * drift by up to 4 logits between batch sizes: the oracle then misaligns after the first tie).
 */
const RANDOM_SHAPES: Record<string, Omit<RandomLlamaOptions, 'seed'> & { note: string }> = {
  // Bandwidth-bound on a CPU: the forward pass decides (the previous regime 2 target).
  big: { dModel: 1024, nLayers: 12, nHeads: 16, ffn: 2816, contextLength: 2048, note: '325 MB, d 1024, 12 layers' },
  // Tiny body, Qwen2.5's vocabulary: the output layer and per-output sampling decide.
  'qwen-vocab': {
    dModel: 256,
    nLayers: 2,
    nHeads: 4,
    ffn: 768,
    contextLength: 2048,
    extraTokens: fillerTokens(QWEN_VOCAB_SIZE - EMBEDDED_VOCAB_SIZE),
    note: 'd 256, 2 layers, 151,936-token vocabulary',
  },
  // Long contexts (issue 16's self-speculation cost): the v3 target's shape and the big one, F16,
  // with room for 16k-token prompts.
  'v3-long': { dModel: 512, nLayers: 8, nHeads: 8, ffn: 1408, contextLength: 16_640, note: "the v3 target's shape (F16), 16k context" },
  'big-long': { dModel: 1024, nLayers: 12, nHeads: 16, ffn: 2816, contextLength: 16_640, note: '325 MB, d 1024, 12 layers, 16k context' },
  // Real shapes (F16, embedded vocabulary; for a GPU run: 3 GB and 13 GB on disk).
  '1.5b': { dModel: 1536, nLayers: 28, nHeads: 12, nKvHeads: 2, ffn: 8960, contextLength: 4096, residualScale: 0.1, outputScale: 4, note: 'Qwen2.5-1.5B-shaped, stable' },
  '7b': { dModel: 3584, nLayers: 28, nHeads: 28, nKvHeads: 4, ffn: 18944, contextLength: 4096, residualScale: 0.1, outputScale: 4, note: 'Qwen2.5-7B-shaped, stable' },
  // What a GPU user runs: the 7B body with Qwen2.5's whole vocabulary (15 GB F16; for a GPU run).
  '7b-qwen': {
    dModel: 3584,
    nLayers: 28,
    nHeads: 28,
    nKvHeads: 4,
    ffn: 18944,
    contextLength: 4096,
    residualScale: 0.1,
    outputScale: 4,
    extraTokens: fillerTokens(QWEN_VOCAB_SIZE - EMBEDDED_VOCAB_SIZE),
    note: "Qwen2.5-7B-shaped, stable, Qwen2.5's 151,936-token vocabulary",
  },
};

/*
 * '1.5b-qwen-coder': the 1.5B body (stable, F16) carrying Qwen2.5-Coder's real tokenizer (testbed/realVocab.ts: the
 * qwen2 vocabulary of llama.cpp's models/ plus the FIM and repository tokens, <|file_sep|> one control
 * token): what Sweep's next-edit 1.5B is shaped like, for the edits regime's replay (3.5 GB on disk).
 */
export const TARGET_NAMES = ['tiny', 'v3', 'v3-draft', ...Object.keys(RANDOM_SHAPES), '1.5b-lines', '1.5b-qwen-coder', '1.5b-qwen-coder-q8', 'qwen-coder-small'];

/**
 * '1.5b-lines': the 1.5B body (stable, F16) whose newline tokens' output rows are scaled up so that
 * its greedy text has lines (a newline every ~7 tokens, about as code has): a random model otherwise
 * almost never writes a newline, and what ends a completion at a line (the time budget) needs lines.
 */
const NEWLINE_ROW_SCALE = 1.12;

/** llama.cpp's quantizer, built beside llama-server by scripts/build-llama-server.sh. */
const LLAMA_QUANTIZE = path.join(ROOT, 'bench', 'cache', 'llama-server', 'build', 'bin', 'llama-quantize');

/** `file` quantised to `type` with llama-quantize, written once beside it. */
async function quantizedCopy(file: string, type: 'Q8_0'): Promise<string> {
  const out = file.replace(/\.gguf$/, `.${type.toLowerCase()}.gguf`);
  if (fs.existsSync(out)) return out;
  if (!fs.existsSync(LLAMA_QUANTIZE)) throw new Error(`${LLAMA_QUANTIZE} is missing: bash scripts/build-llama-server.sh builds it`);
  const tmp = `${out}.tmp-${process.pid}`;
  const { execFileSync } = await import('node:child_process');
  process.stderr.write(`quantising ${path.basename(file)} to ${type} with llama-quantize (once)\n`);
  try {
    execFileSync(LLAMA_QUANTIZE, [file, tmp, type], { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20, env: serverEnv() });
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw new Error(`llama-quantize failed on ${file}: ${String((e as { stderr?: Buffer }).stderr ?? e).slice(-2000)}`);
  }
  fs.renameSync(tmp, out);
  return out;
}

function fillerTokens(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `<|filler_${i}|>`);
}

export interface BenchTarget {
  name: string;
  file: string;
  note: string;
}

/**
 * What a target needs that this checkout lacks (a quantised one: llama-quantize, which
 * scripts/build-llama-server.sh builds), or null: asked before a regime starts on it.
 */
export function benchTargetMissing(name: string): string | null {
  const quantised = name.endsWith('-q8');
  if (!quantised || fs.existsSync(LLAMA_QUANTIZE)) return null;
  return `its target "${name}" is quantised by llama-quantize, which is not built (bash scripts/build-llama-server.sh builds it beside llama-server)`;
}

/** The target's file, writing a random one the first time it is asked for. */
export async function benchTarget(name: string): Promise<BenchTarget> {
  if (name === 'tiny' || name === 'v3') {
    const file = embeddedPairPaths(ROOT, name).target;
    return { name, file, note: `embedded ${path.basename(file)}` };
  }
  if (name === 'v3-draft') {
    // The draft model as a target: what each drafted token costs.
    const file = embeddedPairPaths(ROOT, 'v3').draft;
    return { name, file, note: `embedded ${path.basename(file)}, the v3 pair's draft` };
  }
  if (name === '1.5b-lines') {
    const file = path.join(CACHE, 'models', 'random-target-1.5b-lines.gguf');
    if (!fs.existsSync(file)) {
      const { note: _note, ...body } = RANDOM_SHAPES['1.5b']!;
      const vocab = await loadEmbeddedVocab();
      // Byte-level BPE writes a newline as "Ċ".
      const rows = vocab.tokens.flatMap((token, id) => (token.includes('Ċ') ? [id] : []));
      fs.mkdirSync(path.dirname(file), { recursive: true });
      process.stderr.write(`writing the random "1.5b-lines" target (Qwen2.5-1.5B-shaped, ${rows.length} newline tokens' output rows x${NEWLINE_ROW_SCALE}; once, cached in bench/cache/models)\n`);
      await writeRandomLlamaModel(`${file}.tmp`, { seed: 4242, ...body, outputRowScales: { rows, scale: NEWLINE_ROW_SCALE } });
      fs.renameSync(`${file}.tmp`, file);
    }
    return { name, file, note: `random, Qwen2.5-1.5B-shaped, stable, F16, its newline tokens favoured (x${NEWLINE_ROW_SCALE}) so that it writes lines` };
  }
  if (name === '1.5b-qwen-coder') {
    const { note: _note, ...body } = RANDOM_SHAPES['1.5b']!;
    process.stderr.write('the random "1.5b-qwen-coder" target: written once into test-output/models/real-vocab (3.5 GB) when missing\n');
    const file = await realVocabModel('qwen2.5-coder-1.5b', { seed: 4242, ...body });
    return { name, file, note: "random, Qwen2.5-1.5B-shaped, stable, Qwen2.5-Coder's real tokenizer" };
  }
  if (name === '1.5b-qwen-coder-q8') {
    // Sweep's next-edit 1.5B ships as Q8_0, and issue #39's CPU verify costs were measured on a Q8_0
    // 1.5B: F16 weights make a batch relatively dearer on a CPU (no int8 dot products), so the replay
    // runs on the same weights quantised by llama.cpp's own tool.
    const f16 = await benchTarget('1.5b-qwen-coder');
    const file = await quantizedCopy(f16.file, 'Q8_0');
    return { name, file, note: "random, Qwen2.5-1.5B-shaped, stable, Qwen2.5-Coder's real tokenizer, Q8_0 (llama-quantize)" };
  }
  if (name === 'qwen-coder-small') {
    // qwen-vocab's small body with the real tokenizer and room for next-edit prompts: fast, and garbage.
    const file = await realVocabModel('qwen2.5-coder-1.5b', { seed: 39, dModel: 256, nLayers: 2, nHeads: 4, ffn: 768, contextLength: 8192 });
    return { name, file, note: "random, d 256, 2 layers, Qwen2.5-Coder's real tokenizer, context 8192" };
  }
  const shape = RANDOM_SHAPES[name];
  if (!shape) throw new Error(`unknown target "${name}" (there are: ${TARGET_NAMES.join(', ')})`);
  const { note, ...options } = shape;
  const file = path.join(CACHE, 'models', name === 'big' ? 'random-target-1024x12.gguf' : `random-target-${name}.gguf`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    process.stderr.write(`writing the random "${name}" target (${note}; once, cached in bench/cache/models)\n`);
    await writeRandomLlamaModel(`${file}.tmp`, { seed: 4242, ...options });
    fs.renameSync(`${file}.tmp`, file);
  }
  return { name, file, note: `random, ${note}` };
}
