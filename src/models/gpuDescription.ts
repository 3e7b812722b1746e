import type { LoadedModelsInfo, ModelSettings } from '../shared/types';

/** What the status bar tooltip says about where inference runs, and whether that is a fallback. */
export function describeGpuBackend(requested: ModelSettings['gpu'], info: Pick<LoadedModelsInfo, 'backend' | 'gpuLayers'>): { text: string; fallback: boolean } {
  const layers = `${info.gpuLayers.target} + ${info.gpuLayers.draft} layers on the GPU`;
  if (info.backend === 'cpu') {
    if (requested === 'cpu') return { text: 'CPU (as set)', fallback: false };
    return { text: 'CPU — no GPU backend usable with the installed binaries', fallback: true };
  }
  const name = info.backend === 'cuda' ? 'CUDA' : info.backend === 'vulkan' ? 'Vulkan' : info.backend === 'metal' ? 'Metal' : info.backend;
  if (info.gpuLayers.target === 0) return { text: `${name}, but no layer fits in GPU memory: running on the CPU`, fallback: true };
  return { text: `${name}, ${layers}`, fallback: false };
}
