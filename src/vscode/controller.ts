import * as path from 'node:path';
import * as vscode from 'vscode';
import type { InferenceBackend } from '../backend/backend';
import { LocalBackend } from '../backend/localBackend';
import { ModelQuarantine } from '../backend/modelQuarantine';
import type { CompletionEngine } from '../engine/completionEngine';
import { type LoadInputs, reloadOnChange } from '../settings/declaredSettings';
import { describeSlowGhostText } from '../stats/ghostTextTimeline';
import { ModelReadiness, NOT_READY_CAUSES } from '../stats/modelReadiness';
import { describeAlternatives, prefetchOrigin } from '../stats/statsReport';
import type { BackendInfo, LoadedModelsInfo } from '../shared/backendInfo';
import type { BackendSettings } from '../shared/settings';
import type { WorkerError } from '../worker/workerClient';
import { createBackend } from './backendFactory';
import { ActiveDocumentCheck } from './activeDocumentCheck';
import { DocumentSync } from './documentSync';
import { EditArrivals } from './editArrivals';
import { onKeystroke } from './keystrokes';
import { createEditorEngine } from './editorEngine';
import { modelFileNotes, modelFilesProvenance, readyMessage, showLoadFailure, showLoadWarnings } from './loadNotices';
import { prefetchAfterAccept, triggerGhostText } from './ghostTextTriggers';
import { adviseNextEditModel, type NextEditModelResolver, nextEditModelResolver, offerRecommendedPair } from './modelDownloads';
import { type OutageNotice, showOutageNotice } from './outageNotice';
import { DraftlineInlineProvider } from './inlineProvider';
import { readBackendSettings, readEngineSettings, readExtraContextSettings, readModelSettings, readSpeculationSettings, debounceMs, SECTION, type SettingProblemReport } from './settings';
import { ExtraContextCollector } from './extraContext';
import { StatusBar } from './statusBar';
import { StatsDisplay } from './statsDisplay';
import { settingProblemReporter } from './settingProblems';
import { NextEditController } from './nextEdit/nextEditController';
import { replaySourceFromEnvironment } from './nextEdit/replayFromEnvironment';
import { readNextEditUiSettings } from './settings';

/** Wires the engine, the backend, the status bar and the editor together. Owns their lifetimes. */
export class DraftlineController implements vscode.Disposable {
  readonly log: vscode.LogOutputChannel;
  readonly statusBar = new StatusBar();
  /** Where completions come from now (the local worker or a server); only the controller knows which. */
  backend: InferenceBackend;
  private backendSettings: BackendSettings;
  readonly engine: CompletionEngine;
  /** What serves completions, once loaded (null while loading or after a failure). */
  info: BackendInfo | null = null;
  /** The inline completion provider (exposed for the extension-host test suite). */
  readonly provider: DraftlineInlineProvider;
  private loadError: string | null = null;
  /** What the last load (or the one under way) was made from; null before one, or after one failed. */
  private loadedInputs: LoadInputs | null = null;
  private loadGeneration = 0;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly documentSync: DocumentSync;
  private readonly extraContext: ExtraContextCollector;
  /** Whether the active document gets completions at all (activeDocumentCheck.ts). */
  private readonly activeDocument: ActiveDocumentCheck;
  /** The notice shown while the worker is down: one per burst of crashes, its countdown kept true. */
  private crashNotice: OutageNotice | null = null;
  private readonly activatedAt = performance.now();
  /** Activation to the first models ready, in ms (null until then): the cold-start figure. */
  activationToReadyMs: number | null = null;
  /** The status bar's summary and Show Stats' view. */
  readonly stats: StatsDisplay;
  private readonly editArrivals = new EditArrivals();
  /** When the models could not serve, and why: the slow-ghost-text line tells that wait from the editor's. */
  private readonly readiness = new ModelReadiness();
  /** Model files that ended the inference worker twice, kept for every window of this profile. */
  readonly quarantine: ModelQuarantine;
  /** Next-edit suggestions: asked after a pause on an edit, drawn by their shape, Tab / Escape. */
  readonly nextEdits: NextEditController;
  /** The local backend's next-edit model, kept across backends: toggling next edits resets what it was answered. */
  private readonly nextEditModel: NextEditModelResolver;
  private nextEditsWereOn: boolean;
  /** A setting was out of bounds, mistyped or set where it is not read: say so, once, and carry on. */
  private readonly reportSettingProblem: SettingProblemReport;

