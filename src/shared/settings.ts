// Settings as the worker and the backends receive them (read from package.json's declarations by
// src/settings/). Plain data only: they cross IPC.

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
  /**
   * Shift a cached prompt whose start moved into place instead of evaluating it again, where the
   * model's cache can shift (default true; speculation/greedyEvaluator.ts planShift).
   */
  shiftPromptCache?: boolean;
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
  /**
   * Token trees verified by the target in one batch (a KV context of Draftline's own with one stream
   * for all sequences: src/llama/unifiedContext.ts): 'auto' (the default) where the target computes on
   * CUDA with layers on the GPU (fixed verify shapes: a batch costs the same whatever it holds) and the
   * native addon runs, 'on' wherever the addon runs (tests, the bench), 'off' never. Elsewhere the target
   * keeps node-llama-cpp's context and verifies chains. Not a user setting.
   */
  treeVerification?: 'auto' | 'on' | 'off';
  /**
   * Whether a proposer in use offers token trees (the suffix proposer, draftline.speculation.suffix):
   * 'auto' tree verification waits for one, since one KV stream for all sequences makes every step
   * attend over the other prompt states' cells, a cost only trees pay back.
   */
  proposesTrees?: boolean;
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
  /** Propose with the suffix proposer too, beside the n-gram one (speculation/suffixProposer.ts). Unset: off. */
  suffix?: boolean;
  /**
   * Longest proposal of the window copy proposer (next edits), which may exceed maxProposal: a copy
   * run is accepted whole far more often than a guess, and on a CPU the largest batches cost least a
   * token. Default COPY_MAX_PROPOSAL (speculation/copyAcceptance.ts).
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
  /**
   * Token tree offers verified as trees where the target can (the default); false: as their likeliest
   * chains (the bench's side-by-side).
   */
  verifyTrees?: boolean;
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
