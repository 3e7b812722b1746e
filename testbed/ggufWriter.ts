/**
 * A small deterministic GGUF writer for tests and benchmarks.
 *
 * writeRandomLlamaModel writes a llama-architecture model with random weights and a real
 * tokenizer (by default the embedded tiny-code models' byte-level BPE vocabulary), laid out
 * exactly as the exporter of the embedded models lays them out: GGUF v3, the llama keys llama.cpp
 * requires, tensors in ggml order, each padded to 32 bytes, norms F32.
 * Tensors are generated and written a chunk at a time, so a 300+ MB benchmark model does not
 * have to fit in memory. Same options -> byte-identical file.
 */
import * as fs from 'node:fs';
import { open, writeFile, copyFile, truncate, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { readGgufMetadata, GgufValueType } from '../src/gguf/ggufReader';

// ---------------------------------------------------------------------------------------------
// Vocabulary

export interface VocabSpec {
  tokens: string[];
  /** 1 normal, 3 control; default: all normal. */
  tokenTypes?: number[];
  /** "a b" strings in rank order. */
  merges: string[];
  bos: number;
  eos: number;
  addBos?: boolean;
  addEos?: boolean;
  fim?: { prefix: number; suffix: number; middle: number } | null;
  /** tokenizer.ggml.model, default "gpt2". */
  model?: string;
  /** tokenizer.ggml.pre, default "qwen2". */
  pre?: string;
}

export const EMBEDDED_TARGET_MODEL = path.resolve(__dirname, '../models/tiny-code-target.gguf');

/**
 * Where the embedded vocabulary is read: the first of these in models/, all with the same tokenizer
 * (models/README.md; checked by test/unit/embeddedVocab.test.ts). The bench kit carries the tiny
 * draft alone of the tiny pair, and the v3 pair travels apart.
 */
const EMBEDDED_VOCAB_FILES = ['tiny-code-target.gguf', 'tiny-code-draft.gguf', 'draftline-code-draft.gguf'];

export function embeddedVocabFile(modelsDir = path.dirname(EMBEDDED_TARGET_MODEL)): string {
  const files = EMBEDDED_VOCAB_FILES.map((f) => path.join(modelsDir, f));
  return files.find((f) => fs.existsSync(f)) ?? files[0]!;
}

let embeddedVocab: Promise<VocabSpec> | null = null;

/** The embedded models' vocabulary (read once, then cached). */
export function loadEmbeddedVocab(): Promise<VocabSpec> {
  embeddedVocab ??= readVocabFromGguf(embeddedVocabFile());
  embeddedVocab.catch(() => (embeddedVocab = null));
  return embeddedVocab;
}

/** Read tokens, token types, merges, bos/eos and FIM ids of an existing GGUF. */
export async function readVocabFromGguf(filePath: string): Promise<VocabSpec> {
  const meta = await readGgufMetadata(filePath);
  const v = (key: string) => meta.kv.get(key)?.value;
  const num = (key: string) => (typeof v(key) === 'number' ? (v(key) as number) : undefined);
  const pre = num('tokenizer.ggml.fim_pre_token_id');
  const suf = num('tokenizer.ggml.fim_suf_token_id');
  const mid = num('tokenizer.ggml.fim_mid_token_id');
  const spec: VocabSpec = {
    tokens: v('tokenizer.ggml.tokens') as string[],
    merges: (v('tokenizer.ggml.merges') as string[] | undefined) ?? [],
    bos: num('tokenizer.ggml.bos_token_id') ?? 0,
    eos: num('tokenizer.ggml.eos_token_id') ?? 0,
    fim: pre !== undefined && suf !== undefined && mid !== undefined ? { prefix: pre, suffix: suf, middle: mid } : null,
    model: (v('tokenizer.ggml.model') as string | undefined) ?? 'gpt2',
    pre: (v('tokenizer.ggml.pre') as string | undefined) ?? 'qwen2',
  };
  const types = v('tokenizer.ggml.token_type') as number[] | undefined;
  if (types) spec.tokenTypes = types;
  const addBos = v('tokenizer.ggml.add_bos_token');
  const addEos = v('tokenizer.ggml.add_eos_token');
  if (typeof addBos === 'boolean') spec.addBos = addBos;
  if (typeof addEos === 'boolean') spec.addEos = addEos;
  return spec;
}

// ---------------------------------------------------------------------------------------------
// Low-level GGUF writing

export type KvEntry =
  | { key: string; type: 'string'; value: string }
  | { key: string; type: 'u32' | 'i32' | 'f32' | 'u64'; value: number }
  | { key: string; type: 'bool'; value: boolean }
  | { key: string; type: 'array'; elementType: 'string'; value: string[] }
  | { key: string; type: 'array'; elementType: 'i32' | 'u32' | 'f32'; value: number[] };

export interface TensorSpec {
  name: string;
  /** ggml order (numpy shape reversed): dims[0] is the contiguous dimension. */
  dims: number[];
  /** 0 F32, 1 F16. */
  type: 0 | 1;
  /** Fill out[0..count) with elements [start, start+count) of the tensor. */
  fill(out: Float32Array, start: number): void;
}

const ALIGN = 32;
const TYPE_ID = {
  u32: GgufValueType.UINT32,
  i32: GgufValueType.INT32,
  f32: GgufValueType.FLOAT32,
  u64: GgufValueType.UINT64,
  bool: GgufValueType.BOOL,
  string: GgufValueType.STRING,
  array: GgufValueType.ARRAY,
};

class ByteSink {
  parts: Buffer[] = [];
  length = 0;
  push(b: Buffer) {
    this.parts.push(b);
    this.length += b.length;
  }
  u32(v: number) {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32LE(v >>> 0);
    this.push(b);
  }
  i32(v: number) {
    const b = Buffer.allocUnsafe(4);
    b.writeInt32LE(v | 0);
    this.push(b);
  }
  f32(v: number) {
    const b = Buffer.allocUnsafe(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  u64(v: number) {
    const b = Buffer.allocUnsafe(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  str(s: string) {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
}

function encodeKv(sink: ByteSink, kv: KvEntry) {
  sink.str(kv.key);
  sink.u32(TYPE_ID[kv.type]);
  switch (kv.type) {
    case 'string':
      sink.str(kv.value);
      break;
    case 'u32':
      sink.u32(kv.value);
      break;
    case 'i32':
      sink.i32(kv.value);
      break;
    case 'f32':
      sink.f32(kv.value);
      break;
    case 'u64':
      sink.u64(kv.value);
      break;
    case 'bool':
      sink.push(Buffer.from([kv.value ? 1 : 0]));
      break;
    case 'array': {
      sink.u32(TYPE_ID[kv.elementType]);
      sink.u64(kv.value.length);
      if (kv.elementType === 'string') for (const s of kv.value as string[]) sink.str(s);
      else {
        const b = Buffer.allocUnsafe(4 * kv.value.length);
        const vals = kv.value as number[];
        for (let i = 0; i < vals.length; i++) {
          if (kv.elementType === 'i32') b.writeInt32LE(vals[i]! | 0, 4 * i);
          else if (kv.elementType === 'u32') b.writeUInt32LE(vals[i]! >>> 0, 4 * i);
          else b.writeFloatLE(vals[i]!, 4 * i);
        }
        sink.push(b);
      }
      break;
    }
  }
}

const padTo = (n: number, a: number) => Math.ceil(n / a) * a;
const tensorBytes = (t: TensorSpec) => t.dims.reduce((a, b) => a * b, 1) * (t.type === 1 ? 2 : 4);

async function writeAll(fh: FileHandle, buf: Uint8Array) {
  let off = 0;
  while (off < buf.length) {
    const { bytesWritten } = await fh.write(buf, off, buf.length - off);
    off += bytesWritten;
  }
}

/**
 * Write a GGUF v3 file: header (kvs, tensor infos), then each tensor's data generated in chunks.
 * Written to filePath directly; callers wanting atomicity write to a temp name and rename.
 */
export async function writeGgufFile(filePath: string, kvs: KvEntry[], tensors: TensorSpec[]): Promise<void> {
  if (os.endianness() !== 'LE') throw new Error('ggufWriter supports little-endian hosts only');
  const sink = new ByteSink();
  sink.push(Buffer.from('GGUF', 'latin1'));
  sink.u32(3);
  sink.u64(tensors.length);
  sink.u64(kvs.length);
  for (const kv of kvs) encodeKv(sink, kv);
  let offset = 0;
  for (const t of tensors) {
    sink.str(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(d);
    sink.u32(t.type);
    sink.u64(offset);
    offset += padTo(tensorBytes(t), ALIGN);
  }
  const headerPad = padTo(sink.length, ALIGN) - sink.length;
  if (headerPad) sink.push(Buffer.alloc(headerPad));

  const fh = await open(filePath, 'w');
  try {
    await writeAll(fh, Buffer.concat(sink.parts));
    const CHUNK = 1 << 20; // elements
    const f32 = new Float32Array(CHUNK);
    const f16 = new Uint16Array(CHUNK);
    for (const t of tensors) {
      const n = t.dims.reduce((a, b) => a * b, 1);
      for (let start = 0; start < n; start += CHUNK) {
        const count = Math.min(CHUNK, n - start);
        const out = count === CHUNK ? f32 : f32.subarray(0, count);
        t.fill(out, start);
        if (t.type === 1) {
          const h = f16.subarray(0, count);
          f32ArrayToF16(out, h);
          await writeAll(fh, new Uint8Array(h.buffer, h.byteOffset, h.byteLength));
        } else {
          await writeAll(fh, new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
        }
      }
      const pad = padTo(tensorBytes(t), ALIGN) - tensorBytes(t);
      if (pad) await writeAll(fh, Buffer.alloc(pad));
    }
  } finally {
    await fh.close();
  }
}

// ---------------------------------------------------------------------------------------------
// float16

const cvtF32 = new Float32Array(1);
const cvtU32 = new Uint32Array(cvtF32.buffer);

function f32BitsToF16(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // inf / nan
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow -> inf
  if (e <= 0) {
    // subnormal half (or zero)
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && half & 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && half & 1)) half++; // carry may round up to inf: correct
  return sign | half;
}

/** IEEE half bits of x, round to nearest even. */
export function f32ToF16(x: number): number {
  cvtF32[0] = x;
  return f32BitsToF16(cvtU32[0]!);
}

export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

export function f32ArrayToF16(src: Float32Array, dst: Uint16Array): void {
  const bits = new Uint32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < src.length; i++) dst[i] = f32BitsToF16(bits[i]!);
}

// ---------------------------------------------------------------------------------------------
// Deterministic random numbers

/** mulberry32: uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a of a string, mixed with a seed. */
function hashSeed(seed: number, name: string): number {
  let h = (0x811c9dc5 ^ Math.imul(seed >>> 0, 0x9e3779b1)) >>> 0;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * A fill function for N(0, std) samples (Box-Muller), deterministic per (seed, tensor name) and
 * independent of the chunking because each call continues the same stream.
 */
function normalFill(seed: number, name: string, std: number): TensorSpec['fill'] {
  let rand = mulberry32(hashSeed(seed, name));
  let produced = 0;
  let spare: number | null = null;
  return (out, start) => {
    if (start !== produced) {
      // restart and skip (only happens if a caller fills out of order)
      rand = mulberry32(hashSeed(seed, name));
      spare = null;
      produced = 0;
      const skip = new Float32Array(Math.min(start, 1 << 16));
      while (produced < start) {
        const k = Math.min(skip.length, start - produced);
        fillNormal(skip.subarray(0, k));
      }
    }
    fillNormal(out);
    function fillNormal(o: Float32Array) {
      let i = 0;
      if (spare !== null && o.length > 0) {
        o[i++] = spare * std;
        spare = null;
      }
      for (; i < o.length; i += 2) {
        const u1 = 1 - rand(); // (0, 1]
        const u2 = rand();
        const r = Math.sqrt(-2 * Math.log(u1));
        const z0 = r * Math.cos(2 * Math.PI * u2);
        const z1 = r * Math.sin(2 * Math.PI * u2);
        o[i] = z0 * std;
        if (i + 1 < o.length) o[i + 1] = z1 * std;
        else spare = z1;
      }
      produced += o.length;
    }
  };
}

const constFill =
  (v: number): TensorSpec['fill'] =>
  (out) =>
    out.fill(v);

// ---------------------------------------------------------------------------------------------
// Random llama model

export interface RandomLlamaOptions {
  seed: number;
  dModel: number;
  nLayers: number;
  nHeads: number;
  /** GQA: key/value heads (must divide nHeads). Default nHeads. */
  nKvHeads?: number;
  ffn: number;
  /** llama.context_length, default 1024. */
  contextLength?: number;
  /** Default: the embedded models' vocabulary. */
  vocab?: VocabSpec;
  /** Replace one token's text (e.g. to make an incompatible vocabulary). */
  vocabMutation?: { index: number; text: string };
  /** Tokens appended to the vocabulary (normal type). */
  extraTokens?: string[];
  /** Tokens appended after extraTokens as control tokens (type 3): a model family's special tokens. */
  specialTokens?: string[];
  /** FIM ids written for these token texts (after fim:false, to give a family's own FIM tokens). */
  fimTokens?: { prefix: string; suffix: string; middle: string };
  /**
   * Write FIM token ids (default true). false also renames FIM-looking tokens in the vocabulary
   * (to <|reserved_N|>) so llama.cpp's text fallback finds none: a model without infill.
   */
  fim?: boolean;
  /** 2D weights in F16 (default true); norms are always F32. */
  f16?: boolean;
  /** Metadata keys to leave out (to make broken files). */
  omitKeys?: string[];
  /** Metadata appended after the standard keys (a key also in the standard set replaces it). */
  extraKeys?: KvEntry[];
  /** Omit output.weight so llama.cpp ties it to token_embd (default false). */
  tiedOutput?: boolean;
  /**
   * Matrices other than the embedding get std weightScale/sqrt(fan_in). Default 2: with 1, about
   * 1 in 20 greedy generations of small random models fell into a run of one repeated token;
   * with 1.5-2 none did (measured on 45 prompts x seeds).
   */
  weightScale?: number;
  /**
   * Std of token_embd. Default 1, or 0.1 with tiedOutput: a tied model with large embeddings
   * scores its input token highest (logit E_t.E_t) and repeats the last token forever.
   */
  embeddingScale?: number;
  /**
   * Extra factor on the std of the residual branches' output matrices (attn_output, ffn_down).
   * Default 1. Small values (e.g. 0.1) keep a deep random model close to its embedding path, so its
   * greedy choices do not flip under a GPU's batch-size drift (bench regime 2 on large shapes).
   */
  residualScale?: number;
  /** Extra factor on output.weight's std (default 1): wider top-two margins, fewer near-ties. */
  outputScale?: number;
  /** general.name, default "random-llama-<seed>". */
  name?: string;
  /**
   * Embedding rows written as another row times a factor: `to` = `from` * scale. With a tied output
   * and large embeddings the model repeats its last input token (see embeddingScale); a copy of that
   * token's row scaled a little up makes it write `to` instead, e.g. a stop token after the FIM
   * middle token.
   */
  embeddingCopies?: { from: number; to: number; scale: number }[];
  /**
   * Rows of output.weight (one a token) scaled: a random model's argmax then picks those tokens more
   * often, e.g. the newline tokens of a stand-in that must write lines as code does.
   */
  outputRowScales?: { rows: readonly number[]; scale: number };
}

export const DEFAULT_WEIGHT_SCALE = 2;

/**
 * Bump whenever the bytes written for the same options change (defaults, layout, PRNG):
 * testbed/models.ts keys its cache on it.
 */
export const GGUF_WRITER_VERSION = 1;

/** Apply vocabMutation / extraTokens / fim:false to a vocabulary. */
export function resolveVocab(base: VocabSpec, opts: Pick<RandomLlamaOptions, 'vocabMutation' | 'extraTokens' | 'fim' | 'specialTokens' | 'fimTokens'>): VocabSpec {
  const tokens = base.tokens.slice();
  const tokenTypes = base.tokenTypes ? base.tokenTypes.slice() : tokens.map(() => 1);
  let fim = base.fim ?? null;
  if (opts.fim === false) {
    fim = null;
    for (let i = 0; i < tokens.length; i++) if (/^(<\|fim_|<fim[-_])/.test(tokens[i]!)) tokens[i] = `<|reserved_${i}|>`;
  }
  if (opts.vocabMutation) {
    const { index, text } = opts.vocabMutation;
    if (index < 0 || index >= tokens.length) throw new RangeError(`vocabMutation index ${index} out of range`);
    tokens[index] = text;
  }
  for (const t of opts.extraTokens ?? []) {
    tokens.push(t);
    tokenTypes.push(1);
  }
  for (const t of opts.specialTokens ?? []) {
    tokens.push(t);
    tokenTypes.push(3);
  }
  if (opts.fimTokens) {
    const id = (text: string) => {
      const i = tokens.indexOf(text);
      if (i < 0) throw new RangeError(`fimTokens: "${text}" is not in the vocabulary`);
      return i;
    };
    fim = { prefix: id(opts.fimTokens.prefix), suffix: id(opts.fimTokens.suffix), middle: id(opts.fimTokens.middle) };
  }
  return { ...base, tokens, tokenTypes, fim };
}

/** Build the metadata list for a random llama model (before omitKeys). */
function llamaKvs(opts: RandomLlamaOptions, vocab: VocabSpec): KvEntry[] {
  const hd = opts.dModel / opts.nHeads;
  const f16 = opts.f16 ?? true;
  const kvs: KvEntry[] = [
    { key: 'general.architecture', type: 'string', value: 'llama' },
    { key: 'general.name', type: 'string', value: opts.name ?? `random-llama-${opts.seed}` },
    { key: 'general.file_type', type: 'u32', value: f16 ? 1 : 0 },
    { key: 'general.alignment', type: 'u32', value: ALIGN },
    { key: 'llama.context_length', type: 'u32', value: opts.contextLength ?? 1024 },
    { key: 'llama.embedding_length', type: 'u32', value: opts.dModel },
    { key: 'llama.block_count', type: 'u32', value: opts.nLayers },
    { key: 'llama.feed_forward_length', type: 'u32', value: opts.ffn },
    { key: 'llama.attention.head_count', type: 'u32', value: opts.nHeads },
    { key: 'llama.attention.head_count_kv', type: 'u32', value: opts.nKvHeads ?? opts.nHeads },
    { key: 'llama.rope.dimension_count', type: 'u32', value: hd },
    { key: 'llama.rope.freq_base', type: 'f32', value: 10000 },
    { key: 'llama.attention.layer_norm_rms_epsilon', type: 'f32', value: 1e-5 },
    { key: 'llama.vocab_size', type: 'u32', value: vocab.tokens.length },
    { key: 'tokenizer.ggml.model', type: 'string', value: vocab.model ?? 'gpt2' },
    { key: 'tokenizer.ggml.pre', type: 'string', value: vocab.pre ?? 'qwen2' },
    { key: 'tokenizer.ggml.tokens', type: 'array', elementType: 'string', value: vocab.tokens },
    { key: 'tokenizer.ggml.token_type', type: 'array', elementType: 'i32', value: vocab.tokenTypes ?? vocab.tokens.map(() => 1) },
    { key: 'tokenizer.ggml.merges', type: 'array', elementType: 'string', value: vocab.merges },
    { key: 'tokenizer.ggml.bos_token_id', type: 'u32', value: vocab.bos },
    { key: 'tokenizer.ggml.eos_token_id', type: 'u32', value: vocab.eos },
    { key: 'tokenizer.ggml.add_bos_token', type: 'bool', value: vocab.addBos ?? true },
    { key: 'tokenizer.ggml.add_eos_token', type: 'bool', value: vocab.addEos ?? false },
  ];
  if (vocab.fim) {
    kvs.push(
      { key: 'tokenizer.ggml.fim_pre_token_id', type: 'u32', value: vocab.fim.prefix },
      { key: 'tokenizer.ggml.fim_suf_token_id', type: 'u32', value: vocab.fim.suffix },
      { key: 'tokenizer.ggml.fim_mid_token_id', type: 'u32', value: vocab.fim.middle },
    );
  }
  return kvs;
}

function llamaTensors(opts: RandomLlamaOptions, vocabSize: number): TensorSpec[] {
  const d = opts.dModel;
  const H = opts.nHeads;
  const Hkv = opts.nKvHeads ?? H;
  const hd = d / H;
  const ff = opts.ffn;
  const ws = opts.weightScale ?? DEFAULT_WEIGHT_SCALE;
  const mtype: 0 | 1 = (opts.f16 ?? true) ? 1 : 0;
  const t: TensorSpec[] = [];
  const matrix = (name: string, fanIn: number, fanOut: number, std = ws / Math.sqrt(fanIn)) => t.push({ name, dims: [fanIn, fanOut], type: mtype, fill: normalFill(opts.seed, name, std) });
  const norm = (name: string) => t.push({ name, dims: [d], type: 0, fill: constFill(1) });

  matrix('token_embd.weight', d, vocabSize, opts.embeddingScale ?? (opts.tiedOutput ? 0.1 : 1));
  if (opts.embeddingCopies?.length)
    t[0]!.fill = withRowCopies(t[0]!.fill, d, opts.embeddingCopies, () => normalFill(opts.seed, 'token_embd.weight', opts.embeddingScale ?? (opts.tiedOutput ? 0.1 : 1)));
  for (let i = 0; i < opts.nLayers; i++) {
    const p = `blk.${i}.`;
    norm(`${p}attn_norm.weight`);
    matrix(`${p}attn_q.weight`, d, H * hd);
    matrix(`${p}attn_k.weight`, d, Hkv * hd);
    matrix(`${p}attn_v.weight`, d, Hkv * hd);
    matrix(`${p}attn_output.weight`, H * hd, d, (ws * (opts.residualScale ?? 1)) / Math.sqrt(H * hd));
    norm(`${p}ffn_norm.weight`);
    matrix(`${p}ffn_gate.weight`, d, ff);
    matrix(`${p}ffn_up.weight`, d, ff);
    matrix(`${p}ffn_down.weight`, ff, d, (ws * (opts.residualScale ?? 1)) / Math.sqrt(ff));
  }
  norm('output_norm.weight');
  if (!opts.tiedOutput) {
    const std = (ws * (opts.outputScale ?? 1)) / Math.sqrt(d);
    matrix('output.weight', d, vocabSize, std);
    const scaled = opts.outputRowScales;
    if (scaled?.rows.length) {
      const output = t.at(-1)!;
      // The rows as the matrix has them, generated in one pass (the generator skips only from the start).
      let whole: Float32Array | null = new Float32Array(d * vocabSize);
      normalFill(opts.seed, 'output.weight', std)(whole, 0);
      const copies = scaled.rows.map((row) => ({ from: row, to: row, scale: scaled.scale }));
      output.fill = withRowCopies(output.fill, d, copies, () => (out, start) => {
        out.set(whole!.subarray(start, start + out.length));
      });
      whole = null;
    }
  }
  return t;
}

/** A fill whose rows `to` hold row `from` (as `source` generates it) times `scale`. */
function withRowCopies(fill: TensorSpec['fill'], rowLength: number, copies: readonly { from: number; to: number; scale: number }[], source: () => TensorSpec['fill']): TensorSpec['fill'] {
  const rows = new Map<number, Float32Array>();
  for (const { from, to, scale } of copies) {
    const row = new Float32Array(rowLength);
    source()(row, from * rowLength);
    rows.set(
      to,
      row.map((v) => v * scale),
    );
  }
  return (out, start) => {
    fill(out, start);
    for (const [to, row] of rows) {
      for (let i = 0; i < rowLength; i++) {
        const at = to * rowLength + i - start;
        if (at >= 0 && at < out.length) out[at] = row[i]!;
      }
    }
  };
}

function checkShape(opts: RandomLlamaOptions) {
  const ints = { seed: opts.seed, dModel: opts.dModel, nLayers: opts.nLayers, nHeads: opts.nHeads, ffn: opts.ffn };
  for (const [k, v] of Object.entries(ints)) if (!Number.isInteger(v) || (k !== 'seed' && v <= 0)) throw new RangeError(`${k} must be a positive integer, got ${v}`);
  if (opts.dModel % opts.nHeads !== 0) throw new RangeError(`dModel ${opts.dModel} is not a multiple of nHeads ${opts.nHeads}`);
  const kv = opts.nKvHeads ?? opts.nHeads;
  if (!Number.isInteger(kv) || kv <= 0 || opts.nHeads % kv !== 0) throw new RangeError(`nKvHeads ${kv} must divide nHeads ${opts.nHeads}`);
}

/** Write a random-weight llama GGUF (deterministic in opts). */
export async function writeRandomLlamaModel(filePath: string, opts: RandomLlamaOptions): Promise<void> {
  checkShape(opts);
  const vocab = resolveVocab(opts.vocab ?? (await loadEmbeddedVocab()), opts);
  const extra = opts.extraKeys ?? [];
  const omit = new Set([...(opts.omitKeys ?? []), ...extra.map((kv) => kv.key)]);
  const kvs = [...llamaKvs(opts, vocab).filter((kv) => !omit.has(kv.key)), ...extra];
  await writeGgufFile(filePath, kvs, llamaTensors(opts, vocab.tokens.length));
}

/** Bytes the model of opts will take on disk (header excluded). */
export function randomLlamaDataBytes(opts: RandomLlamaOptions, vocabSize = 4096): number {
  return llamaTensors(opts, vocabSize).reduce((a, t) => a + padTo(tensorBytes(t), ALIGN), 0);
}

// ---------------------------------------------------------------------------------------------
// Corrupt files for tests

/** Copy the first `bytes` bytes of src to dst. */
export async function truncateFile(src: string, dst: string, bytes: number): Promise<void> {
  const size = (await stat(src)).size;
  if (bytes > size) throw new RangeError(`cannot truncate ${src} (${size} bytes) to ${bytes} bytes`);
  await copyFile(src, dst);
  await truncate(dst, bytes);
}

/** A file that is not GGUF: by default a ZIP local-file header followed by junk. */
export async function writeNotGguf(dst: string, content?: string | Uint8Array): Promise<void> {
  await writeFile(dst, content ?? Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(60, 0x2a)]));
}
