// How many KV sequences (prompt states) the target's context holds: from the memory a sequence takes
// (the loaded models' layers, KV heads, head size and cache type, times the context size) against
// the memory free where the context lives, capped by draftline.kvSequences. Pure: the loader gives
// it the numbers (inference/loadedPair.ts).

/** What of a model's shape decides its KV cache's size. */
export interface KvShape {
  blockCount: number;
  headCount: number;
  headCountKv: number;
  embeddingLength: number;
}

/** llama.cpp's default KV cache type (F16): bytes per stored element. */
export const F16_BYTES = 2;

/**
 * Sequences when draftline.kvSequences is "auto": two windows with a completion and a next-edit
 * prompt each (llama-server's default --parallel is 4 too).
 */
export const DEFAULT_MAX_SEQUENCES = 4;
/** The most a setting may ask for. */
export const MAX_SEQUENCES = 16;

/**
 * Share of the memory left after the weights that the sequences may take: the rest stays for the
 * compute buffers, the editor and everything else on the machine.
 */
export const KV_MEMORY_SHARE = 0.5;

/** llama.cpp pads each sequence's cells to a multiple of this (llama_context: n_ctx_seq). */
const CELL_PADDING = 256;

/** Bytes of K and V per token: every layer stores head size × KV heads values for each. */
export function kvBytesPerToken(shape: KvShape, bytesPerElement = F16_BYTES): number {
  const headSize = shape.embeddingLength / Math.max(1, shape.headCount);
  return shape.blockCount * shape.headCountKv * headSize * 2 * bytesPerElement;
}

/** The cells llama.cpp gives one sequence of a context of `contextSize` tokens. */
export function cellsPerSequence(contextSize: number): number {
  return Math.ceil(contextSize / CELL_PADDING) * CELL_PADDING;
}

export interface SequenceBudgetInput {
  /** KV bytes per token of every model that holds a sequence per prompt state (target and draft). */
  bytesPerToken: number;
  contextSize: number;
  /** Free memory where the contexts live (GPU memory, or RAM), before the weights are loaded. */
  freeBytes: number;
  /** The weights that will take part of that memory. */
  weightBytes: number;
  /** draftline.kvSequences: "auto", or a number of sequences. */
  cap: number | 'auto';
  /** Where the memory is, for the reason ("RAM", "GPU memory"). */
  memoryName: string;
}

export interface SequenceBudget {
  sequences: number;
  bytesPerSequence: number;
  /** Why this many, in words (the log and Show Stats). */
  reason: string;
}

/**
 * Where the KV cells live, for the budget: GPU memory when the models go to a GPU that reports
 * some, else RAM. A backend that names a GPU but reports none (a CPU-only machine where llama.cpp
 * picked a software Vulkan device, say) keeps its contexts in RAM: its budget is RAM's, not "0 MiB
 * of free GPU memory".
 */
export function kvMemory(onGpu: boolean, vram: { total: number; free: number } | null, ramFreeBytes: number): { freeBytes: number; memoryName: string } {
  if (onGpu && vram && vram.total > 0) return { freeBytes: vram.free, memoryName: 'GPU memory' };
  return { freeBytes: ramFreeBytes, memoryName: 'RAM' };
}

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;

/**
 * Sequences the memory allows, at least one (a machine too short of memory for more decodes on
 * one) and at most the cap.
 */
export function chooseSequenceBudget(input: SequenceBudgetInput): SequenceBudget {
  const bytesPerSequence = Math.ceil(input.bytesPerToken * cellsPerSequence(input.contextSize));
  const requested = input.cap === 'auto' ? DEFAULT_MAX_SEQUENCES : Math.max(1, Math.min(MAX_SEQUENCES, Math.floor(input.cap)));
  const capWord = input.cap === 'auto' ? `the default of ${DEFAULT_MAX_SEQUENCES}` : `draftline.kvSequences ${requested}`;
  const room = Math.max(0, (input.freeBytes - input.weightBytes) * KV_MEMORY_SHARE);
  const fits = bytesPerSequence > 0 ? Math.floor(room / bytesPerSequence) : requested;
  if (fits < 1) {
    return {
      sequences: 1,
      bytesPerSequence,
      reason: `one sequence: a sequence takes ${mib(bytesPerSequence)} and ${mib(input.freeBytes)} of free ${input.memoryName} leaves room for none next to ${mib(input.weightBytes)} of weights; every prompt shares it`,
    };
  }
  if (fits < requested) {
    return { sequences: fits, bytesPerSequence, reason: `${fits} of ${capWord}: ${mib(bytesPerSequence)} each, half the ${input.memoryName} free after the weights holds ${fits}` };
  }
  return { sequences: requested, bytesPerSequence, reason: `${requested} (${capWord}), ${mib(bytesPerSequence)} each` };
}
