import * as path from 'node:path';
import * as vscode from 'vscode';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, type CompletionBackend } from '../engine/completionEngine';
import { statsReport } from '../engine/statsReport';
import type { CompletionRequest, CompletionResult, LoadedModelsInfo } from '../engine/types';
import { WorkerClient, WorkerError } from '../worker/workerClient';
import { describeBackend } from '../models/backend';
import { DocumentSync } from './documentSync';
import { offerRecommendedPair, resolveModelFiles } from './modelDownloads';
import { DraftlineInlineProvider } from './inlineProvider';
import { readEngineSettings, readModelSettings, readSpeculationSettings, debounceMs, SECTION } from './settings';
import { StatusBar } from './statusBar';

const MODEL_KEYS = ['targetModel', 'draftModel', 'gpu', 'gpuLayers', 'threads', 'contextSize', 'huggingFaceEndpoint'].map((k) => `${SECTION}.${k}`);

/** Wires the engine, the worker, the status bar and the editor together. Owns their lifetimes. */
export class DraftlineController implements vscode.Disposable {
  readonly log: vscode.LogOutputChannel;
  readonly statusBar = new StatusBar();
  readonly worker: WorkerClient;
  readonly engine: CompletionEngine;
  models: LoadedModelsInfo | null = null;
  /** The inline completion provider (exposed for the extension-host test suite). */
  readonly provider: DraftlineInlineProvider;
  private loadError: string | null = null;
  private loadGeneration = 0;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly documentSync: DocumentSync;
  private lastCrashNotice = 0;
  readonly statsUri = vscode.Uri.parse('draftline-stats:Draftline%20Report.md');
  private readonly statsChanged = new vscode.EventEmitter<vscode.Uri>();

  constructor(readonly context: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel('Draftline', { log: true });
    this.worker = new WorkerClient({
      workerPath: path.join(context.extensionPath, 'dist', 'worker.js'),
      log: (level, message) => this.log[level](message),
      onCrash: (description, restartInMs) => this.onWorkerCrash(description, restartInMs),
      onRestart: () => void this.loadModels('worker restarted'),
      onResync: (key) => this.documentSync.resend(key),
    });
    const backend: CompletionBackend = {
      complete: (request: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult> =>
        this.worker.request('complete', { request }, signal),
    };
    this.engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS, ...readEngineSettings(false) });
    this.documentSync = new DocumentSync((n) => this.worker.notify(n));
    const provider = (this.provider = new DraftlineInlineProvider({
      engine: () => (this.models ? this.engine : null),
      debounceMs,
      onBusy: (busy) => this.statusBar.setState(busy ? { kind: 'busy' } : this.restingState()),
      onCompleted: () => this.refreshStats(),
      onError: (error) => this.log.warn(`completion failed: ${error.message}`),
    }));
    this.disposables.push(
      this.log,
      this.statusBar,
      this.documentSync,
      this.statsChanged,
      vscode.languages.registerInlineCompletionItemProvider({ pattern: '**' }, provider),
      vscode.workspace.registerTextDocumentContentProvider('draftline-stats', {
        onDidChange: this.statsChanged.event,
        provideTextDocumentContent: () => statsReport(this.engine.stats, this.engine.mode, this.models),
      }),
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
    );
  }

  start(): void {
    void this.loadModels('startup').then(() => {
      if (readModelSettings(this.context.extensionPath).targetIsEmbedded && this.models) {
        void offerRecommendedPair(this.context, this.worker, this.log).catch((e: Error) => this.log.warn(`model offer: ${e.message}`));
      }
    });
  }

  /** Loads (or reloads) the configured models in the worker; the previous ones keep serving until then. */
  async loadModels(reason: string): Promise<void> {
    const generation = ++this.loadGeneration;
    const models = readModelSettings(this.context.extensionPath);
    this.statusBar.setState({ kind: 'loading' });
    this.log.info(`loading models (${reason}): target ${models.targetModel}${models.draftModel ? `, draft ${models.draftModel}` : ''}`);
    try {
      const files = await resolveModelFiles(this.context, models);
      if (generation !== this.loadGeneration) return;
      const info = await this.worker.request('load', { models: files, speculation: readSpeculationSettings() });
      if (generation !== this.loadGeneration) return;
      this.models = info;
      this.loadError = null;
      this.engine.settings = readEngineSettings(info.draft !== null);
      this.engine.cache.clear();
      this.documentSync.resendAll();
      this.statusBar.setModels(info, this.engine.mode, describeBackend(models.gpu, info).text);
      this.statusBar.setState(this.restingState());
      if (info.draftProblem) void vscode.window.showWarningMessage(`Draftline: ${info.draftProblem}`);
      if (info.promptFormat === 'prefix-only') {
        void vscode.window.showWarningMessage(`Draftline: ${info.target.name} has no fill-in-the-middle tokens; completions see only the text before the cursor.`);
      }
      this.refreshStats();
      // Whatever the user typed while the models loaded gets its completion now.
      if (vscode.window.activeTextEditor) void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
    } catch (error) {
      if (generation !== this.loadGeneration) return;
      this.models = null;
      const message = (error as Error).message;
      this.loadError = message;
      this.log.error(`model load failed: ${message}`);
      this.statusBar.setModels(null, this.engine.mode);
      this.statusBar.setState({ kind: 'error', message });
      this.refreshStats();
      if ((error as WorkerError).code !== 'crashed') {
        void vscode.window.showErrorMessage(`Draftline: cannot load the model. ${message}`, 'Select Target Model', 'Show Log').then((choice) => {
          if (choice === 'Select Target Model') void vscode.commands.executeCommand('draftline.selectTargetModel');
          if (choice === 'Show Log') this.log.show();
        });
      }
    }
  }

  /** Applies toggles and knobs that need no reload. */
  applyLiveSettings(): void {
    const wasEnabled = this.engine.settings.enabled;
    this.engine.settings = readEngineSettings(this.models?.draft != null);
    // Turned back on: VS Code does not ask again by itself, so the cursor would stay bare.
    if (!wasEnabled && this.engine.settings.enabled && vscode.window.activeTextEditor) void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
    this.engine.cache.clear();
    if (this.models) void this.worker.request('configure', { speculation: readSpeculationSettings() }).catch(() => undefined);
    this.statusBar.setModels(this.models, this.engine.mode);
    this.statusBar.setState(this.restingState());
    this.refreshStats();
  }

  refreshStats(): void {
    this.statusBar.setSummary(this.engine.stats.summary(), this.engine.mode);
    this.statsChanged.fire(this.statsUri);
  }

  private restingState() {
    if (this.loadError) return { kind: 'error' as const, message: this.loadError };
    if (!this.models) return { kind: 'loading' as const };
    return this.engine.settings.enabled ? { kind: 'ready' as const } : { kind: 'off' as const };
  }

  private onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration(SECTION)) return;
    if (MODEL_KEYS.some((k) => e.affectsConfiguration(k))) void this.loadModels('settings changed');
    else this.applyLiveSettings();
  }

  private onWorkerCrash(description: string, restartInMs: number): void {
    this.models = null;
    this.statusBar.setState({ kind: 'error', message: `${description}; restarting` });
    // One notice per burst of crashes is enough.
    if (Date.now() - this.lastCrashNotice > 60_000) {
      this.lastCrashNotice = Date.now();
      void vscode.window
        .showErrorMessage(`Draftline: the inference worker stopped (${description}). Restarting in ${Math.round(restartInMs / 1000)} s; the editor is not affected.`, 'Show Log')
        .then((choice) => choice === 'Show Log' && this.log.show());
    }
  }

  dispose(): void {
    this.worker.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
