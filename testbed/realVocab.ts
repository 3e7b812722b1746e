/**
 * Real tokenizers for the conformance tests (issue #37): the vocabulary-only GGUFs of real models that
 * llama.cpp keeps in its `models/` folder, taken out of the source bundle node-llama-cpp ships
 * (scripts/llamaSource.mjs; cached in .cache/, no network), with their tokenizer test vectors
 * (`.inp`/`.out`, the texts and the ids llama.cpp's test-tokenizer-0 expects).
 *
 * A variant is a real vocabulary as a published model has it: the file as it is, or with the tokens
 * a code model adds to its base vocabulary (CodeLlama on llama-spm, Qwen2.5-Coder on qwen2), the way
 * the published GGUFs have them. realVocabModel writes a tiny random-weight llama body carrying a
 * variant's tokenizer metadata (every `tokenizer.*` key of the vocabulary file, edited for the
 * variant), which node-llama-cpp loads as a model (or `vocabOnly`).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before } from 'node:test';
import { GgufValueType, type GgufKv, readGgufMetadata } from '../src/gguf/ggufReader';
import { getRuntime } from '../src/inference/llamaRuntime';
import type { LlamaModel } from '../src/llama/llamaTypes';
import { GGUF_WRITER_VERSION, type KvEntry, type RandomLlamaOptions, writeRandomLlamaModel } from './ggufWriter';
import { ensureCachedModel, TEST_MODEL_DIR } from './models';

const ROOT = path.resolve(__dirname, '..');
// Plain JavaScript shared with scripts/build-native.mjs; an ES module, so imported dynamically.
const llamaSource = () => import('../scripts/llamaSource.mjs');

/** llama.cpp's vocabulary files the tests read (models/ggml-vocab-<name>.gguf). */
export const REAL_VOCABS = ['deepseek-coder', 'starcoder', 'refact', 'qwen2', 'llama-spm', 'llama-bpe', 'phi-3', 'gpt-2'] as const;
export type RealVocabName = (typeof REAL_VOCABS)[number];

const vocabFileName = (name: RealVocabName) => `models/ggml-vocab-${name}.gguf`;

let extracted: string | null = null;

/** The folder holding the vocabulary files and their test vectors (extracted on first use). */
export async function realVocabDir(): Promise<string> {
  if (extracted) return extracted;
  const { extractFromLlamaBundle, llamaSourceInfo } = await llamaSource();
  const { release } = llamaSourceInfo(ROOT);
  const files = REAL_VOCABS.flatMap((name) => [vocabFileName(name), `${vocabFileName(name)}.inp`, `${vocabFileName(name)}.out`]);
  // The folder's name says which files it holds: another list extracts into another folder.
  const key = createHash('sha256').update(files.join('\n')).digest('hex').slice(0, 8);
  const dir = path.join(ROOT, '.cache', 'llama-vocab', `llama.cpp-${release}-${key}`);
  extracted = extractFromLlamaBundle(ROOT, dir, files, vocabFileName(REAL_VOCABS[REAL_VOCABS.length - 1]!));
  return extracted;
}

export async function realVocabFile(name: RealVocabName): Promise<string> {
  return path.join(await realVocabDir(), vocabFileName(name));
}

/** llama.cpp's tokenizer test vectors of a vocabulary, split as tests/test-tokenizer-0.cpp splits them. */
export async function tokenizerVectors(name: RealVocabName): Promise<{ text: string; ids: number[] }[]> {
  const file = await realVocabFile(name);
  const inputs = readFileSync(`${file}.inp`, 'utf8').split('\n__ggml_vocab_test__\n');
  // A file that ends with the separator has no empty test after it.
  if (inputs[inputs.length - 1] === '') inputs.pop();
  const outputs = readFileSync(`${file}.out`, 'utf8').split('\n');
  // getline: a final newline ends the last line rather than starting an empty one.
  if (outputs[outputs.length - 1] === '') outputs.pop();
  if (inputs.length !== outputs.length) throw new Error(`${name}: ${inputs.length} test inputs but ${outputs.length} outputs`);
  return inputs.map((text, i) => ({
    text,
    ids: outputs[i]!.trim() === '' ? [] : outputs[i]!.trim().split(' ').map(Number),
  }));
}

