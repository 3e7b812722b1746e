// Whether the target verifies token trees, and its context where it does: a context of Draftline's
// own with one KV stream for all its sequences (llama/unifiedContext.ts), made on the model
// node-llama-cpp loaded; everywhere else node-llama-cpp's context and chains, as without trees.
import type { Llama, LlamaModel } from '../llama/llamaTypes';
import { loadNativeAddon } from '../llama/nativeAddon';
import { UnifiedContext } from '../llama/unifiedContext';
import type { LoadedModelsInfo } from '../shared/backendInfo';
import type { ModelSettings } from '../shared/settings';
import { FIXED_SHAPE_SIZES } from '../speculation/verifyShape';

/**
 * Whether the target runs on a backend that replays captured compute graphs only while batches keep
 * one shape (llama.cpp's CUDA graphs): there verify batches get a fixed shape (speculation/verifyShape.ts).
 */
export function replaysGraphs(info: Pick<LoadedModelsInfo, 'backend' | 'gpuLayers'>): boolean {
  return info.backend === 'cuda' && info.gpuLayers.target > 0;
}

/** Whether trees are verified, or why not (LoadedModelsInfo, Show Stats, the load log). */
export type TreeVerificationState = { used: true } | { used: false; reason: string };

/** The most nodes a verified tree has: the largest fixed verify shape after the pending token. */
export const TREE_NODES = Math.max(...FIXED_SHAPE_SIZES) - 1;

/**
 * Whether the target should get a unified context (ModelSettings.treeVerification): 'auto' where its
 * layers compute on CUDA — the backend where verify batches have a fixed shape (replaysGraphs), so a
 * batch costs the same whatever it holds and a tree fills what a chain pads — once a proposer in use
 * offers trees (`proposesTrees`); 'on' wherever the native addon runs; never without it or with 'off'.
 */
export function wantsTreeVerification(setting: ModelSettings['treeVerification'], gpu: Llama['gpu'], gpuLayers: number, proposesTrees: boolean): TreeVerificationState {
  const asked = setting ?? 'auto';
  if (asked === 'off') return { used: false, reason: 'off' };
  const addon = loadNativeAddon();
  if ('error' in addon) return { used: false, reason: `the native addon is unavailable (${addon.error})` };
  if (asked === 'on') return { used: true };
  if (!replaysGraphs({ backend: gpu === false ? 'cpu' : gpu, gpuLayers: { target: gpuLayers, draft: 0 } })) {
    const where = gpu === false ? 'the CPU' : gpuLayers > 0 ? gpu : `${gpu} with no layer on the GPU`;
    return { used: false, reason: `the target computes on ${where}: verify batches cost about what they hold there, so chains are verified` };
  }
  if (!proposesTrees) return { used: false, reason: "no tree proposer is on (the suffix proposer, draftline.speculation.suffix, is off; the draft's leaves alone do not turn trees on)" };
  return { used: true };
}

/**
 * The target's unified context of `sequences` sequences, or why it could not be made (the caller then
 * makes node-llama-cpp's).
 */
export async function createUnifiedTarget(
  model: LlamaModel,
  options: { contextSize: number; threads: number; batchSize: number; flashAttention: boolean | 'auto'; sequences: number; shift: boolean },
): Promise<UnifiedContext | { error: string }> {
  try {
    return await UnifiedContext.create(model, { ...options, treeNodes: TREE_NODES });
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}
