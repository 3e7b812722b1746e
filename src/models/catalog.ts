import type { NextEditFormatId } from '../nextEdit/types';

/**
 * Real code models users can download: Qwen2.5-Coder base models (fill-in-the-middle tokens, one
 * shared tokenizer across sizes, so the 0.5B drafts for every larger one), Q8_0 GGUF as published
 * by ggml-org (the files llama.vscode recommends).
 *
 * Each entry names the repository commit as well as the file (`hf:user/repo/file.gguf#<commit>`):
 * the bytes a user gets are the ones Draftline was tried with, not whatever `main` holds today. The
 * first successful download records the file's sha256 and size in the download index; a later
 * download of the same entry must give the same bytes (src/inference/modelDownloader.ts). An entry
 * that names its sha256 (the next-edit models below, from the hub's LFS pointers) is checked against
 * it from the first download on.
 */
export interface CatalogModel {
  id: string;
  name: string;
  /** The hub URI, revision included: what the settings hold once the model is chosen. */
  uri: string;
  /** The repository commit the file is taken from. */
  revision: string;
  sizeBytes: number;
  params: string;
  /**
   * The file's sha256 where the catalog pins it (the hub's Git LFS pointer for the file at
   * `revision`): checked from the very first download on. Without it the first download records the
   * hash the hub announced and later downloads must match that (trust on first use).
   */
  sha256?: string;
  /** The model's licence, as its repository declares it. */
  licence?: string;
}

/** A model trained for next-edit suggestions, with the prompt layout it was trained on. */
export interface NextEditCatalogModel extends CatalogModel {
  sha256: string;
  licence: string;
  format: NextEditFormatId;
  /**
   * What it takes in memory while loaded: the weights, the KV cache of a next-edit context
   * (NEXT_EDIT_CONTEXT tokens, f16) and llama.cpp's compute buffers.
   */
  memoryBytes: number;
  /** What its GGUF says of its body and tokenizer: a local file chosen in its place must say the same. */
  gguf: ModelShape;
}

/** A GGUF's general.architecture, tokenizer (tokenizer.ggml.model and .pre) and vocabulary rows. */
export interface ModelShape {
  architecture: string;
  tokenizer: string;
  tokenizerPre: string;
  vocabSize: number;
}

/**
 * Qwen2.5-Coder's GGUFs: the qwen2 body, its byte-level BPE tokenizer, and its vocabulary padded to
 * the embedding's rows (151,936 for 0.5B-3B, 152,064 for 7B; testbed/realVocab.ts).
 */
const qwenShape = (vocabSize: number): ModelShape => ({ architecture: 'qwen2', tokenizer: 'gpt2', tokenizerPre: 'qwen2', vocabSize });

const qwen = (params: string, revision: string, sizeBytes: number): CatalogModel => ({
  id: `qwen2.5-coder-${params.toLowerCase()}-q8_0`,
  name: `Qwen2.5-Coder ${params} (Q8_0)`,
  uri: `hf:ggml-org/Qwen2.5-Coder-${params}-Q8_0-GGUF/qwen2.5-coder-${params.toLowerCase()}-q8_0.gguf#${revision}`,
  revision,
  sizeBytes,
  params,
});

// The commits of ggml-org's repositories that hold these files, and the files' sizes in bytes.
export const CATALOG = {
  draft05: qwen('0.5B', '5788aee90e725673490be18f553d234feaa8303d', 531_068_128),
  target15: qwen('1.5B', '8be1b8a895a84beea772817caaa71eba6b6e0d07', 1_646_573_056),
  target3: qwen('3B', '9c1de162ae417c9c3aacde97c729c4128de047d8', 3_285_476_160),
  target7: qwen('7B', 'bca77e0a8c88fc224882bcc404170c3ef17efacc', 8_098_525_600),
} as const;

export interface RecommendedPair {
  target: CatalogModel;
  draft: CatalogModel;
  /** Why this pair, in a sentence for the notification. */
  reason: string;
}

export interface MachineMemory {
  /** Total VRAM of the GPU node-llama-cpp would use; 0 without one (or on CPU). */
  vramBytes: number;
  /** Total system RAM. */
  ramBytes: number;
  /** True when VRAM is the same memory as RAM (Apple silicon). */
  unifiedMemory?: boolean;
}

const GB = 1e9;
/** Room kept for the KV caches of both models, the compute buffers and everything else running. */
const HEADROOM = 1.5 * GB;