// ---------------------------------------------------------------------------------------------
// Variants: the vocabularies of published models

/** GGUF token types (llama.cpp's LLAMA_TOKEN_TYPE_*). */
export const TokenType = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

interface EditableVocab {
  tokens: string[];
  types: number[];
  /** tokenizer.ggml.scores (SentencePiece vocabularies). */
  scores: number[] | null;
  /** The other tokenizer.* keys, by key. */
  keys: Map<string, KvEntry>;
}

export interface VocabVariant {
  base: RealVocabName;
  /** What it is and where its tokens come from. */
  about: string;
  edit?: (v: EditableVocab) => void;
}

/**
 * Qwen2.5's added tokens from id 151,646 on, after <|endoftext|> <|im_start|> <|im_end|> (151,643-151,645,
 * already in llama.cpp's qwen2 vocabulary): tokenizer_config.json `added_tokens_decoder` of
 * Qwen/Qwen2.5-Coder-1.5B (the same in every Qwen2.5 and Qwen2.5-Coder size). 151,646-151,656 are
 * `"special": true`; <tool_call> </tool_call> and the FIM and repository tokens (151,657-151,664) are
 * `"special": false`. llama.cpp's converter (conversion/base.py get_vocab_base) writes an added token
 * as CONTROL when it is special or looks special (`<|...|>`), else USER_DEFINED; the rows past the
 * tokenizer's last token (the embedding matrix is padded: 151,936 rows in the 0.5B/1.5B/3B, 152,064 in
 * the 7B) as `[PAD<id>]`, UNUSED.
 */
const QWEN25_ADDED: readonly (readonly [string, number])[] = [
  ...[
    '<|object_ref_start|>',
    '<|object_ref_end|>',
    '<|box_start|>',
    '<|box_end|>',
    '<|quad_start|>',
    '<|quad_end|>',
    '<|vision_start|>',
    '<|vision_end|>',
    '<|vision_pad|>',
    '<|image_pad|>',
    '<|video_pad|>',
  ].map((t) => [t, TokenType.CONTROL] as const),
  ['<tool_call>', TokenType.USER_DEFINED],
  ['</tool_call>', TokenType.USER_DEFINED],
  ...['<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>'].map((t) => [t, TokenType.CONTROL] as const),
];
export const QWEN25_FIRST_ADDED = 151_646;

const qwen25 =
  (rows: number) =>
  (v: EditableVocab): void => {
    QWEN25_ADDED.forEach(([text, type], i) => {
      v.tokens[QWEN25_FIRST_ADDED + i] = text;
      v.types[QWEN25_FIRST_ADDED + i] = type;
    });
    for (let id = QWEN25_FIRST_ADDED + QWEN25_ADDED.length; id < rows; id++) {
      v.tokens[id] = `[PAD${id}]`;
      v.types[id] = TokenType.UNUSED;
    }
    v.tokens.length = rows;
    v.types.length = rows;
    // The published GGUFs (Qwen/Qwen2.5-Coder-*-GGUF) say add_bos_token = false; they carry no FIM id
    // keys (llama.cpp finds the FIM tokens by their texts).
    v.keys.set('tokenizer.ggml.add_bos_token', { key: 'tokenizer.ggml.add_bos_token', type: 'bool', value: false });
  };

/**
 * CodeLlama's 16 tokens after Llama 2's 32,000 (its tokenizer.model has 32,016 pieces): the FIM tokens
 * ▁<PRE> ▁<SUF> ▁<MID> ▁<EOT> at 32,007-32,010 (Meta's codellama/llama/tokenizer.py reads their ids with
 * sp_model.piece_to_id("▁<PRE>") ...), the partial pieces SentencePiece's BPE merges them from
 * before them, and runs of <EOT> after (the list as the llama16 vocabulary of CodeLlama-13B shows it).
 * They are ordinary pieces of the SentencePiece model: NORMAL, score 0 (assumed: the published GGUFs'
 * scores for these pieces were not at hand; llama.cpp marks the FIM ones CONTROL at load anyway).
 */