  constructor(readonly context: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel('Draftline', { log: true });
    this.reportSettingProblem = settingProblemReporter(this.log, () => context.extension.id);
    this.quarantine = new ModelQuarantine(path.join(context.globalStorageUri.fsPath, 'model-quarantine.json'));
    this.nextEditModel = nextEditModelResolver(context, this.reportSettingProblem, this.log, () => this.refreshStats());
    this.nextEditsWereOn = readNextEditUiSettings(this.reportSettingProblem).enabled;
    this.backendSettings = readBackendSettings(this.reportSettingProblem);
    this.backend = this.createBackend(this.backendSettings);
    this.engine = createEditorEngine({
      backend: () => this.backend,
      reportSettingProblem: this.reportSettingProblem,
      log: this.log,
      onPrefetchReady: () => this.refreshStats(),
    });
    this.stats = new StatsDisplay({
      engine: () => this.engine,
      info: () => this.info,
      provenance: () => modelFilesProvenance(this.context, this.info?.local, this.nextEditModel.file()),
      fileNotes: () => modelFileNotes(this.context, this.info?.local, this.nextEditModel.file()),
      nextEditStats: () => this.nextEdits.stats,
      statusBar: this.statusBar,
      modeLabel: () => this.modeLabel,
    });
    this.documentSync = new DocumentSync(() => this.backend);
    this.activeDocument = new ActiveDocumentCheck({
      engine: () => this.engine,
      documentSync: this.documentSync,
      log: this.log,
      globalState: context.globalState,
      onChanged: () => this.statusBar.setState(this.restingState()),
    });
    this.extraContext = new ExtraContextCollector(() => readExtraContextSettings(this.reportSettingProblem));
    this.provider = this.createProvider();
    this.nextEdits = this.createNextEdits();
    this.disposables.push(
      this.nextEdits,
      this.editArrivals,
      this.extraContext,
      this.log,
      this.statusBar,
      this.documentSync,
      this.stats,
      vscode.languages.registerInlineCompletionItemProvider({ pattern: '**' }, this.provider),
      ...this.watchEditor(),
    );
  }

  private createProvider(): DraftlineInlineProvider {
    return new DraftlineInlineProvider({
      engine: () => (this.info ? this.engine : null),
      debounceMs: () => debounceMs(this.reportSettingProblem),
      onBusy: (busy) => this.statusBar.setState(busy ? { kind: 'busy' } : this.restingState()),
      onCompleted: (completion) => {
        if (completion.prefetched) {
          const made = completion.prefetchedBy ? ` ${prefetchOrigin(completion.prefetchedBy)}` : '';
          this.log.info(`ghost text served from a prefetch${made} (${completion.text.length} chars, ${completion.latencyMs.toFixed(1)} ms, no model call)`);
        }
        this.refreshStats();
      },
      onError: (error) => this.log.warn(`completion failed: ${error.message}`),
      onSkipped: (skip) => this.activeDocument.setReason(skip?.message ?? null),
      extraContext: (document) => this.extraContext.contextFor(document),
      lastEditAt: (document) => this.editArrivals.lastEditAt(document),
      onAnswered: (timeline) => {
        this.stats.lastTimeline = timeline;
        const slow = describeSlowGhostText(timeline);
        if (slow) this.log.info(slow);
      },
      modelsNotReady: (from, to) => this.readiness.notReadyBetween(from, to),
      onAlternatives: (answer) => {
        this.log.info(describeAlternatives(answer));
        this.refreshStats();
      },
      nextEditItem: (document, position) => this.nextEdits.ghost.itemAt(document, position),
      nextEditItemWhenAnswered: (document, position, token) => this.nextEdits.ghost.itemWhenAnswered(document, position, token),
      onFim: (document, position, phase) => this.nextEdits.fimPhase(document, position, phase),
    });
  }

