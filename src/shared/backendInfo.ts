// What serves completions: the loaded models (and how they run) or the server, for the status bar,
// Show Stats and the log. Plain data only: they cross IPC.
import type { BackendKind, ModelSettings } from './settings';

export interface ModelDescription {
  path: string;
  name: string;
  sizeBytes: number;
  contextLength: number;
  vocabSize: number;
  hasFim: boolean;
}

/**
 * The target's live KV sequences (Show Stats): whose prompt each holds (null: nobody's), its tokens and
 * their KV bytes; how often one was taken from its owner because all were in use; and the evicted
 * prompts' saved states.
 */
export interface KvSequencesReport {
  sequences: { owner: string | null; tokens: number; bytes: number }[];
  evictions: number;
  saved?: { count: number; bytes: number; restored: number };
}

/**
 * The next-edit model of a loaded pair, from the first next-edit request on: a file of
 * its own loaded beside the pair, or the target's file (loaded once, serving both tasks from their
 * own KV sequences: nothing more in memory). Its memory: the weights and its KV sequences.
 */
export interface NextEditModelReport {
  path: string;
  name: string;
  /** The completion target's own file (draftline.nextEdit.model names it): no second copy. */
  sharesTarget: boolean;
  /** 'failed': the file is missing or corrupt (`problem` says why); completions are unaffected. */
  state: 'loading' | 'loaded' | 'failed';
  problem?: string;
  sizeBytes: number;
  /** Layers on the GPU (0: on the CPU), placed as the target is (same gpu, gpuLayers and threads settings). */
  gpuLayers: number;
  contextSize: number;
  /** Its own KV sequences (the pair's when it shares the target) and the bytes each takes at most. */
  kvSequences: { count: number; bytesPerSequence: number; reason: string };
  /** What 'hybrid' drafts with: the completion draft when the vocabularies match, else why not (the window copy and n-grams only). */
  draft: string;
  /** Why it runs on the CPU although the target is on a GPU. */
  gpuFallback?: string;
  loadMs?: number;
  /** Its KV sequences now, as KvSequencesReport lists the target's (the worker names the asking window's owners). */
  sequences?: KvSequencesReport['sequences'];
}

export interface LoadedModelsInfo {
  /** The next-edit model once next edits were first asked for: absent before (it loads then, not at startup). */
  nextEditModel?: NextEditModelReport;
  target: ModelDescription;
  draft: ModelDescription | null;
  /** Why the draft is not used, when it is not. */
  draftProblem: string | null;
  backend: string;
  gpuLayers: { target: number; draft: number };
  contextSize: number;
  /** KV sequences of the target's context (one per prompt state), the bytes each takes, and why this many. */
  kvSequences?: { count: number; bytesPerSequence: number; reason: string };
  threads: number;
  promptFormat: 'fim' | 'prefix-only';
  /** The prompt template chosen for the target's family (prompt/templates.ts), e.g. "Qwen2.5-Coder (repo-level)". */
  promptTemplate?: string;
  /** Where the load's time went, for the log, Show Stats and the benchmark's startup figure. */
  loadTimings?: LoadTimings;
  /** How the worker chose the backend and the threads, so the status bar can say why (e.g. a CPU fallback). */
  runtime?: RuntimeChoice;
  /** Why the models run on the CPU although a GPU backend was asked for or chosen: the GPU failed (at load or mid-run). */
  gpuFallback?: string;
  /** How the target's greedy tokens are read (src/llama/llamaSequenceEvaluator.ts), and why not natively when not. */
  tokenReader?: string;
  /** Whether the target's context computes on a persistent threadpool (2+ threads), or why not. */
  threadpool?: string;
  /**
   * Whether Draftline's native addon (greedy reader + threadpool, built for Linux x64 only) runs the
   * target's steps, or why node-llama-cpp's own path does: the status bar and Show Stats say what that costs.
   */
  nativeAddon?: { used: true } | { used: false; reason: string };
  /**
   * Whether the target verifies token trees (on a KV context of Draftline's own with one stream for
   * all sequences: src/inference/treeVerification.ts), or why it verifies chains.
   */
  treeVerification?: { used: true } | { used: false; reason: string };
  /** Flash attention of each model's context and why (measured, remembered, a setting, the GPU). */
  flashAttention?: { target: string; draft: string | null };
  /** Set when this load found the models already loaded in the shared worker: how many other windows use them (0: kept after the last window using them closed). */
  sharedWith?: number;
}

/** What the installed binaries and this machine offer, next to what was asked. */
export interface RuntimeChoice {
  /** draftline.gpu as set. */
  requestedGpu: ModelSettings['gpu'];
  /** GPU backends with a prebuilt binary installed next to node-llama-cpp (the default linux-x64 package: vulkan). */
  gpuBinaries: string[];
  /** GPU backends whose driver or runtime node-llama-cpp found on this machine (getLlamaGpuTypes('supported')). */
  gpuDetected: string[];
  /** The GPU devices the backend in use sees (none on the CPU, or e.g. Vulkan with only a software device). */
  gpuDevices: string[];
  /** Logical cores, and draftline.threads as set (0: the default, cores - 1). */
  cores: number;
  requestedThreads: number;
}

/** Wall time of each phase of a model load in the worker, in ms. */
export interface LoadTimings {
  /** The worker process's age when the load began (its start-up, and the wait for this request). */
  workerAgeMs: number;
  /** Waiting for the llama.cpp binding: the library import and getLlama's binary test (0 when reused). */
  runtimeMs: number;
  /** The worker's age when node-llama-cpp was imported and when its binding was ready (first load only). */
  libraryAtMs?: number;
  bindingAtMs?: number;
  /** Checking the GGUF headers before llama.cpp sees them (runs while the binding loads). */
  inspectMs: number;
  draftMs: number;
  targetMs: number;
  totalMs: number;
}

/** What serves completions, for the status bar and Show Stats. */
export interface BackendInfo {
  kind: BackendKind;
  /** The model completions come from (the target's name, or the server's model id). */
  model: string;
  /** In-process only: the loaded models, the GPU and the threads. */
  local?: LoadedModelsInfo;
  /** Server backends only: where, and what the server said of itself. */
  remote?: RemoteServerInfo;
}

export interface RemoteServerInfo {
  /** The endpoint as set (scheme, host, port, path prefix). */
  endpoint: string;
  /** What the server says it is, e.g. "llama-server (build 1, de3ff81)", "Ollama 0.5.7". */
  server: string;
  /** Context size the server runs the model with, when it says. */
  contextSize?: number;
  /** The server's own speculative decoding as it describes it (null: none, or it does not say). */
  speculation: string | null;
  /** How the prompt reaches the model, e.g. "/infill (fill-in-the-middle, extra context as input_extra)". */
  promptFormat: string;
}