export const CODELLAMA_ADDED = [
  '▁<SU',
  '▁<SUF',
  '▁<PRE',
  '▁<M',
  '▁<MID',
  '▁<E',
  '▁<EOT',
  '▁<PRE>',
  '▁<SUF>',
  '▁<MID>',
  '▁<EOT>',
  '▁<EOT><EOT>',
  '▁<EOT><EOT><EOT>',
  '▁<EOT><EOT><EOT><EOT>',
  '▁<EOT><EOT><EOT><EOT><EOT>',
  '▁<EOT><EOT><EOT><EOT><EOT><EOT>',
] as const;

export const VOCAB_VARIANTS = {
  'qwen2.5-coder-1.5b': { base: 'qwen2', about: 'Qwen2.5-Coder 0.5B/1.5B/3B: qwen2 + FIM and repository tokens at 151,659-151,664, 151,936 rows', edit: qwen25(151_936) },
  'qwen2.5-coder-7b': { base: 'qwen2', about: 'Qwen2.5-Coder 7B: the same tokens, padded to 152,064 rows', edit: qwen25(152_064) },
  codellama: {
    base: 'llama-spm',
    about: 'CodeLlama: llama-spm + ▁<PRE> ▁<SUF> ▁<MID> ▁<EOT> at 32,007-32,010 (32,016 tokens)',
    edit: (v: EditableVocab) => {
      for (const text of CODELLAMA_ADDED) {
        v.tokens.push(text);
        v.types.push(TokenType.NORMAL);
        v.scores?.push(0);
      }
    },
  },
  'deepseek-coder': { base: 'deepseek-coder', about: 'DeepSeek-Coder (32,256 tokens, full-width FIM tokens)' },
  starcoder2: { base: 'starcoder', about: 'StarCoder2 (49,152 tokens, FIM, repository and file tokens)' },
  refact: { base: 'refact', about: 'Refact (49,216 tokens, FIM)' },
  qwen2: { base: 'qwen2', about: 'Qwen2 base vocabulary (no FIM tokens)' },
  'llama-spm': { base: 'llama-spm', about: 'Llama 2 SentencePiece (no FIM tokens)' },
  'llama-bpe': { base: 'llama-bpe', about: 'Llama 3 byte-level BPE (no FIM tokens)' },
  'phi-3': { base: 'phi-3', about: 'Phi-3 SentencePiece (no FIM tokens)' },
  'gpt-2': { base: 'gpt-2', about: 'GPT-2 (no FIM tokens)' },
} satisfies Record<string, VocabVariant>;
export type VariantName = keyof typeof VOCAB_VARIANTS;

/** Bump when a variant's tokens or the way they are written change (the cache key). */
const VARIANTS_VERSION = 1;

function kvEntry(kv: GgufKv): KvEntry {
  const scalar: Partial<Record<number, 'u32' | 'i32' | 'f32'>> = { [GgufValueType.UINT32]: 'u32', [GgufValueType.INT32]: 'i32', [GgufValueType.FLOAT32]: 'f32' };
  if (kv.type === GgufValueType.STRING) return { key: kv.key, type: 'string', value: kv.value as string };
  if (kv.type === GgufValueType.BOOL) return { key: kv.key, type: 'bool', value: kv.value as boolean };
  if (scalar[kv.type]) return { key: kv.key, type: scalar[kv.type]!, value: kv.value as number };
  if (kv.type === GgufValueType.ARRAY) {
    if (kv.elementType === GgufValueType.STRING) return { key: kv.key, type: 'array', elementType: 'string', value: kv.value as string[] };
    const element = scalar[kv.elementType ?? -1];
    if (element) return { key: kv.key, type: 'array', elementType: element, value: kv.value as number[] };
  }
  throw new Error(`cannot copy ${kv.key} (GGUF type ${kv.type})`);
}

