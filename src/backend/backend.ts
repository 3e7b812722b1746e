// The one seam between the VS Code layer and whatever computes completions and next edits (the
// latter through nextEdit/provider.ts, the only part the next-edit editor code knows). The
// in-process worker (localBackend.ts) and the inference servers (src/remote/) implement it alike;
// only the controller knows which one runs, and it can swap them without a reload.
import type { NextEditProvider } from '../nextEdit/provider';
import type { BackendInfo } from '../shared/backendInfo';
import type { AlternativesResult, CompletionRequest, CompletionResult, DocumentEdit } from '../shared/completion';
import type { BackendKind, SpeculationSettings } from '../shared/settings';

/** Where completions are computed: the worker client in the extension, an in-process session in tests. */
export interface CompletionBackend {
  complete(request: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult>;
  /**
   * Up to `count` alternatives to the greedy completion of `request` (see AlternativesResult), asked
   * only on demand; a backend without them leaves this out.
   */
  alternatives?(request: CompletionRequest, count: number, signal?: AbortSignal): Promise<AlternativesResult>;
}

/** Why a backend cannot serve right now, while it waits to try again (a crashed worker, an unreachable server). */
export interface OutageStatus {
  description: string;
  /** Until the next attempt. */
  remainingMs: number;
  failuresInARow: number;
}

export type BackendLog = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

/** What a backend tells the controller, whenever it happens. */
export interface BackendEvents {
  log: BackendLog;
  /** It stopped serving (see outage() for when it tries again); completions fail until onRecovered. */
  onOutage(): void;
  /** It serves again after an outage: load() again (a restarted worker has no models). */
  onRecovered(): void;
  /** The backend lost a document's mirror: send its full text again. */
  onResync(key: string): void;
}

export interface InferenceBackend extends CompletionBackend, NextEditProvider {
  readonly kind: BackendKind;
  /** Loads the models (in-process) or checks the server and its model; describes what serves completions. */
  load(): Promise<BackendInfo>;
  /** Live speculation settings (in-process only: a server decodes its own way). */
  configure(speculation: SpeculationSettings): Promise<void>;
  /**
   * Open documents, mirrored for n-gram speculation (in-process only). A server gets nothing but
   * the request's own window: these are no-ops there, so nothing else of the user's code leaves the machine.
   */
  openDocument(key: string, text: string): void;
  editDocument(key: string, edits: DocumentEdit[]): void;
  closeDocument(key: string): void;
  /** The user accepted a completion: n-gram material for the next ones (in-process only). */
  accepted(key: string, text: string): void;
  /** The outage in progress, or null while the backend serves. */
  outage(): OutageStatus | null;
  dispose(): void;
}
