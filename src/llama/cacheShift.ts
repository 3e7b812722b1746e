import type { LlamaModel } from './llamaTypes';

/**
 * Architectures whose KV cache llama.cpp shifts (llama_memory_can_shift): one RoPE over the whole key
 * and one attention cache. llama.cpp aborts the process when asked to shift another (multi-section
 * RoPE, per-layer RoPE sizes), and recurrent or compressed caches cannot drop a range at all, so only
 * these are shifted; every other model evaluates a moved prompt afresh.
 */
const SHIFTABLE_ARCHITECTURES = new Set(['llama', 'qwen2', 'qwen2moe', 'qwen3', 'qwen3moe', 'starcoder2', 'deepseek', 'phi3', 'granite']);

/** Whether cached tokens of `model` may be shifted (see SHIFTABLE_ARCHITECTURES). */
export function cacheCanShift(model: Pick<LlamaModel, 'fileInfo'>): boolean {
  const architecture = model.fileInfo.metadata?.general?.architecture;
  return typeof architecture === 'string' && SHIFTABLE_ARCHITECTURES.has(architecture);
}
