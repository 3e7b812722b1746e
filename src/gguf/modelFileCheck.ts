/**
 * Validate a GGUF model file before node-llama-cpp loads it.
 *
 * llama.cpp aborts the whole process (GGML_ASSERT -> SIGABRT) on some malformed files, e.g. a
 * llama model without `llama.attention.head_count` or `feed_forward_length`, or a vocabulary with
 * duplicate token texts, and divides by zero on a zero head count. inspectModelFile checks those
 * and the other common problems (missing keys, truncated downloads, wrong file) up front and
 * reports them as ModelFileErrors with readable messages. Plain node:fs, no native code.
 */
import * as path from 'node:path';
import { GgufValueType, ModelFileError, formatBytes, ggufValueTypeName, printableName, readGgufMetadata } from './ggufReader';
import type { GgufKv, GgufMetadata, GgufReadLimits, GgufValue } from './ggufReader';

export { ModelFileError } from './ggufReader';
export type { ModelFileErrorCode } from './ggufReader';

export interface FimTokenIds {
  prefix: number;
  suffix: number;
  middle: number;
}

export interface ModelFileInfo {
  path: string;
  fileSize: number;
  architecture: string;
  /** general.name */
  name: string | null;
  contextLength: number;
  embeddingLength: number;
  blockCount: number;
  /** Largest value when the file has per-layer values. */
  feedForwardLength: number;
  /** Largest value when the file has per-layer values. */
  headCount: number;
  /** attention.head_count_kv, or headCount when absent. */
  headCountKv: number;
  vocabSize: number;
  /** tokenizer.ggml.model, e.g. "gpt2" (byte-level BPE) or "llama" (SentencePiece). */
  tokenizerModel: string;
  /** tokenizer.ggml.pre, e.g. "qwen2", or null. */
  tokenizerPre: string | null;
  /** Token ids as llama.cpp resolves them: the key when valid, else the tokenizer's default. */
  bos: number | null;
  eos: number | null;
  addBos: boolean | null;
  addEos: boolean | null;
  fim: FimTokenIds | null;
  tokens: string[];
  /** tokenizer.ggml.token_type (1 normal, 3 control, ...), or null. */
  tokenTypes: number[] | null;
  /** general.file_type, or null. */
  fileType: number | null;
  tensorCount: number;
  /** Non-fatal oddities (ignored special token ids, ...). */
  warnings: string[];
}

export interface InspectOptions {
  /** Throw ModelFileError 'no_fim' when the model has no fill-in-the-middle tokens. */
  requireFim?: boolean;
  limits?: Partial<GgufReadLimits>;
}

const INT_TYPES = new Set<number>([
  GgufValueType.UINT8,
  GgufValueType.INT8,
  GgufValueType.UINT16,
  GgufValueType.INT16,
  GgufValueType.UINT32,
  GgufValueType.INT32,
  GgufValueType.UINT64,
  GgufValueType.INT64,
]);

/** Token texts llama.cpp recognises as FIM tokens when no id key is present (llama-vocab.cpp). */
const FIM_TEXTS = {
  prefix: ['<|fim_prefix|>', '<fim-prefix>', '<fim_prefix>', '<｜fim▁begin｜>', '<PRE>', '▁<PRE>', '<|code_prefix|>', '<|prefix|>'],
  suffix: ['<|fim_suffix|>', '<fim-suffix>', '<fim_suffix>', '<｜fim▁hole｜>', '<SUF>', '▁<SUF>', '<|code_suffix|>', '<|suffix|>'],
  middle: ['<|fim_middle|>', '<fim-middle>', '<fim_middle>', '<｜fim▁end｜>', '<MID>', '▁<MID>', '<|code_middle|>', '<|middle|>'],
} as const;

const FIM_KEYS = {
  prefix: ['tokenizer.ggml.fim_pre_token_id', 'tokenizer.ggml.prefix_token_id'],
  suffix: ['tokenizer.ggml.fim_suf_token_id', 'tokenizer.ggml.suffix_token_id'],
  middle: ['tokenizer.ggml.fim_mid_token_id', 'tokenizer.ggml.middle_token_id'],
} as const;

