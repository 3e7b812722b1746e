/**
 * Real code models users can download: Qwen2.5-Coder base models (fill-in-the-middle tokens, one
 * shared tokenizer across sizes, so the 0.5B drafts for every larger one), Q8_0 GGUF as published
 * by ggml-org (the files llama.vscode recommends).
 */
export interface CatalogModel {
  id: string;
  name: string;
  uri: string;
  sizeBytes: number;
  params: string;
}

const qwen = (params: string, sizeBytes: number): CatalogModel => ({
  id: `qwen2.5-coder-${params.toLowerCase()}-q8_0`,
  name: `Qwen2.5-Coder ${params} (Q8_0)`,
  uri: `hf:ggml-org/Qwen2.5-Coder-${params}-Q8_0-GGUF/qwen2.5-coder-${params.toLowerCase()}-q8_0.gguf`,
  sizeBytes,
  params,
});

export const CATALOG = {
  draft05: qwen('0.5B', 531_000_000),
  target15: qwen('1.5B', 1_650_000_000),
  target3: qwen('3B', 3_290_000_000),
  target7: qwen('7B', 8_100_000_000),
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

export function catalogModelByUri(uri: string): CatalogModel | undefined {
  return Object.values(CATALOG).find((m) => m.uri === uri);
}
