// Types shared by the extension host side and the inference worker. Plain data only: they cross IPC.

export type Token = number;

/**
 * How completions are decoded. Every mode but the stock ones yields the target's exact greedy output.
 * 'copy': next-edit windows only, the window copy proposer alone (speculation/windowCopyProposer.ts);
 * 'hybrid' adds it to the n-gram and draft sources when the request has a window to copy.
 */
export type DecodeMode = 'plain' | 'ngram' | 'draft' | 'hybrid' | 'copy';

/**
 * Where a proposal comes from: n-grams of the text, the draft model, the target's own outputs after a
 * rejected guess, or the next-edit window being rewritten (copied from where the output is in it).
 */
export type ProposalSource = 'ngram' | 'draft' | 'lookahead' | 'copy';

export interface ModelSettings {
  targetModel: string;
  draftModel: string;
  gpu: 'auto' | 'cuda' | 'vulkan' | 'metal' | 'cpu';
  gpuLayers: number | 'auto';
  threads: number;
  contextSize: number;
  /**
   * KV sequences of the target's context (one per prompt state): 'auto' (the default) lets the free
   * memory decide, up to inference/sequenceBudget.ts's DEFAULT_MAX_SEQUENCES; a number caps it.
   */
  kvSequences?: number | 'auto';
  /** Flash attention: 'auto' measures each CPU model at load and keeps the faster (default). */
  flashAttention?: 'auto' | 'on' | 'off';
  /** JSON file where measured flash-attention choices are remembered (VS Code's global storage). */
  attentionMemoFile?: string;
  /**
   * Set with gpu 'cpu' when the models come back on the CPU because the GPU failed (the worker ended
   * while they ran there): why, for the status bar and Show Stats.
   */
  gpuFallback?: string;
  /**
   * Greedy tokens of the target sampled on its device (llama.cpp backend sampling): 'auto' (the
   * default) where the target computes on a GPU, 'on' wherever llama.cpp offloads it (tests run it on
   * the CPU), 'off' never. Not a user setting.
   */
  deviceGreedy?: 'auto' | 'on' | 'off';
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
  /** Keep the target's outputs after a rejected guess as a third source (speculation/lookaheadPool.ts). */
  lookahead: boolean;
  /**
   * Longest proposal of the window copy proposer (next edits), which may exceed maxProposal: a copy
   * run is accepted whole far more often than a guess, and on a CPU the largest batches cost least a
   * token. Default COPY_MAX_PROPOSAL (speculation/policy.ts).
   */
  copyMaxProposal?: number;
  /**
   * Verify batches of any length ('variable', the CPU's best), or one fixed length per generation
   * ('fixed': backends that replay captured graphs; speculation/verifyShape.ts); 'auto' is fixed
   * where `graphReplay`. Unset is 'auto'.
   */
  verifyShape?: 'auto' | 'fixed' | 'variable';
  /** Whether the target's backend replays captured compute graphs (CUDA with layers on the GPU): set by the worker once the models are loaded. */
  graphReplay?: boolean;
  /** The fixed shape's size when set (tests, the bench); else the policy chooses it from measured costs. */
  fixedShapeSize?: number;
}

export interface CompletionRequest {
  /** Document text before the cursor (already windowed by the caller). */
  prefix: string;
  /** Document text after the cursor (already windowed). */
  suffix: string;
  /** Key of the document in the n-gram index (its uri), so its own tokens rank first. In-process only: a server ignores it. */
  documentKey?: string;
  languageId?: string;
  tabSize?: number;
  maxTokens: number;
  /** How the in-process backend decodes (a server decodes its own way and ignores it). */
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
  /**
   * Asked before the user asks (CompletionEngine.prefetch): it yields to every real request. The
   * worker refuses it ('busy') while a real generation runs, in any window, and a real request
   * aborts it; a server gets it as an ordinary request (the engine does the yielding).
   */
  prefetch?: boolean;
}

/** An edit to a mirrored document, in UTF-16 offsets of the text before the edit. */
export interface DocumentEdit {
  offset: number;
  deleteCount: number;
  text: string;
}

/** A piece of one of the user's other files (prompt/extraContextRing.ts). */
export interface ContextChunk {
  /** Workspace-relative path (shown to the model as the file's name). */
  path: string;
  text: string;
}

/** Chunks of other files for the prompt (see prompt/extraContextRing.ts), with their token budget. */
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

/** What every backend reports of a completion. */
export interface GenerationStats {
  promptTokens: number;
  /** Prompt tokens whose KV was reused from the previous request (a server's prompt cache included). */
  reusedPromptTokens: number;
  /**
   * Prompt tokens this request evaluated (its cache misses), counted also when it was stopped while
   * evaluating its prompt; absent when it stopped before starting (local decoding only).
   */
  promptTokensEvaluated?: number;
  generatedTokens: number;
  promptMs: number;
  timeToFirstTokenMs: number;
  totalMs: number;
  stopReason: StopReason;
  /** Extra context that went into the prompt (absent: none). */
  extraContext?: { files: number; tokens: number; repoLevel: boolean };
  /** Draftline's own speculation record: in-process decoding only. */
  speculation?: SpeculationStats;
  /** What a server says its own speculative decoding proposed and kept (llama-server with a draft model). */
  serverDraft?: { proposedTokens: number; acceptedTokens: number };
  /** Decode speed as the server measured it (without the network). */
  serverTokensPerSecond?: number;
}