/** llama.cpp vocabulary type of a tokenizer.ggml.model value. */
function vocabType(model: string): string {
  switch (model) {
    case 'llama':
      return 'spm';
    case 'gpt2':
    case 'hybriddna':
    case 'whitespace':
      return 'bpe';
    case 'bert':
      return 'wpm';
    case 't5':
      return 'ugm';
    case 'rwkv':
      return 'rwkv';
    case 'no_vocab':
    case 'none':
      return 'none';
    default:
      return model;
  }
}

/** llama.cpp's defaults for a tokenizer model (llama-vocab.cpp, load()). */
function tokenizerDefaults(model: string): { bos: number | null; eos: number | null; addBos: boolean | null; addEos: boolean | null } {
  switch (vocabType(model)) {
    case 'spm':
      return { bos: 1, eos: 2, addBos: true, addEos: false };
    case 'bpe':
      return { bos: 11, eos: 11, addBos: false, addEos: false };
    case 'wpm':
      return { bos: 101, eos: null, addBos: true, addEos: false };
    case 'ugm':
      return { bos: null, eos: 1, addBos: false, addEos: true };
    case 'rwkv':
      return { bos: null, eos: null, addBos: false, addEos: false };
    default:
      return { bos: null, eos: null, addBos: null, addEos: null };
  }
}

/**
 * Read and validate a GGUF model file. Throws ModelFileError (code not_found, not_a_file,
 * unreadable, not_gguf, unsupported_version, truncated, missing_key, invalid, and no_fim when
 * options.requireFim is set) with a message naming the file and the problem.
 */
export async function inspectModelFile(filePath: string, options: InspectOptions = {}): Promise<ModelFileInfo> {
  const meta = await readGgufMetadata(filePath, options.limits);
  return validateGgufMetadata(meta, options);
}

