// What a load of the embedded pair on one CPU thread reports, for the tests of what the status bar,
// Show Stats and its page say about the models.
import type { LoadedModelsInfo, RuntimeChoice } from '../../src/shared/backendInfo';

/** The linux-x64 package (Vulkan binaries) on a 2-core machine with no GPU, threads left at the default. */
export const runtimeChoice = (over: Partial<RuntimeChoice> = {}): RuntimeChoice => ({
  requestedGpu: 'auto',
  gpuBinaries: ['vulkan'],
  gpuDetected: [],
  gpuDevices: [],
  cores: 2,
  requestedThreads: 0,
  ...over,
});

/** The embedded pair loaded on the CPU, one thread, a 2048-token context. */
export const loadedModels = (over: Partial<LoadedModelsInfo> = {}): LoadedModelsInfo => ({
  target: { path: '/m/t.gguf', name: 'draftline-code-target', sizeBytes: 30e6, contextLength: 2048, vocabSize: 512, hasFim: true },
  draft: { path: '/m/d.gguf', name: 'draftline-code-draft', sizeBytes: 5e6, contextLength: 2048, vocabSize: 512, hasFim: true },
  draftProblem: null,
  backend: 'cpu',
  gpuLayers: { target: 0, draft: 0 },
  contextSize: 2048,
  threads: 1,
  promptFormat: 'fim',
  runtime: runtimeChoice(),
  ...over,
});