/** In-process speculative decoding's record of one completion. */
export interface SpeculationStats {
  mode: DecodeMode;
  /** Target evaluations, the prompt's included (it yields the first token). Plain decoding: one per token. */
  targetEvaluations: number;
  /** Tokens the target evaluated while decoding (including rejected proposals). */
  targetTokensEvaluated: number;
  draftEvaluations: number;
  bySource: Record<ProposalSource, SourceStats>;
  targetMs: number;
  draftMs: number;
  /**
   * Distinct target batch sizes of the decode steps after the first (1 with a fixed shape): whether a
   * graph backend could replay one captured graph.
   */
  batchShapes?: number;
  /** The fixed verify shape this generation used (absent: variable shapes). */
  fixedShape?: number;
  /** Tokens of padding the fixed shape added to proposals, and how many of them the target accepted. */
  paddingTokens?: number;
  paddingAccepted?: number;
  /** What the speculation policy has learned on this machine, after this completion. */
  policy?: PolicySnapshot;
}

/** The in-process decoder's stats: always with its speculation record. */
export type DecoderStats = GenerationStats & { speculation: SpeculationStats };

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
  /** How verify batches are shaped, and the size the latest generation chose (0: variable; 1: plain). */
  verifyShape?: { mode: 'fixed' | 'variable'; size: number };
}

export type StopReason = 'eos' | 'maxTokens' | 'stopSequence' | 'blockEnd' | 'newline' | 'maxLines' | 'abort' | 'contextFull';

export interface CompletionResult {
  text: string;
  /** The target's token ids (in-process decoding; a server may not say). */
  tokens?: Token[];
  stats: GenerationStats;
}

/**
 * Alternatives to a greedy completion, asked for only when the user cycles suggestions (issue #32):
 * the target's greedy continuation after each of the next most likely tokens at the point where
 * the greedy completion was least certain (the smallest top-1 minus top-2 logit margin).
 */
export interface AlternativesResult {
  /**
   * Raw completions other than the greedy one (before post-processing), most likely first. One may
   * read the same as the greedy one once post-processed: the engine removes those.
   */
  completions: CompletionResult[];
  /** Where they branch off the greedy completion: its token index and the margin there (logits). */
  branch?: { tokenIndex: number; margin: number };
  /** Why there are fewer than asked, or none (e.g. the server does not report token probabilities): Show Stats says it. */
  limitedBy?: string;
  /** From the request to the last alternative. */
  totalMs: number;
}

/** What the in-process session returns: tokens and the full speculation record. */
export interface LocalCompletionResult extends CompletionResult {
  tokens: Token[];
  stats: DecoderStats;
}

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
 * The next-edit model of a loaded pair (issue #39), from the first next-edit request on: a file of
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
  /** (Issue #39) The next-edit model once next edits were first asked for: absent before (it loads then, not at startup). */
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
  /** How the target's greedy tokens are read (src/inference/llamaSequenceEvaluator.ts), and why not natively when not. */
  tokenReader?: string;
  /** Whether the target's context computes on a persistent threadpool (2+ threads), or why not. */
  threadpool?: string;
  /**
   * Whether Draftline's native addon (greedy reader + threadpool, built for Linux x64 only) runs the
   * target's steps, or why node-llama-cpp's own path does: the status bar and Show Stats say what that costs.
   */
  nativeAddon?: { used: true } | { used: false; reason: string };
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

export function emptySourceStats(): SourceStats {
  return { steps: 0, proposedTokens: 0, acceptedTokens: 0 };
}

/** The speculation record of a decode that has not evaluated anything yet (the decoder's start, a request never run). */
export function emptySpeculationStats(mode: DecodeMode): SpeculationStats {
  return {
    mode,
    targetEvaluations: 0,
    targetTokensEvaluated: 0,
    draftEvaluations: 0,
    bySource: { ngram: emptySourceStats(), draft: emptySourceStats(), lookahead: emptySourceStats(), copy: emptySourceStats() },
    targetMs: 0,
    draftMs: 0,
  };
}

/** Where completions come from: Draftline's own worker, or an inference server the user points it at. */
export type BackendKind = 'local' | 'llama-server' | 'openai-compatible' | 'ollama';

/** The backend settings as read (user/machine scope only: settings/declaredSettings.ts). */
export interface BackendSettings {
  kind: BackendKind;
  endpoint: string;
  model: string;
  /** PEM file of extra CAs ('' : none). */
  caFile: string;
  /** Until the server's first byte, and between two chunks of its answer. */
  timeoutMs: number;
  sendExtraContext: boolean;
  /** Local only: use the inference worker every window shares (worker/sharedWorker.ts). */
  sharedWorker: boolean;
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