/** A variant's tokenizer metadata: every tokenizer.* key of its vocabulary file, edited. */
export async function variantTokenizerKeys(variant: VariantName): Promise<KvEntry[]> {
  const spec: VocabVariant = VOCAB_VARIANTS[variant];
  const meta = await readGgufMetadata(await realVocabFile(spec.base));
  const keys = new Map<string, KvEntry>();
  for (const kv of meta.kv.values()) if (kv.key.startsWith('tokenizer.')) keys.set(kv.key, kvEntry(kv));
  const array = (key: string) => (keys.get(key) as { value: unknown[] } | undefined)?.value.slice();
  const vocab: EditableVocab = {
    tokens: array('tokenizer.ggml.tokens') as string[],
    types: (array('tokenizer.ggml.token_type') as number[] | undefined) ?? [],
    scores: (array('tokenizer.ggml.scores') as number[] | undefined) ?? null,
    keys,
  };
  spec.edit?.(vocab);
  keys.set('tokenizer.ggml.tokens', { key: 'tokenizer.ggml.tokens', type: 'array', elementType: 'string', value: vocab.tokens });
  keys.set('tokenizer.ggml.token_type', { key: 'tokenizer.ggml.token_type', type: 'array', elementType: 'i32', value: vocab.types });
  if (vocab.scores) keys.set('tokenizer.ggml.scores', { key: 'tokenizer.ggml.scores', type: 'array', elementType: 'f32', value: vocab.scores });
  // Chat templates are not the tokenizer: left out.
  return [...keys.values()].filter((kv) => !kv.key.startsWith('tokenizer.chat_template'));
}

/** The writer's own tokenizer keys, all replaced by the variant's (which may lack some on purpose). */
const WRITER_TOKENIZER_KEYS = [
  'tokenizer.ggml.model',
  'tokenizer.ggml.pre',
  'tokenizer.ggml.tokens',
  'tokenizer.ggml.token_type',
  'tokenizer.ggml.merges',
  'tokenizer.ggml.bos_token_id',
  'tokenizer.ggml.eos_token_id',
  'tokenizer.ggml.add_bos_token',
  'tokenizer.ggml.add_eos_token',
  'tokenizer.ggml.fim_pre_token_id',
  'tokenizer.ggml.fim_suf_token_id',
  'tokenizer.ggml.fim_mid_token_id',
];

export type BodyOptions = Omit<RandomLlamaOptions, 'vocab' | 'extraKeys' | 'omitKeys' | 'vocabMutation' | 'extraTokens' | 'specialTokens' | 'fimTokens' | 'fim'>;

/** The default body: small enough that a 152k-token vocabulary makes a file of a few MB. */
export const TINY_BODY: BodyOptions = { seed: 37, dModel: 16, nLayers: 1, nHeads: 2, ffn: 32, contextLength: 512 };

/**
 * A random-weight llama model carrying a variant's real vocabulary (cached in test-output/models/;
 * its name keys the llama.cpp release, the variant and the body).
 */
export async function realVocabModel(variant: VariantName, body: BodyOptions = TINY_BODY): Promise<string> {
  const { release } = (await llamaSource()).llamaSourceInfo(ROOT);
  const key = createHash('sha256')
    .update(JSON.stringify([GGUF_WRITER_VERSION, VARIANTS_VERSION, release, variant, body]))
    .digest('hex')
    .slice(0, 16);
  const file = path.join(TEST_MODEL_DIR, 'real-vocab', `${variant}-${key}.gguf`);
  return ensureCachedModel(file, async (tmp) => {
    const keys = await variantTokenizerKeys(variant);
    const tokens = (keys.find((kv) => kv.key === 'tokenizer.ggml.tokens') as { value: string[] }).value;
    await writeRandomLlamaModel(tmp, {
      name: `${variant} (real vocabulary, random weights)`,
      ...body,
      // Only its size matters: the tokenizer keys come from extraKeys.
      vocab: { tokens, merges: [], bos: 0, eos: 0 },
      omitKeys: WRITER_TOKENIZER_KEYS,
      extraKeys: keys,
    });
  });
}

/**
 * A variant's tokenizer as llama.cpp loads it (vocabulary only, no weights, on the CPU), loaded before
 * the suite that calls this and freed after it; call it inside the describe().
 */
export function vocabOnlyModel(variant: VariantName): { readonly model: LlamaModel } {
  let model: LlamaModel | undefined;
  before(async () => {
    const llama = await getRuntime({ gpu: 'cpu' }, 1, () => undefined);
    model = await llama.loadModel({ modelPath: await realVocabModel(variant), vocabOnly: true });
  });
  after(async () => {
    await model?.dispose();
  });
  return {
    get model() {
      if (!model) throw new Error('the vocabulary is not loaded (use it inside its describe)');
      return model;
    },
  };
}