/** The checks of inspectModelFile on already-read metadata. */
export function validateGgufMetadata(meta: GgufMetadata, options: InspectOptions = {}): ModelFileInfo {
  const filePath = meta.path;
  const base = path.basename(filePath);
  const warnings: string[] = [];

  const missing = (key: string, extra = ''): never => {
    throw new ModelFileError('missing_key', filePath, `${base} lacks required key ${key}${extra}`);
  };
  const invalid = (what: string): never => {
    throw new ModelFileError('invalid', filePath, `${base} is not a usable model: ${what}`);
  };
  const typeName = (kv: GgufKv): string => (kv.type === GgufValueType.ARRAY ? `array of ${ggufValueTypeName(kv.elementType ?? -1)}` : ggufValueTypeName(kv.type));

  // llama.cpp rejects arrays of arrays in any key.
  for (const kv of meta.kv.values()) {
    if (kv.type === GgufValueType.ARRAY && kv.elementType === GgufValueType.ARRAY) invalid(`metadata key ${printableName(kv.key)} is an array of arrays, which llama.cpp cannot load`);
  }

  const getString = (key: string, required: boolean): string | null => {
    const kv = meta.kv.get(key);
    if (!kv) return required ? missing(key) : null;
    if (kv.type !== GgufValueType.STRING) invalid(`${key} must be a string but is a ${typeName(kv)}`);
    return kv.value as string;
  };
  const toSafeInt = (v: GgufValue): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null);
  const getU32 = (key: string, _required: true, min: number) => {
    const kv = meta.kv.get(key);
    if (!kv) return missing(key);
    // llama.cpp reads these hparams as uint32 and rejects other types.
    if (kv.type !== GgufValueType.UINT32) invalid(`${key} must be a u32 but is a ${typeName(kv)}`);
    const v = kv.value as number;
    if (v < min) invalid(`${key} is ${v}, must be at least ${min}`);
    return v;
  };
  /** A u32, or a per-layer array of u32/i32 (llama.cpp get_key_or_arr). Returns the max. */
  const getU32OrArray = (key: string, blockCount: number, required: boolean): number | null => {
    const kv = meta.kv.get(key);
    if (!kv) return required ? missing(key) : null;
    if (kv.type === GgufValueType.UINT32) {
      const v = kv.value as number;
      if (v < 1) invalid(`${key} is ${v}, must be at least 1`);
      return v;
    }
    if (kv.type === GgufValueType.ARRAY && (kv.elementType === GgufValueType.UINT32 || kv.elementType === GgufValueType.INT32)) {
      const arr = kv.value as number[];
      if (arr.length !== blockCount) invalid(`${key} has ${arr.length} per-layer values but the model has ${blockCount} layers`);
      const max = arr.reduce((a, b) => Math.max(a, b), 0);
      if (max < 1) invalid(`${key} has no positive value`);
      return max;
    }
    return invalid(`${key} must be a u32 or an array of u32 but is a ${typeName(kv)}`);
  };
  const getInt = (key: string): number | null => {
    const kv = meta.kv.get(key);
    if (!kv) return null;
    if (!INT_TYPES.has(kv.type)) {
      warnings.push(`${key} is a ${typeName(kv)}, not an integer; ignored`);
      return null;
    }
    return toSafeInt(kv.value);
  };
  const getBool = (key: string): boolean | null => {
    const kv = meta.kv.get(key);
    if (!kv) return null;
    if (kv.type !== GgufValueType.BOOL) {
      warnings.push(`${key} is a ${typeName(kv)}, not a bool; ignored`);
      return null;
    }
    return kv.value as boolean;
  };

  // ---- architecture and hyperparameters (llama-family assumption)
  const architecture = getString('general.architecture', true)!;
  if (architecture.length === 0) invalid('general.architecture is empty');
  const A = architecture;
  const contextLength = getU32(`${A}.context_length`, true, 1);
  const embeddingLength = getU32(`${A}.embedding_length`, true, 1);
  const blockCount = getU32(`${A}.block_count`, true, 1);
  const feedForwardLength = getU32OrArray(`${A}.feed_forward_length`, blockCount, true)!;
  const headCount = getU32OrArray(`${A}.attention.head_count`, blockCount, true)!;
  const headCountKv = getU32OrArray(`${A}.attention.head_count_kv`, blockCount, false) ?? headCount;
  if (!meta.kv.has(`${A}.attention.layer_norm_rms_epsilon`) && !meta.kv.has(`${A}.attention.layer_norm_epsilon`)) missing(`${A}.attention.layer_norm_rms_epsilon`);
  if (headCount % headCountKv !== 0) invalid(`${A}.attention.head_count ${headCount} is not a multiple of head_count_kv ${headCountKv}`);
  if (!meta.kv.has(`${A}.attention.key_length`) && embeddingLength % headCount !== 0) invalid(`${A}.embedding_length ${embeddingLength} is not a multiple of ${A}.attention.head_count ${headCount}`);

  // ---- tokenizer
  const tokenizerModel = getString('tokenizer.ggml.model', true)!;
  const tokenizerPre = getString('tokenizer.ggml.pre', false);
  const tokensKv = meta.kv.get('tokenizer.ggml.tokens') ?? missing('tokenizer.ggml.tokens');
  if (tokensKv.type !== GgufValueType.ARRAY || tokensKv.elementType !== GgufValueType.STRING) invalid(`tokenizer.ggml.tokens must be an array of strings but is a ${typeName(tokensKv)}`);
  const tokens = tokensKv.value as string[];
  const vocabSize = tokens.length;
  if (vocabSize === 0) invalid('tokenizer.ggml.tokens is empty');

  if (vocabType(tokenizerModel) === 'bpe' && tokenizerPre !== 'kimi-k2') {
    const merges = meta.kv.get('tokenizer.ggml.merges') ?? missing('tokenizer.ggml.merges', ` (needed by tokenizer model ${tokenizerModel})`);
    if (merges.type !== GgufValueType.ARRAY || merges.elementType !== GgufValueType.STRING) invalid(`tokenizer.ggml.merges must be an array of strings but is a ${typeName(merges)}`);
  }

  let tokenTypes: number[] | null = null;
  const ttKv = meta.kv.get('tokenizer.ggml.token_type');
  if (ttKv) {
    if (ttKv.type !== GgufValueType.ARRAY || ttKv.elementType !== GgufValueType.INT32) invalid(`tokenizer.ggml.token_type must be an array of i32 but is a ${typeName(ttKv)}`);
    tokenTypes = ttKv.value as number[];
    if (tokenTypes.length < vocabSize) invalid(`tokenizer.ggml.token_type has ${tokenTypes.length} entries for ${vocabSize} tokens`);
  }
  const scoresKv = meta.kv.get('tokenizer.ggml.scores');
  if (scoresKv) {
    if (scoresKv.type !== GgufValueType.ARRAY || (scoresKv.elementType !== GgufValueType.FLOAT32 && scoresKv.elementType !== GgufValueType.INT32))
      invalid(`tokenizer.ggml.scores must be an array of f32 but is a ${typeName(scoresKv)}`);
    if ((scoresKv.value as number[]).length < vocabSize) invalid(`tokenizer.ggml.scores has ${(scoresKv.value as number[]).length} entries for ${vocabSize} tokens`);
  }

  // Duplicate token texts trip GGML_ASSERT(id_to_token.size() == token_to_id.size()). llama.cpp
  // reads each text as a C string, so it ends at the first NUL byte ("Ġ\0\0..." is a second "Ġ"
  // there), and names an empty one [EMPTY_<id>].
  const textToId = new Map<string, number>();
  for (let i = 0; i < vocabSize; i++) {
    const nul = tokens[i]!.indexOf('\0');
    const text = (nul >= 0 ? tokens[i]!.slice(0, nul) : tokens[i]!) || `[EMPTY_${i}]`;
    const prev = textToId.get(text);
    if (prev !== undefined) {
      const cut = nul >= 0 ? ' as llama.cpp reads it (up to a NUL byte)' : '';
      invalid(`tokens ${prev} and ${i} have the same text ${printableName(JSON.stringify(text))}${cut} (llama.cpp aborts on duplicate tokens)`);
    }
    textToId.set(text, i);
  }

  const defaults = tokenizerDefaults(tokenizerModel);
  const specialId = (key: string, fallback: number | null): number | null => {
    const v = getInt(key);
    if (v === null) return fallback !== null && fallback < vocabSize ? fallback : null;
    if (v < 0 || v >= vocabSize) {
      warnings.push(`${key} = ${v} is outside the vocabulary of ${vocabSize} tokens; llama.cpp ignores it`);
      return fallback !== null && fallback < vocabSize ? fallback : null;
    }
    return v;
  };
  const bos = specialId('tokenizer.ggml.bos_token_id', defaults.bos);
  const eos = specialId('tokenizer.ggml.eos_token_id', defaults.eos);
  const addBos = getBool('tokenizer.ggml.add_bos_token') ?? defaults.addBos;
  const addEos = getBool('tokenizer.ggml.add_eos_token') ?? defaults.addEos;

  // ---- FIM: id keys, then older key names, then well-known token texts
  const fimRole = (role: keyof typeof FIM_KEYS): number | null => {
    for (const key of FIM_KEYS[role]) {
      const id = specialId(key, null);
      if (id !== null) return id;
    }
    for (const text of FIM_TEXTS[role]) {
      const id = textToId.get(text);
      if (id !== undefined) return id;
    }
    return null;
  };
  const pre = fimRole('prefix');
  const suf = fimRole('suffix');
  const mid = fimRole('middle');
  const fim = pre !== null && suf !== null && mid !== null ? { prefix: pre, suffix: suf, middle: mid } : null;
  if (fim === null && options.requireFim) {
    const lacking = [pre === null && 'prefix', suf === null && 'suffix', mid === null && 'middle'].filter(Boolean);
    throw new ModelFileError('no_fim', filePath, `${base} has no fill-in-the-middle tokens (no ${lacking.join('/')} token), so it cannot complete code between a prefix and a suffix`);
  }

  // ---- tensors: aligned and inside the file
  for (const t of meta.tensors) {
    if (t.name.length >= 64) invalid(`tensor name ${printableName(t.name)} is longer than 63 bytes`);
    if (t.offset % meta.alignment !== 0) invalid(`tensor ${printableName(t.name)} has offset ${t.offset}, not a multiple of the alignment ${meta.alignment}`);
    if (t.byteSize === null) continue; // unknown ggml type: cannot size it
    const end = meta.dataOffset + t.offset + t.byteSize;
    if (end > meta.fileSize)
      throw new ModelFileError('truncated', filePath, `${base} is truncated: tensor ${printableName(t.name)} needs bytes up to ${formatBytes(end)} but the file has ${formatBytes(meta.fileSize)}`);
  }

  const name = meta.kv.get('general.name');
  return {
    path: filePath,
    fileSize: meta.fileSize,
    architecture,
    name: name && name.type === GgufValueType.STRING ? (name.value as string) : null,
    contextLength,
    embeddingLength,
    blockCount,
    feedForwardLength,
    headCount,
    headCountKv,
    vocabSize,
    tokenizerModel,
    tokenizerPre,
    bos,
    eos,
    addBos,
    addEos,
    fim,
    tokens,
    tokenTypes,
    fileType: getInt('general.file_type'),
    tensorCount: meta.tensorCount,
    warnings,
  };
}

