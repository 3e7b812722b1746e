// Types shared by the extension host side and the inference worker. Plain data only: they cross IPC.

export type Token = number;

/** How completions are decoded. Every mode but the stock ones yields the target's exact greedy output. */
export type DecodeMode = 'plain' | 'ngram' | 'draft' | 'hybrid';

export type ProposalSource = 'ngram' | 'draft';

export interface ModelSettings {
  targetModel: string;
  draftModel: string;
  gpu: 'auto' | 'cuda' | 'vulkan' | 'metal' | 'cpu';
  gpuLayers: number | 'auto';
  threads: number;
  contextSize: number;
}

export interface SpeculationSettings {
  /** Longest proposal verified in one target batch. */
  maxProposal: number;
  /** N-gram match length bounds (tokens). */
  ngramMinMatch: number;
  ngramMaxMatch: number;
  /** Draft stops proposing once its own probability of the next token falls below this. */
  draftMinConfidence: number;
  /** Let the cost model turn speculation off (or shorten it) when it does not pay. */
  adaptive: boolean;
}

export interface CompletionRequest {
  /** Document text before the cursor (already windowed by the caller). */
  prefix: string;
  /** Document text after the cursor (already windowed). */
  suffix: string;
  /** Key of the document in the n-gram index (its uri), so its own tokens rank first. */
  documentKey?: string;
  languageId?: string;
  tabSize?: number;
  maxTokens: number;
  mode: DecodeMode;
  /** Extra stop strings (cut before them). */
  stop?: string[];
  /** Stop at the end of the block the cursor is in (indentation based). */
  stopAtBlockEnd?: boolean;
  /** Stop at the first newline (the cursor has text after it on its line). */
  singleLine?: boolean;
  maxLines?: number;
  /** The user's other code to show the model first (prompt/contextBlock.ts); none when absent. */
  extraContext?: ExtraContext;
}

/** A piece of one of the user's other files (context/extraContextRing.ts). */
export interface ContextChunk {
  /** Workspace-relative path (shown to the model as the file's name). */
  path: string;
  text: string;
}

/** Chunks of other files for the prompt (see context/extraContextRing.ts), with their token budget. */
export interface ExtraContext {
  files: ContextChunk[];
  /** Path of the file being completed, workspace-relative. */
  path?: string;
  /** Workspace folder name (repo-level templates name the repository). */
  repoName?: string;
  /** At most this many prompt tokens for the chunks (never more than a third of the prompt). */
  maxTokens: number;
}

export interface SourceStats {
  /** Target verification steps that carried a proposal of this source. */
  steps: number;
  proposedTokens: number;
  acceptedTokens: number;
}

export interface CompletionStats {
  mode: DecodeMode;
  promptTokens: number;
  /** Prompt tokens whose KV was reused from the previous request. */
  reusedPromptTokens: number;
  generatedTokens: number;
  /** Target evaluations, the prompt's included (it yields the first token). Plain decoding: one per token. */
  targetEvaluations: number;
  /** Tokens the target evaluated while decoding (including rejected proposals). */
  targetTokensEvaluated: number;
  draftEvaluations: number;
  bySource: Record<ProposalSource, SourceStats>;
  promptMs: number;
  targetMs: number;
  draftMs: number;
  timeToFirstTokenMs: number;
  totalMs: number;
  stopReason: StopReason;
  /** What the speculation policy has learned on this machine, after this completion. */
  policy?: PolicySnapshot;
  /** Extra context that went into the prompt (absent: none). */
  extraContext?: { files: number; tokens: number; repoLevel: boolean };
}

export interface PolicySnapshot {
  /** Measured ms of one target evaluation by batch size (smoothed). */
  verifyMs: Record<number, number>;
  draftMsPerToken: number | null;
  /** Estimated per-token acceptance of each source. */
  acceptance: Record<ProposalSource, number>;
  /** Proposal length the policy would pick now with enough on offer (0: plain decoding is faster). */
  bestLength: Record<ProposalSource, number>;
  /** Steps until a source it has written off is tried again. */
  retryInterval: Record<ProposalSource, number>;
}

export type StopReason = 'eos' | 'maxTokens' | 'stopSequence' | 'blockEnd' | 'newline' | 'maxLines' | 'abort' | 'contextFull';

export interface CompletionResult {
  text: string;
  tokens: Token[];
  stats: CompletionStats;
}

export interface ModelDescription {
  path: string;
  name: string;
  sizeBytes: number;
  contextLength: number;
  vocabSize: number;
  hasFim: boolean;
}

export interface LoadedModelsInfo {
  target: ModelDescription;
  draft: ModelDescription | null;
  /** Why the draft is not used, when it is not. */
  draftProblem: string | null;
  backend: string;
  gpuLayers: { target: number; draft: number };
  contextSize: number;
  threads: number;
  promptFormat: 'fim' | 'prefix-only';
  /** The prompt template chosen for the target's family (prompt/templates.ts), e.g. "Qwen2.5-Coder (repo-level)". */
  promptTemplate?: string;
  /** Where the load's time went, for the log, Show Stats and the benchmark's startup figure. */
  loadTimings?: LoadTimings;
  /** How the worker chose the backend and the threads, so the status bar can say why (e.g. a CPU fallback). */
  runtime?: RuntimeChoice;
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

export function emptySourceStats(): SourceStats {
  return { steps: 0, proposedTokens: 0, acceptedTokens: 0 };
}
