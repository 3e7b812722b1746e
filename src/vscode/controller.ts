import * as path from 'node:path';
import * as vscode from 'vscode';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, type CompletionBackend } from '../engine/completionEngine';
import { describeLoadTimings } from '../engine/loadTimings';
import { statsReport } from '../engine/statsReport';
import type { CompletionRequest, CompletionResult, LoadedModelsInfo } from '../engine/types';
import { WorkerClient, WorkerError } from '../worker/workerClient';
import { describeBackend } from '../models/backend';
import { DocumentSync } from './documentSync';
import { offerRecommendedPair, resolveModelFiles } from './modelDownloads';
import { DraftlineInlineProvider } from './inlineProvider';
import { readEngineSettings, readExtraContextSettings, readModelSettings, readSpeculationSettings, debounceMs, SECTION } from './settings';
import { ExtraContextCollector } from './extraContext';
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
  private readonly extraContext: ExtraContextCollector;
  /** Why the active document gets no completions (e.g. untitled plain text), or null when it does. */
  noCompletionReason: string | null = null;
  /** Settings problems reported this session: each is logged once; new ones share one notification. */
  private readonly settingProblems = new Set<string>();
  private pendingSettingProblems: string[] = [];
  /** The notice shown while the worker is down: one per burst of crashes, its countdown kept true. */
  private crashNotice: { refresh(): void; close(): void } | null = null;
  private readonly activatedAt = performance.now();
  /** Activation to the first models ready, in ms (null until then): the cold-start figure. */
  activationToReadyMs: number | null = null;
  readonly statsUri = vscode.Uri.parse('draftline-stats:Draftline%20Report.md');
  private readonly statsChanged = new vscode.EventEmitter<vscode.Uri>();

  constructor(readonly context: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel('Draftline', { log: true });
    this.worker = new WorkerClient({
      workerPath: path.join(context.extensionPath, 'dist', 'worker.js'),
      // The worker starts loading the llama.cpp binding for this backend as soon as it runs.
      env: { DRAFTLINE_PRELOAD_GPU: readModelSettings(context.extensionPath).gpu },
      log: (level, message) => this.log[level](message),
      onCrash: () => this.onWorkerCrash(),
      onRestart: () => void this.loadModels('worker restarted'),
      onResync: (key) => this.documentSync.resend(key),
    });
    const backend: CompletionBackend = {
      complete: (request: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult> =>
        this.worker.request('complete', { request }, signal),
    };
    this.engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS, ...readEngineSettings(false, this.reportSettingProblem) });
    this.documentSync = new DocumentSync((n) => this.worker.notify(n));
    this.extraContext = new ExtraContextCollector(() => readExtraContextSettings(this.reportSettingProblem));
    const provider = (this.provider = new DraftlineInlineProvider({
      engine: () => (this.models ? this.engine : null),
      debounceMs: () => debounceMs(this.reportSettingProblem),
      onBusy: (busy) => this.statusBar.setState(busy ? { kind: 'busy' } : this.restingState()),
      onCompleted: () => this.refreshStats(),
      onError: (error) => this.log.warn(`completion failed: ${error.message}`),
      onSkipped: (skip) => this.setNoCompletionReason(skip?.message ?? null),
      extraContext: (document) => this.extraContext.contextFor(document),
    }));
    this.disposables.push(
      this.extraContext,
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
      vscode.window.onDidChangeActiveTextEditor(() => this.checkActiveDocument()),
      // Picking a language for an untitled file reopens it under the new language id.
      vscode.workspace.onDidOpenTextDocument((d) => d === vscode.window.activeTextEditor?.document && this.checkActiveDocument()),
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
    const models = readModelSettings(this.context.extensionPath, this.reportSettingProblem);
    this.statusBar.setState({ kind: 'loading' });
    this.log.info(`loading models (${reason}): target ${models.targetModel}${models.draftModel ? `, draft ${models.draftModel}` : ''}`);
    try {
      const files = await resolveModelFiles(this.context, models, this.worker);
      if (generation !== this.loadGeneration) return;
      const info = await this.worker.request('load', { models: files, speculation: readSpeculationSettings(this.reportSettingProblem) });
      if (generation !== this.loadGeneration) return;
      this.models = info;
      this.loadError = null;
      this.crashNotice?.close();
      if (this.activationToReadyMs === null) {
        this.activationToReadyMs = Math.round(performance.now() - this.activatedAt);
        const t = info.loadTimings;
        this.log.info(`ready ${this.activationToReadyMs} ms after activation${t ? ` (worker up at ${t.workerAgeMs} ms of its life, then ${describeLoadTimings(t)})` : ''}`);
      }
      this.engine.settings = readEngineSettings(info.draft !== null, this.reportSettingProblem);
      this.engine.cache.clear();
      this.documentSync.resendAll();
      this.statusBar.setModels(info, this.engine.mode, describeBackend(models.gpu, info).text);
      this.checkActiveDocument();
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
      const code = (error as WorkerError).code;
      // A crash or the backoff after one: the restart countdown is on screen, and a reload follows.
      if (code !== 'crashed' && code !== 'restarting') {
        this.crashNotice?.close();
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
    this.engine.settings = readEngineSettings(this.models?.draft != null, this.reportSettingProblem);
    // Turned back on: VS Code does not ask again by itself, so the cursor would stay bare.
    if (!wasEnabled && this.engine.settings.enabled && vscode.window.activeTextEditor) void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
    this.engine.cache.clear();
    if (this.models) void this.worker.request('configure', { speculation: readSpeculationSettings(this.reportSettingProblem) }).catch(() => undefined);
    this.statusBar.setModels(this.models, this.engine.mode);
    this.checkActiveDocument();
    this.statusBar.setState(this.restingState());
    this.refreshStats();
  }

  refreshStats(): void {
    this.statusBar.setSummary(this.engine.stats.summary(), this.engine.mode);
    this.statsChanged.fire(this.statsUri);
  }

  /** A setting was out of bounds, mistyped or set where it is not read: say so, once, and carry on. */
  private readonly reportSettingProblem = (message: string): void => {
    if (this.settingProblems.has(message)) return;
    this.settingProblems.add(message);
    this.log.warn(`settings: ${message}`);
    // The problems one read of the settings finds come in the same tick: one notification for them.
    if (this.pendingSettingProblems.push(message) > 1) return;
    setTimeout(() => {
      const messages = this.pendingSettingProblems.splice(0);
      void vscode.window.showWarningMessage(`Draftline: ${messages.join(' ')}`, 'Open Settings').then((choice) => {
        if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', `@ext:${this.context.extension.id}`);
      });
    }, 0);
  };

  private restingState() {
    if (this.loadError) return { kind: 'error' as const, message: this.loadError };
    if (!this.models) return { kind: 'loading' as const };
    if (!this.engine.settings.enabled) return { kind: 'off' as const };
    // Off for this document: the status bar shows why once its 'off' state carries a message.
    return this.noCompletionReason ? { kind: 'off' as const, message: this.noCompletionReason } : { kind: 'ready' as const };
  }

  /** Whether the active document gets completions at all, before anyone types in it. */
  private checkActiveDocument(): void {
    const document = vscode.window.activeTextEditor?.document;
    if (!document) return this.setNoCompletionReason(null);
    const length = document.offsetAt(document.lineAt(document.lineCount - 1).range.end);
    this.setNoCompletionReason(this.engine.skipReason({ uri: document.uri.toString(), languageId: document.languageId, length })?.message ?? null);
  }

  private setNoCompletionReason(reason: string | null): void {
    if (reason === this.noCompletionReason) return;
    this.noCompletionReason = reason;
    if (reason) this.log.info(`no completions for the active document: ${reason}`);
    this.statusBar.setState(this.restingState());
  }

  private onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration(SECTION)) return;
    if (MODEL_KEYS.some((k) => e.affectsConfiguration(k))) void this.loadModels('settings changed');
    else this.applyLiveSettings();
  }

  /**
   * One notification per burst of crashes, counting down the client's real backoff (which doubles
   * with each crash in a row, up to 30 s) until the models are loaded again.
   */
  private onWorkerCrash(): void {
    this.models = null;
    if (this.crashNotice) return this.crashNotice.refresh();
    let close!: () => void;
    const closed = new Promise<void>((resolve) => (close = resolve));
    let refresh = () => undefined as void;
    const notice = { refresh: () => refresh(), close: () => ((this.crashNotice = null), close()) };
    this.crashNotice = notice;
    void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Draftline' }, async (progress) => {
      refresh = () => {
        const restart = this.worker.restartStatus();
        const message = restart
          ? `the inference worker stopped (${restart.description}${restart.crashesInARow > 1 ? `, ${restart.crashesInARow} times in a row` : ''}). Restarting in ${Math.ceil(restart.remainingMs / 1000)} s; the editor is not affected (Draftline: Show Log for details).`
          : 'the inference worker restarted; loading the models again…';
        progress.report({ message });
        this.statusBar.setState({ kind: 'error', message: restart ? `${restart.description}; restarting in ${Math.ceil(restart.remainingMs / 1000)} s` : 'restarting' });
      };
      refresh();
      const timer = setInterval(refresh, 1000);
      await closed;
      clearInterval(timer);
    });
  }

  dispose(): void {
    this.crashNotice?.close();
    this.worker.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
