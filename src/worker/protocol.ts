import type { AlternativesResult, CompletionRequest, DocumentEdit, LocalCompletionResult } from '../shared/completion';
import type { KvSequencesReport, NextEditModelReport, LoadedModelsInfo } from '../shared/backendInfo';
import type { ModelSettings, SpeculationSettings } from '../shared/settings';
import type { DownloadProgress, DownloadProxySettings } from '../models/downloadIndex';
import type { NextEditRequest, NextEditResult, TextReplacement } from '../nextEdit/types';

/**
 * Bumped on any incompatible change; the client refuses a worker that speaks another version. Optional
 * fields, which a peer that lacks them ignores, do not bump it (worker and client ship in one build).
 * What each version changed: docs/ARCHITECTURE.md, 'Worker protocol versions'.
 */
export const PROTOCOL_VERSION = 5;

/** Requests that get a response, by name: [params, result]. */
export interface WorkerMethods {
  hello: [Record<string, never>, { protocol: number; pid: number }];
  /** Loads (or joins) the models; `speculation` is this window's own, whoever else uses them. */
  load: [{ models: ModelSettings; speculation: SpeculationSettings }, LoadedModelsInfo];
  /**
   * A completion, decoded with this window's speculation settings and adaptive policy. One generation
   * runs at a time per loaded pair: a newer request of the same window supersedes its older one
   * (waiting: answered at once with stopReason 'abort'; generating: stopped at its next step); other
   * windows' requests are never cancelled, they wait their turn (round robin, newest of each window).
   */
  complete: [{ request: CompletionRequest }, LocalCompletionResult];
  /**
   * Up to `count` alternatives to the greedy completion of `request` (InferenceSession.alternatives),
   * asked when the user cycles suggestions. Scheduled as this window's completion: a real request
   * (a prefetch gives way to it), superseded by the window's next request (a keystroke: answered
   * with `limitedBy: 'cancelled'` and what was done), never by another window's.
   */
  alternatives: [{ request: CompletionRequest; count: number }, AlternativesResult];
  /**
   * A next-edit suggestion: the request's format builds the prompt, the
   * model's window is decoded on this window's own KV sequence (`window N · next edit`) and reduced
   * to edits; each edit is sent in a `nextEditPartial` message as soon as it is final, and the
   * result has them all. Scheduled after completions: every completion (any window's, prefetches
   * too) goes first, and one that arrives while it decodes takes the models between two of its
   * evaluations (one decode step at most), after which it resumes where it was. The window's next
   * `nextEdit` (a keystroke) or a `cancel` supersedes it: answered with `noSuggestion.reason`
   * 'cancelled'. Other windows' requests never cancel it; windows' next-edit requests take turns.
   * `model`: the next-edit model's local file ('' or absent: the target serves). Another file than
   * the target's is loaded by the first request that names it, beside the models (a `modelLoading`
   * message names it to this window first); one that cannot be loaded answers noSuggestion 'error'.
   */
  nextEdit: [{ request: NextEditRequest; model?: string }, NextEditResult];
  /** Changes this window's speculation settings only. */
  configure: [{ speculation: Partial<SpeculationSettings> }, null];
  unload: [Record<string, never>, null];
  /** Memory of this machine as node-llama-cpp sees it, for the recommended model pair. */
  systemInfo: [Record<string, never>, { backend: string; vramBytes: number; ramBytes: number; unifiedMemory: boolean }];
  /**
   * Downloads models (hub URIs, https URLs) into dirPath as one operation and resolves to their local
   * files, in order: node-llama-cpp's downloader runs here, never in the extension host. Sends
   * `progress` messages for this id while it runs (with `verifiedBytes` while the finished files are
   * sha256-checked, here too); a `cancel` stops it and removes the partial files. Fails with the DownloadError code ('cancelled' | 'failed' | 'invalid') as the error code.
   */
  download: [{ uris: string[]; dirPath: string; huggingFaceEndpoint?: string; proxy?: DownloadProxySettings }, string[]];
  /** The worker's own view of its health: memory, the n-gram index, and whether generations overlapped. */
  diagnostics: [Record<string, never>, WorkerDiagnostics];
  /** Test hook, enabled by DRAFTLINE_TEST_HOOKS=1 only: kills the worker like a native abort would. */
  crash: [Record<string, never>, null];
}

export interface WorkerDiagnostics {
  rssBytes: number;
  heapUsedBytes: number;
  completions: number;
  /**
   * Most generations that ever ran at the same time, from each one's decode interval on the worker's
   * own clock (the client's clock would add its own scheduling delays). Anything above 1 is a bug.
   */
  maxConcurrentGenerations: number;
  /**
   * The n-gram index (null before a model is loaded): documents searched, their characters, documents
   * still being indexed, and the characters it has tokenized since the load (its CPU cost).
   */
  index: { documents: number; chars: number; pending: number; tokenizedChars: number } | null;
  /** Windows connected (1 for a private worker) and the model pairs loaded for them. */
  clients: number;
  loadedModels: number;
  /**
   * The KV sequences of the asking window's models (null before they are loaded): whose prompt
   * each holds (this window's by task, another window's, or nobody's), its tokens and their KV
   * bytes; and how often a sequence was taken from an owner because all were in use.
   */
  kvSequences?: KvSequencesReport | null;
  /** The next-edit model of the asking window's models (null before next edits were asked for): its memory and KV sequences. */
  nextEditModel?: NextEditModelReport | null;
}

/** One-way messages (no response): document mirroring for the n-gram index, cancellation. */
export type WorkerNotification =
  | { kind: 'cancel'; id: number }
  | { kind: 'documentOpen'; key: string; text: string }
  | { kind: 'documentEdit'; key: string; edits: DocumentEdit[] }
  | { kind: 'documentClose'; key: string }
  | { kind: 'accepted'; key: string; text: string };

export type ClientMessage =
  | { v: typeof PROTOCOL_VERSION; type: 'request'; id: number; method: keyof WorkerMethods; params: unknown }
  | { v: typeof PROTOCOL_VERSION; type: 'notify'; notification: WorkerNotification };

export interface WorkerError {
  message: string;
  code?: string;
}

export type WorkerMessage =
  | { v: typeof PROTOCOL_VERSION; type: 'response'; id: number; ok: true; result: unknown }
  | { v: typeof PROTOCOL_VERSION; type: 'response'; id: number; ok: false; error: WorkerError }
  | { v: typeof PROTOCOL_VERSION; type: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; message: string }
  /** Progress of a running request (`download`), a few times a second at most. */
  | { v: typeof PROTOCOL_VERSION; type: 'progress'; id: number; progress: DownloadProgress }
  /**
   * A final edit of a running `nextEdit` request (id): verified tokens follow it, so
   * the result will hold it unchanged; `ms` from the request's start in the worker.
   */
  | { v: typeof PROTOCOL_VERSION; type: 'nextEditPartial'; id: number; edit: TextReplacement; ms: number }
  /** The worker lost a document's mirror (an edit it could not apply): send its full text again. */
  | { v: typeof PROTOCOL_VERSION; type: 'resync'; key: string }
  /**
   * Sent to each window waiting on a load, just before llama.cpp reads one model file:
   * if the worker ends before the load answers, this file was being read (the window's quarantine
   * counts it against that file, not the whole pair). A client that ignores it loses nothing else.
   */
  | { v: typeof PROTOCOL_VERSION; type: 'modelLoading'; file: string };