/**
 * The largest target that fits next to the 0.5B draft: in VRAM when there is a GPU, else in a sixth
 * of the RAM (a CPU is bandwidth-bound: bigger targets get slow long before they stop fitting).
 */
export function recommendPair(machine: MachineMemory): RecommendedPair {
  const draft = CATALOG.draft05;
  const onGpu = machine.vramBytes > 0;
  const budget = onGpu ? machine.vramBytes * (machine.unifiedMemory ? 0.6 : 1) : machine.ramBytes / 6;
  const where = onGpu ? `${(machine.vramBytes / GB).toFixed(0)} GB of GPU memory` : `${(machine.ramBytes / GB).toFixed(0)} GB of RAM and no GPU`;
  // On a CPU every token streams the whole target from RAM: 7B is too slow to type against.
  const targets = onGpu ? [CATALOG.target7, CATALOG.target3, CATALOG.target15] : [CATALOG.target3, CATALOG.target15];
  for (const target of targets) {
    if (target.sizeBytes + draft.sizeBytes + HEADROOM <= budget) {
      return { target, draft, reason: `fits in ${where}` };
    }
  }
  return { target: CATALOG.target15, draft, reason: `the smallest pair; ${where} is tight` };
}

/** The next-edit catalog entry a URI names (see catalogModelByUri). */
export function nextEditModelByUri(uri: string): NextEditCatalogModel | undefined {
  const model = catalogModelByUri(uri);
  return Object.values(NEXT_EDIT_CATALOG).find((m) => m === model);
}

/** The catalog entry a URI names: exactly (pinned), or as settings written before revisions were named hold it. */
export function catalogModelByUri(uri: string, options: { exact?: boolean } = {}): CatalogModel | undefined {
  const value = uri.trim();
  return ALL_MODELS.find((m) => m.uri === value || (!options.exact && m.uri.slice(0, m.uri.indexOf('#')) === value));
}

// ---------------------------------------------------------------------------------------------
// Next-edit models

/** The context a next-edit prompt is given (history, file context, the window twice over). */
export const NEXT_EDIT_CONTEXT = 8192;
/** llama.cpp's compute buffers for a Qwen2-vocabulary model (the logits of a 512-token batch alone are 311 MB). */
const COMPUTE_BYTES = 0.4 * GB;

/**
 * Memory of a loaded next-edit model: weights + f16 KV cache (layers x KV heads x head size x 2
 * (K and V) x 2 bytes a token) + compute buffers.
 */
function nextEditMemory(sizeBytes: number, shape: { layers: number; kvHeads: number; headDim: number }): number {
  const kvPerToken = shape.layers * shape.kvHeads * shape.headDim * 2 * 2;
  return sizeBytes + kvPerToken * NEXT_EDIT_CONTEXT + COMPUTE_BYTES;
}

/** Qwen2.5-Coder's shapes (config.json of Qwen/Qwen2.5-Coder-1.5B and -7B): both next-edit models are fine-tunes of them. */
const QWEN_1_5B_SHAPE = { layers: 28, kvHeads: 2, headDim: 128 };
const QWEN_7B_SHAPE = { layers: 28, kvHeads: 4, headDim: 128 };

/**
 * Next-edit models, pinned by repository commit AND sha256 (both from the hub: the commit that
 * holds the file, and the sha256 and size of its Git LFS pointer).
 *
 * - Sweep Next-Edit 1.5B: Sweep's own and only GGUF (Q8_0), Apache-2.0, a fine-tune of
 *   Qwen2.5-Coder-1.5B: it has Qwen2.5-Coder's tokenizer, so the 0.5B completion draft
 *   (CATALOG.draft05) drafts for it. https://huggingface.co/sweepai/sweep-next-edit-1.5B
 * - Zeta (Zed Industries), a fine-tune of Qwen2.5-Coder-7B, Apache-2.0. Zed publishes no GGUF; this
 *   is bartowski's Q4_K_M quantization (the one Zed's users run through Ollama and llama-server):
 *   https://huggingface.co/bartowski/zed-industries_zeta-GGUF (of https://huggingface.co/zed-industries/zeta).
 *   Q4_K_M rather than Q8_0: 4.7 GB instead of 8.1 GB puts it on 8 GB GPUs.
 */
