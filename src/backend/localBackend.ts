// Completions from Draftline's own inference worker (llama.cpp in a child process): the draft
// and target models on this machine, with lossless speculative decoding and the n-gram index.
import type { AlternativesResult, CompletionRequest, CompletionResult, DocumentEdit } from '../shared/completion';
import type { BackendInfo, LoadedModelsInfo } from '../shared/backendInfo';
import type { ModelSettings, SpeculationSettings } from '../shared/settings';
import { gpuName } from '../stats/statusText';
import { isolatedAddress, type SharedWorkerAddress } from '../worker/sharedWorker';
import { type CrashContext, WorkerClient } from '../worker/workerClient';
import { ModelQuarantine, QuarantinedModelError } from './modelQuarantine';
import type { BackendEvents, InferenceBackend, OutageStatus } from './backend';
import type { NextEditFormatId, NextEditRequest, NextEditResult, TextReplacement } from '../nextEdit/types';
import { noNextEdit } from '../nextEdit/noSuggestion';

export interface LocalBackendOptions {
  /** The bundled worker script (dist/worker.js). */
  workerPath: string;
  /** The GPU choice at start-up: the worker starts loading that llama.cpp binding at once. */
  preloadGpu?: ModelSettings['gpu'];
  /**
   * The shared worker of this environment, or none for a private one (see WorkerClientOptions.shared).
   * The models load in the one of it that serves their pair (sharedWorker.ts isolatedAddress); this
   * one serves what comes before (model downloads, system information).
   */
  shared?: SharedWorkerAddress;
  /** How long a shared worker that this window starts lives on after its last window (0: it exits with it). */
  sharedIdleMs?: number;
  /** Model files that ended the worker (none: a quarantine of this backend's own, in memory). */
  quarantine?: ModelQuarantine;
  /** The models and speculation settings to load, read when load() runs (model downloads resolved, through this worker). */
  settings(worker: WorkerClient): Promise<{ models: ModelSettings; speculation: SpeculationSettings }>;
  /**
   * The next-edit model's local file (draftline.nextEdit.model resolved, downloaded if the user
   * agrees) and the forced format, asked at each next-edit request (the answer is kept per setting
   * value): the worker loads a file of its own on the first request that names it. Absent: the target serves.
   */
  nextEditModel?(worker: WorkerClient): Promise<{ file: string; format: NextEditFormatId | 'auto' }>;
}

/**
 * How a worker that a GPU took down ends: llama.cpp's GGML_ABORT on a backend error (device lost,
 * out of memory) is SIGABRT, a driver fault a memory signal. SIGKILL/SIGTERM (the OOM killer, a
 * user's kill) and clean exits say nothing about the GPU.
 */
const GPU_CRASH = /SIGABRT|SIGSEGV|SIGBUS|SIGILL|SIGFPE/;

/**
 * Whether the worker's end (`description`, as WorkerClient tells it) is one a model file can cause: a
 * crash signal from native code (llama.cpp's GGML_ABORT is SIGABRT; a bad read, SIGSEGV or SIGBUS).
 * Never a kill from outside (SIGKILL from the OOM killer or a user, SIGTERM, SIGINT, SIGHUP), an exit,
 * or an end whose cause is not known (a shared worker's whose starting window is gone).
 */
export function blamesTheModel(description: string): boolean {
  return /\b(SIGABRT|SIGSEGV|SIGBUS|SIGILL|SIGFPE|SIGTRAP)\b/.test(description);
}

/** The models as the worker keys a loaded pair (workerMain.ts modelsKey, without the files' stamps): windows with the same share its worker. */
const pairKey = (m: ModelSettings) => {
  const { attentionMemoFile: _memo, ...loaded } = m;
  return JSON.stringify(loaded);
};

/** The settings a GPU fallback applies to: it lasts until one of them changes (or the window reloads). */
const placementKey = (m: ModelSettings) => JSON.stringify([m.targetModel, m.draftModel, m.gpu, m.gpuLayers]);

