/**
 * Real code models users can download: Qwen2.5-Coder base models (fill-in-the-middle tokens, one
 * shared tokenizer across sizes, so the 0.5B drafts for every larger one), Q8_0 GGUF as published
 * by ggml-org (the files llama.vscode recommends).
 *
 * Each entry names the repository commit as well as the file (`hf:user/repo/file.gguf#<commit>`):
 * the bytes a user gets are the ones Draftline was tried with, not whatever `main` holds today. The
 * first successful download records the file's sha256 and size in the download index; a later
 * download of the same entry must give the same bytes (src/inference/modelDownloader.ts).
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
}

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

/** The catalog entry a URI names: exactly (pinned), or as settings written before revisions were named hold it. */
export function catalogModelByUri(uri: string, options: { exact?: boolean } = {}): CatalogModel | undefined {
  const value = uri.trim();
  return Object.values(CATALOG).find((m) => m.uri === value || (!options.exact && m.uri.slice(0, m.uri.indexOf('#')) === value));
}