  private createNextEdits(): NextEditController {
    // The real-editor tests' recorded answers (DRAFTLINE_NEXT_EDIT_REPLAY), else the backend's nextEdit.
    const replay = replaySourceFromEnvironment((message) => this.log.warn(message));
    return new NextEditController({
      log: this.log,
      source: () => replay ?? (this.info ? this.backend : null),
      noSourceReason: () => `no suggestion: ${this.backend.kind === 'local' ? 'the models are not loaded' : `the ${this.backend.kind} server is not connected`} yet`,
      settings: () => readNextEditUiSettings(this.reportSettingProblem),
      // The window copy proposer (with the draft and n-grams where there are): lossless, and where next edits are fast.
      mode: () => (this.engine.settings.speculation ? 'hybrid' : 'plain'),
      lastEditAt: (document) => this.editArrivals.lastEditAt(document),
      onStats: () => this.refreshStats(),
    });
  }

  /** The editor's events the controller follows: settings, keystrokes, the active document. */
  private watchEditor(): vscode.Disposable[] {
    return [
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
      // A keystroke stops a prefetch at once (the accept, or the typing, of the ghost text it was made for excepted).
      onKeystroke((uri, edits) => this.engine.documentEdited(uri, edits)),
      vscode.window.onDidChangeActiveTextEditor(() => this.activeDocument.check()),
      // Picking a language for an untitled file reopens it under the new language id.
      vscode.workspace.onDidOpenTextDocument((d) => d === vscode.window.activeTextEditor?.document && this.activeDocument.check()),
    ];
  }

  start(): void {
    void this.loadModels('startup').then(() => {
      const backend = this.backend;
      if (backend instanceof LocalBackend && readModelSettings(this.context.extensionPath).targetIsEmbedded && this.info) {
        void offerRecommendedPair(this.context, backend.worker, this.log).catch((e: Error) => this.log.warn(`model offer: ${e.message}`));
      }
    });
  }

  /**
   * The user accepted a completion in `key`: n-gram material for the next ones, and the completion
   * at the cursor after it is prefetched (ghostTextTriggers.ts).
   */
  accepted(key: string, text: string): void {
    this.backend.accepted(key, text);
    if (!this.info || !this.engine.settings.enabled) return;
    prefetchAfterAccept(this.engine, this.provider, key, (d) => this.extraContext.contextFor(d));
  }

  /** The in-process models, when the local backend serves (null for a server, or before a load). */
  get models(): LoadedModelsInfo | null {
    return this.info?.local ?? null;
  }

  /** The mode as the status bar says it: Draftline's decode mode, or the server that decodes its own way. */
  get modeLabel(): string {
    return this.info?.remote ? `server (${this.info.kind})` : this.engine.mode;
  }

  private createBackend(settings: BackendSettings): InferenceBackend {
    const events = {
      log: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => this.log[level](message),
      onOutage: () => this.onBackendOutage(),
      onRecovered: () => void this.loadModels(this.backend.kind === 'local' ? 'worker restarted' : 'the server answers again'),
      onResync: (key: string) => this.documentSync.resend(key),
    };
    const { context, log, reportSettingProblem, quarantine, nextEditModel } = this;
    return createBackend(settings, { context, log, reportSettingProblem, quarantine, nextEditModel }, events);
  }

