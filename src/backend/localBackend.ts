// Completions from Draftline's own inference worker (llama.cpp in a child process): the draft
// and target models on this machine, with lossless speculative decoding and the n-gram index.
import type { BackendInfo, CompletionRequest, CompletionResult, DocumentEdit, LoadedModelsInfo, ModelSettings, SpeculationSettings } from '../shared/types';
import type { SharedWorkerAddress } from '../worker/sharedWorker';
import { WorkerClient } from '../worker/workerClient';
import type { BackendEvents, InferenceBackend, OutageStatus } from './backend';

export interface LocalBackendOptions {
  /** The bundled worker script (dist/worker.js). */
  workerPath: string;
  /** The GPU choice at start-up: the worker starts loading that llama.cpp binding at once. */
  preloadGpu?: ModelSettings['gpu'];
  /** The worker all windows share, or none for a private one (see WorkerClientOptions.shared). */
  shared?: SharedWorkerAddress;
  /** The models and speculation settings to load, read when load() runs (model downloads resolved, through this worker). */
  settings(worker: WorkerClient): Promise<{ models: ModelSettings; speculation: SpeculationSettings }>;
}

export class LocalBackend implements InferenceBackend {
  readonly kind = 'local' as const;
  readonly worker: WorkerClient;

  constructor(
    private readonly options: LocalBackendOptions,
    events: BackendEvents,
  ) {
    this.worker = new WorkerClient({
      workerPath: options.workerPath,
      env: options.preloadGpu ? { DRAFTLINE_PRELOAD_GPU: options.preloadGpu } : {},
      log: events.log,
      onCrash: () => events.onOutage(),
      onRestart: () => events.onRecovered(),
      onResync: (key) => events.onResync(key),
      shared: options.shared,
    });
  }

  async load(): Promise<BackendInfo> {
    const { models, speculation } = await this.options.settings(this.worker);
    const local: LoadedModelsInfo = await this.worker.request('load', { models, speculation });
    return { kind: 'local', model: local.target.name, local };
  }

  complete(request: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult> {
    return this.worker.request('complete', { request }, signal);
  }

  async configure(speculation: SpeculationSettings): Promise<void> {
    await this.worker.request('configure', { speculation });
  }

  /** Memory of this machine as the worker's llama.cpp sees it (the recommended model pair depends on it). */
  systemInfo() {
    return this.worker.request('systemInfo', {});
  }

  openDocument(key: string, text: string): void {
    this.worker.notify({ kind: 'documentOpen', key, text });
  }

  editDocument(key: string, edits: DocumentEdit[]): void {
    this.worker.notify({ kind: 'documentEdit', key, edits });
  }

  closeDocument(key: string): void {
    this.worker.notify({ kind: 'documentClose', key });
  }

  accepted(key: string, text: string): void {
    this.worker.notify({ kind: 'accepted', key, text });
  }

  outage(): OutageStatus | null {
    const restart = this.worker.restartStatus();
    return restart && { description: restart.description, remainingMs: restart.remainingMs, failuresInARow: restart.crashesInARow };
  }

  dispose(): void {
    this.worker.dispose();
  }
}
