// What a completion reports of itself: tokens, timings and the speculation record. Plain data only:
// they cross IPC.
import type { DecodeMode, SourceId, StopReason } from './decoding';

export interface SourceStats {
  /** Target verification steps that carried a proposal of this source. */
  steps: number;
  /** Its tokens verified (a tree's nodes included) and kept. */
  proposedTokens: number;
  acceptedTokens: number;
  /** Of its steps, those that verified a token tree of its (absent: none), the trees' nodes and the accepted paths' tokens. */
  treeSteps?: number;
  treeNodes?: number;
  treeAccepted?: number;
}

/** What every backend reports of a completion. */
export interface GenerationStats {
  promptTokens: number;
  /** Prompt tokens whose KV was reused from the previous request (a server's prompt cache included). */
  reusedPromptTokens: number;
  /** Of the reused tokens, those shifted into place after the prompt's head moved (local decoding only; absent: none). */
  shiftedPromptTokens?: number;
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
  /** Evaluations of the proposers that run a model (the draft), and their time. */
  draftEvaluations: number;
  /** Each proposer of the decode, by its id (speculation/proposer.ts), zeros when it never proposed. */
  bySource: Record<SourceId, SourceStats>;
  targetMs: number;
  draftMs: number;
  /**
   * Distinct target batch sizes of the decode steps after the first (1 with a fixed shape): whether a
   * graph backend could replay one captured graph.
   */
  batchShapes?: number;
  /** The fixed verify shape this generation used (absent: variable shapes). */
  fixedShape?: number;
  /** Steps that verified a token tree (fixed shapes on a unified KV cache only; absent: none). */
  treeSteps?: number;
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
  /** Measured ms per proposed token of each source that runs a model (the draft), once measured. */
  proposeMsPerToken: Record<SourceId, number>;
  /** Estimated per-token acceptance of each source the policy has met. */
  acceptance: Record<SourceId, number>;
  /** Proposal length the policy would pick now with enough on offer (0: plain decoding is faster). */
  bestLength: Record<SourceId, number>;
  /** Steps until a source it has written off is tried again. */
  retryInterval: Record<SourceId, number>;
  /** How verify batches are shaped, and the size the latest generation chose (0: variable; 1: plain). */
  verifyShape?: { mode: 'fixed' | 'variable'; size: number };
  /**
   * Sources that offered trees on a fixed shape: the accepted tokens a step of their tree and of their
   * likeliest chain is expected to keep, and which one the policy verifies.
   */
  trees?: Record<SourceId, { tree: number; chain: number; verifies: 'tree' | 'chain' }>;
}

export function emptySourceStats(): SourceStats {
  return { steps: 0, proposedTokens: 0, acceptedTokens: 0 };
}

/** The speculation record of a decode that has not evaluated anything yet (the decoder's start, a request never run). */
export function emptySpeculationStats(mode: DecodeMode, sources: readonly SourceId[] = []): SpeculationStats {
  return {
    mode,
    targetEvaluations: 0,
    targetTokensEvaluated: 0,
    draftEvaluations: 0,
    bySource: Object.fromEntries(sources.map((id) => [id, emptySourceStats()])),
    targetMs: 0,
    draftMs: 0,
  };
}

/** A source's figures in a speculation record: zeros when the decode had no such proposer. */
export function sourceStats(spec: Pick<SpeculationStats, 'bySource'>, id: SourceId): SourceStats {
  return spec.bySource[id] ?? emptySourceStats();
}