  /**
   * Loads (or reloads) what serves completions: the models in the worker, or a server's check. The
   * previous ones keep serving until then. Another backend in the settings replaces the current one
   * here, without a reload of the window (the worker is stopped when a server takes over).
   */
  async loadModels(reason: string): Promise<void> {
    const generation = ++this.loadGeneration;
    const wanted = readBackendSettings(this.reportSettingProblem);
    this.useBackend(wanted);
    const backend = this.backend;
    this.statusBar.setState({ kind: 'loading' });
    // Local models as set (the backend resolves their downloads when it loads them).
    const models = backend.kind === 'local' ? readModelSettings(this.context.extensionPath, this.reportSettingProblem) : null;
    this.loadedInputs = { backend: wanted, models };
    if (models) {
      this.log.info(`loading models (${reason}): target ${models.targetModel}${models.draftModel ? `, draft ${models.draftModel}` : ''}`);
    } else {
      this.log.info(`connecting to ${backend.kind === 'llama-server' ? 'llama-server' : `the ${backend.kind} server`} (${reason})`);
    }
    try {
      const info = await backend.load();
      if (generation !== this.loadGeneration || backend !== this.backend) return;
      this.loaded(info);
    } catch (error) {
      if (generation !== this.loadGeneration || backend !== this.backend) return;
      this.loadFailed(error as Error, backend);
    }
  }

  /**
   * The backend `wanted` from now: another kind of backend replaces the current one (the worker is
   * stopped when a server takes over). Local to local needs no new worker (the load picks up the new
   * models), unless sharing the worker was turned on or off.
   */
  private useBackend(wanted: BackendSettings): void {
    if (JSON.stringify(wanted) === JSON.stringify(this.backendSettings)) return;
    const sharing = this.backendSettings.sharedWorker !== wanted.sharedWorker;
    if (wanted.kind !== 'local' || this.backend.kind !== 'local' || sharing) {
      this.log.info(`backend: ${this.backend.kind} → ${wanted.kind}${wanted.kind === 'local' ? '' : ` at ${wanted.endpoint || 'its default endpoint'}`}`);
      this.backend.dispose();
      this.crashNotice?.close();
      this.info = null;
      this.readiness.notReady(NOT_READY_CAUSES.loading);
      this.backend = this.createBackend(wanted);
    }
    this.backendSettings = wanted;
  }

  /** The load under way gave `info`: it serves from now. */
  private loaded(info: BackendInfo): void {
    this.info = info;
    this.readiness.ready();
    this.loadError = null;
    this.crashNotice?.close();
    const local = info.local;
    if (this.activationToReadyMs === null) {
      this.activationToReadyMs = Math.round(performance.now() - this.activatedAt);
      this.log.info(readyMessage(this.activationToReadyMs, local));
    }
    this.engine.settings = readEngineSettings(local ? local.draft !== null : false, this.reportSettingProblem);
    this.engine.cache.clear();
    if (local) this.documentSync.resendAll();
    this.statusBar.setModels(info, this.modeLabel);
    this.activeDocument.check();
    this.statusBar.setState(this.restingState());
    // In the log only: a model picked from disk is not verified, and that needs no notification.
    const files = modelFilesProvenance(this.context, local);
    if (files) this.log.info(`model files: target ${files.target}${files.draft ? `; draft ${files.draft}` : ''}`);
    if (local) showLoadWarnings(local);
    this.refreshStats();
    // Whatever the user typed while the models loaded gets its completion now.
    triggerGhostText(this.provider);
  }

