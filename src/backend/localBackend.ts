// Completions from Draftline's own inference worker (llama.cpp in a child process): the draft
// and target models on this machine, with lossless speculative decoding and the n-gram index.
import type { BackendInfo, CompletionRequest, CompletionResult, DocumentEdit, LoadedModelsInfo, ModelSettings, SpeculationSettings } from '../shared/types';
import { gpuName } from '../engine/statusText';
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

/**
 * How a worker that a GPU took down ends: llama.cpp's GGML_ABORT on a backend error (device lost,
 * out of memory) is SIGABRT, a driver fault a memory signal. SIGKILL/SIGTERM (the OOM killer, a
 * user's kill) and clean exits say nothing about the GPU.
 */
const GPU_CRASH = /SIGABRT|SIGSEGV|SIGBUS|SIGILL|SIGFPE/;

/** The settings a GPU fallback applies to: it lasts until one of them changes (or the window reloads). */
const placementKey = (m: ModelSettings) => JSON.stringify([m.targetModel, m.draftModel, m.gpu, m.gpuLayers]);

export class LocalBackend implements InferenceBackend {
  readonly kind = 'local' as const;
  readonly worker: WorkerClient;
  /** What the last load put where, to tell whether a crash happened with the models on a GPU. */
  private lastLoad: { key: string; info: LoadedModelsInfo } | null = null;
  /** Set when the worker ended while the models ran on a GPU: later loads of the same settings go to the CPU. */
  private cpuFallback: { key: string; reason: string } | null = null;

  constructor(
    private readonly options: LocalBackendOptions,
    events: BackendEvents,
  ) {
    this.worker = new WorkerClient({
      workerPath: options.workerPath,
      env: options.preloadGpu ? { DRAFTLINE_PRELOAD_GPU: options.preloadGpu } : {},
      log: events.log,
      onCrash: (description) => {
        this.noteCrash(description);
        events.onOutage();
      },
      onRestart: () => events.onRecovered(),
      onResync: (key) => events.onResync(key),
      shared: options.shared,
    });
  }

  async load(): Promise<BackendInfo> {
    const { models, speculation } = await this.options.settings(this.worker);
    const key = placementKey(models);
    const fallback = this.cpuFallback?.key === key ? this.cpuFallback : null;
    const effective: ModelSettings = fallback ? { ...models, gpu: 'cpu', gpuLayers: 0, gpuFallback: fallback.reason } : models;
    const local: LoadedModelsInfo = await this.worker.request('load', { models: effective, speculation });
    this.lastLoad = { key, info: local };
    return { kind: 'local', model: local.target.name, local };
  }

  /**
   * The worker ended. If it did so with the models on a GPU, and the way a GPU failure ends it, the
   * restarted worker loads them on the CPU: a driver or memory fault must not leave the user with a
   * worker that dies at every completion. A CPU run that crashes is the worker's usual restart.
   */
  private noteCrash(description: string): void {
    const last = this.lastLoad?.info;
    if (!last || !this.lastLoad || last.backend === 'cpu' || last.gpuFallback || !GPU_CRASH.test(description)) return;
    if (last.gpuLayers.target + last.gpuLayers.draft === 0) return;
    const devices = last.runtime?.gpuDevices.length ? ` (${last.runtime.gpuDevices.join(', ')})` : '';
    this.cpuFallback = {
      key: this.lastLoad.key,
      reason: `the inference worker ended (${description}) while the models ran on ${gpuName(last.backend)}${devices}; they run on the CPU until draftline.gpu or the models change, or the window reloads`,
    };
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