const sweep15Size = 1_537_269_856;
const zeta7Size = 4_683_071_456;
export const NEXT_EDIT_CATALOG = {
  sweep15: {
    id: 'sweep-next-edit-1.5b-q8_0',
    name: 'Sweep Next-Edit 1.5B (Q8_0)',
    uri: 'hf:sweepai/sweep-next-edit-1.5B/sweep-next-edit-1.5b.q8_0.v2.gguf#409016591c6c1a94f545f22328a85a3516118f34',
    revision: '409016591c6c1a94f545f22328a85a3516118f34',
    sizeBytes: sweep15Size,
    sha256: '1321ea5e5d7529e60f9770c6a0b3a965f89542d16cf4ae51bab267f6a88150da',
    params: '1.5B',
    licence: 'Apache-2.0',
    format: 'sweep',
    memoryBytes: nextEditMemory(sweep15Size, QWEN_1_5B_SHAPE),
    gguf: qwenShape(151_936),
  },
  zeta7: {
    id: 'zeta-7b-q4_k_m',
    name: 'Zeta 7B (Q4_K_M)',
    uri: 'hf:bartowski/zed-industries_zeta-GGUF/zed-industries_zeta-Q4_K_M.gguf#94648ab49b06ec97ca344a3a5bc108e207fb6ac5',
    revision: '94648ab49b06ec97ca344a3a5bc108e207fb6ac5',
    sizeBytes: zeta7Size,
    sha256: 'b960ab01db43997a20cc69e95c1fd017c657dd5aa7c7e94db8bbfb9eed0ac84c',
    params: '7B',
    licence: 'Apache-2.0',
    format: 'zeta',
    memoryBytes: nextEditMemory(zeta7Size, QWEN_7B_SHAPE),
    gguf: qwenShape(152_064),
  },
} as const satisfies Record<string, NextEditCatalogModel>;

const ALL_MODELS: readonly CatalogModel[] = [...Object.values(CATALOG), ...Object.values(NEXT_EDIT_CATALOG)];

export interface NextEditRecommendation {
  model: NextEditCatalogModel;
  /** Why this one, in a sentence. */
  reason: string;
  /** The 7B, offered beside it where a GPU has the memory for it too. */
  alternative?: { model: NextEditCatalogModel; reason: string };
}

/**
 * The next-edit model for this machine, by the completion pair's rule (the budget is the GPU's
 * memory, or a sixth of the RAM without one), next to the completion models already loaded
 * (`alongside`; a file that is the next-edit model itself counts once: it is loaded once).
 *
 * Sweep's 1.5B wherever it fits, and where nothing fits too (the smallest there is, like the
 * completion pair's fallback). The 7B is offered as the alternative only on a GPU with the memory
 * for it: on a CPU every token streams the whole model from RAM, too slow to wait for an edit, and
 * Sweep's published next-edit benchmark puts its 1.5B ahead of Zeta (67.8% vs 43.3% overall,
 * https://blog.sweep.dev/posts/oss-next-edit), so the bigger model is a choice, not the default.
 */
export function recommendNextEditModel(machine: MachineMemory, alongside: readonly CatalogModel[] = []): NextEditRecommendation {
  const onGpu = machine.vramBytes > 0;
  const budget = onGpu ? machine.vramBytes * (machine.unifiedMemory ? 0.6 : 1) : machine.ramBytes / 6;
  const where = onGpu ? `${(machine.vramBytes / GB).toFixed(0)} GB of GPU memory` : `${(machine.ramBytes / GB).toFixed(0)} GB of RAM and no GPU`;
  const besides = (model: CatalogModel) => alongside.filter((m) => m.uri !== model.uri).reduce((sum, m) => sum + m.sizeBytes, 0);
  const fits = (model: NextEditCatalogModel) => model.memoryBytes + besides(model) + HEADROOM <= budget;
  const withPair = alongside.length > 0 ? ' next to the completion models' : '';
  const sweep = NEXT_EDIT_CATALOG.sweep15;
  const zeta = NEXT_EDIT_CATALOG.zeta7;
  const recommendation: NextEditRecommendation = fits(sweep)
    ? { model: sweep, reason: `fits in ${where}${withPair}` }
    : { model: sweep, reason: `the smallest next-edit model; ${where} is tight${withPair}` };
  if (onGpu && fits(zeta)) recommendation.alternative = { model: zeta, reason: `a 7B that also fits in ${where}${withPair}` };
  return recommendation;
}