  /** The load under way failed: said in the status bar, the log and (unless a countdown is on screen) a notification. */
  private loadFailed(error: Error, backend: InferenceBackend): void {
    // Saving the settings again (unchanged) retries a failed load.
    this.loadedInputs = null;
    this.info = null;
    this.readiness.notReady(NOT_READY_CAUSES.loadFailed);
    const message = error.message;
    this.loadError = message;
    this.log.error(`${backend.kind === 'local' ? 'model load' : `${backend.kind} connection`} failed: ${message}`);
    this.statusBar.setModels(null, this.modeLabel);
    this.statusBar.setState({ kind: 'error', message });
    this.refreshStats();
    const code = (error as WorkerError).code;
    // A crash or the backoff after one, or a server not answering yet: the countdown is on screen,
    // and a reload follows when the worker or the server is back.
    if (code === 'crashed' || code === 'restarting' || backend.outage()) return;
    this.crashNotice?.close();
    showLoadFailure(error, backend.kind, {
      loadAnyway: (files) => {
        this.quarantine.clear(files);
        void this.loadModels('the user loads a quarantined model anyway');
      },
      showLog: () => this.log.show(),
    });
  }

  /** Applies toggles and knobs that need no reload. */
  applyLiveSettings(): void {
    this.nextEdits.settingsChanged();
    const wasEnabled = this.engine.settings.enabled;
    this.engine.settings = readEngineSettings(this.models?.draft != null, this.reportSettingProblem);
    // Turned back on: VS Code does not ask again by itself, so the cursor would stay bare.
    if (!wasEnabled && this.engine.settings.enabled) triggerGhostText(this.provider);
    this.engine.cache.clear();
    if (this.info) void this.backend.configure(readSpeculationSettings(this.reportSettingProblem)).catch(() => undefined);
    this.statusBar.setModels(this.info, this.modeLabel);
    this.activeDocument.check();
    this.statusBar.setState(this.restingState());
    this.refreshStats();
  }

  refreshStats(): void {
    this.stats.refresh();
  }

  private restingState() {
    if (this.loadError) return { kind: 'error' as const, message: this.loadError };
    if (!this.info) return { kind: 'loading' as const };
    if (!this.engine.settings.enabled) return { kind: 'off' as const };
    // Off for this document: the status bar shows why once its 'off' state carries a message.
    const reason = this.activeDocument.reason;
    return reason ? { kind: 'off' as const, message: reason } : { kind: 'ready' as const };
  }

  /** What a load would be made from now (as loadModels reads it). */
  private wantedLoadInputs(): LoadInputs {
    const backend = readBackendSettings(this.reportSettingProblem);
    return { backend, models: backend.kind === 'local' ? readModelSettings(this.context.extensionPath, this.reportSettingProblem) : null };
  }

  /**
   * Next edits turned on or off (the command, the settings): a download declined, failed or cut
   * short is offered again, and on with no next-edit model says so at once.
   */
  nextEditsToggled(): void {
    const on = readNextEditUiSettings(this.reportSettingProblem).enabled;
    if (on === this.nextEditsWereOn) return;
    this.nextEditsWereOn = on;
    this.nextEditModel.reset();
    if (on) adviseNextEditModel(this.reportSettingProblem, this.log);
  }

  private onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration(SECTION)) return;
    if (e.affectsConfiguration(`${SECTION}.nextEdit`)) this.nextEditsToggled();
    const affects = (key: string) => e.affectsConfiguration(key);
    if (reloadOnChange(affects, this.loadedInputs, () => this.wantedLoadInputs())) void this.loadModels('settings changed');
    else this.applyLiveSettings();
  }

  /** The backend went down (a worker crash, a server unreachable): its notice, one per burst (outageNotice.ts). */
  private onBackendOutage(): void {
    this.info = null;
    this.readiness.notReady(this.backend.kind === 'local' ? NOT_READY_CAUSES.workerRestart : NOT_READY_CAUSES.serverDown);
    if (this.crashNotice) this.crashNotice.refresh();
    else
      this.crashNotice = showOutageNotice(
        () => this.backend,
        (state) => this.statusBar.setState(state),
        () => (this.crashNotice = null),
      );
  }

  dispose(): void {
    this.crashNotice?.close();
    this.engine.cancelPrefetch();
    this.backend.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