/** Throw 'no_fim' unless the model has fill-in-the-middle tokens. */
export function assertFimSupported(info: ModelFileInfo): FimTokenIds {
  if (info.fim) return info.fim;
  throw new ModelFileError('no_fim', info.path, `${path.basename(info.path)} has no fill-in-the-middle tokens, so it cannot complete code between a prefix and a suffix`);
}

export type VocabularyCompatibility = { compatible: true } | { compatible: false; reason: string };

/** Largest vocabulary size difference llama.cpp accepts for speculation. */
export const MAX_VOCAB_SIZE_DIFFERENCE = 128;
/** llama.cpp compares token texts from this id on. */
export const VOCAB_CHECK_START_TOKEN_ID = 5;

/**
 * Whether draft can speculate for target, by llama.cpp's own rule
 * (common_speculative_are_compatible): same vocabulary type; same add_bos (and the same bos id
 * when it is added); same add_eos (and eos id when added); sizes within 128; identical token
 * text from id 5 up to the smaller vocabulary.
 */
export function checkVocabularyCompatible(target: ModelFileInfo, draft: ModelFileInfo): VocabularyCompatibility {
  const no = (reason: string): VocabularyCompatibility => ({ compatible: false, reason });
  if (vocabType(target.tokenizerModel) !== vocabType(draft.tokenizerModel)) return no(`tokenizer types differ: target uses "${target.tokenizerModel}", draft uses "${draft.tokenizerModel}"`);
  if (target.addBos !== draft.addBos) return no(`add_bos differs: target ${target.addBos}, draft ${draft.addBos}`);
  if (target.addBos && target.bos !== draft.bos) return no(`bos token differs: target ${target.bos}, draft ${draft.bos}`);
  if (target.addEos !== draft.addEos) return no(`add_eos differs: target ${target.addEos}, draft ${draft.addEos}`);
  if (target.addEos && target.eos !== draft.eos) return no(`eos token differs: target ${target.eos}, draft ${draft.eos}`);
  const diff = Math.abs(target.vocabSize - draft.vocabSize);
  if (diff > MAX_VOCAB_SIZE_DIFFERENCE) return no(`vocabulary sizes differ by ${diff} (target ${target.vocabSize}, draft ${draft.vocabSize}; at most ${MAX_VOCAB_SIZE_DIFFERENCE} allowed)`);
  const n = Math.min(target.vocabSize, draft.vocabSize);
  const text = (t: string, i: number) => (t === '' ? `[EMPTY_${i}]` : t);
  for (let i = VOCAB_CHECK_START_TOKEN_ID; i < n; i++) {
    const a = text(target.tokens[i]!, i);
    const b = text(draft.tokens[i]!, i);
    if (a !== b) return no(`token ${i} differs: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
  return { compatible: true };
}