export class LocalBackend implements InferenceBackend {
  readonly kind = 'local' as const;
  readonly worker: WorkerClient;
  /** What the last load put where, to tell whether a crash happened with the models on a GPU. */
  private lastLoad: { key: string; info: LoadedModelsInfo } | null = null;
  /** Set when the worker ended while the models ran on a GPU: later loads of the same settings go to the CPU. */
  private cpuFallback: { key: string; reason: string } | null = null;
  /** The model files of the last load asked for (loaded or not), to blame for a crash. */
  private lastModels: ModelSettings | null = null;
  readonly quarantine: ModelQuarantine;

  constructor(
    private readonly options: LocalBackendOptions,
    events: BackendEvents,
  ) {
    this.quarantine = options.quarantine ?? new ModelQuarantine();
    this.worker = new WorkerClient({
      workerPath: options.workerPath,
      env: {
        ...(options.preloadGpu ? { DRAFTLINE_PRELOAD_GPU: options.preloadGpu } : {}),
        ...(options.sharedIdleMs !== undefined ? { DRAFTLINE_SHARED_IDLE_MS: String(options.sharedIdleMs) } : {}),
      },
      log: events.log,
      onCrash: (description, _restartInMs, _inARow, during) => {
        this.noteCrash(description);
        this.noteModelCrash(description, during, events.log);
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
    const quarantined = this.quarantine.check([effective.targetModel, effective.draftModel]);
    if (quarantined.length > 0) throw new QuarantinedModelError(quarantined);
    // Windows share a worker only when they load the same pair: a model that aborts llama.cpp ends
    // the windows that load it, no others.
    if (this.options.shared) await this.worker.useSharedWorker(isolatedAddress(this.options.shared, pairKey(effective)));
    this.lastModels = effective;
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

  /**
   * The worker ended while this window loaded or generated with its models: counted against the file
   * llama.cpp was reading (a load) or the pair (a generation); a file that did so twice is
   * quarantined (backend/modelQuarantine.ts) and the next load refuses it with a message naming it.
   */
  private noteModelCrash(description: string, during: CrashContext, log: BackendEvents['log']): void {
    const models = this.lastModels;
    if (!models || !blamesTheModel(description)) return;
    // A next-edit request with a `modelLoading` of its own was loading the next-edit model: that file is to blame.
    const loading = during.pending.includes('load') || (during.pending.includes('nextEdit') && during.loadingFile !== null);
    if (!loading && !during.pending.some((m) => m === 'complete' || m === 'alternatives' || m === 'nextEdit')) return;
    const files = loading && during.loadingFile ? [during.loadingFile] : [models.targetModel, models.draftModel].filter((f): f is string => Boolean(f));
    const what = `${description} while ${loading ? 'loading it' : `generating with ${files.length > 1 ? 'them' : 'it'}`}`;
    const quarantined = this.quarantine.recordCrash(files, what, during.workerPid);
    if (quarantined) log('error', `${files.join(' with ')} ended the inference worker ${quarantined.crashes} times (${what}): not loaded again until the file changes or you load it anyway`);
  }

  complete(request: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult> {
    return this.worker.request('complete', { request }, signal);
  }

  /**
   * Alternatives to the request's greedy completion, computed in the worker (InferenceSession.alternatives):
   * scheduled there as this window's completion, so the window's next request (a keystroke) stops them.
   */
  alternatives(request: CompletionRequest, count: number, signal?: AbortSignal): Promise<AlternativesResult> {
    return this.worker.request('alternatives', { request, count }, signal);
  }

  /**
   * A next-edit suggestion computed in the worker: on this window's own KV sequence,
   * after its completions, superseded by the window's next next-edit request.
   */
  async nextEdit(request: NextEditRequest, signal?: AbortSignal, onEdit?: (edit: TextReplacement, ms: number) => void): Promise<NextEditResult> {
    let model = '';
    let format = request.format;
    if (this.options.nextEditModel) {
      try {
        const chosen = await this.options.nextEditModel(this.worker);
        model = chosen.file;
        format ??= chosen.format;
      } catch (error) {
        // Declined or failed download: no next edits, said once per setting value (the answer is kept).
        return noNextEdit(request, 'error', (error as Error).message);
      }
      const quarantined = model ? this.quarantine.check([model]) : [];
      if (quarantined.length > 0) return noNextEdit(request, 'error', new QuarantinedModelError(quarantined).message);
    }
    return this.worker.request('nextEdit', { request: format ? { ...request, format } : request, ...(model ? { model } : {}) }, signal, { onEdit });
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
