import * as path from 'node:path';
import * as vscode from 'vscode';
import type { CompletionBackend, InferenceBackend } from '../backend/backend';
import { LocalBackend } from '../backend/localBackend';
import { ModelQuarantine, type QuarantinedModelError } from '../backend/modelQuarantine';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, prefetchWhileShownFor } from '../engine/completionEngine';
import { type LoadInputs, reloadOnChange } from '../settings/declaredSettings';
import { describeSlowGhostText, type GhostTextTimeline } from '../stats/ghostTextTimeline';
import { describeLoadTimings } from '../stats/loadTimings';
import { describeAlternatives, type ModelFilesProvenance, prefetchOrigin, reportMarkdown, type StatsReportModel, statsReportModel, type WorkerStatus } from '../stats/statsReport';
import { describeProvenance } from '../models/downloadIndex';
import { EMBEDDED_PAIRS, type EmbeddedPairName, embeddedPairPaths } from '../models/embedded';
import { createServerBackend, serverApiKeyName } from '../remote/servers';
import type { BackendInfo, LoadedModelsInfo } from '../shared/backendInfo';
import type { BackendSettings } from '../shared/settings';
import type { CompletionRequest, CompletionResult } from '../shared/completion';
import type { WorkerError } from '../worker/workerClient';
import { ensurePrivateDirectory, type SharedWorkerAddress, sharedWorkerAddress, sharedWorkerSupported } from '../worker/sharedWorker';
import { DocumentSync, documentLength } from './documentSync';
import { EditArrivals } from './editArrivals';
import { HugeFileAdvice } from './hugeFileAdvice';
import { adviseNextEditModel, type NextEditModelResolver, nextEditModelResolver, offerRecommendedPair, resolveModelFiles } from './modelDownloads';
import { modelsDir } from './modelPicker';
import { type OutageNotice, showOutageNotice } from './outageNotice';
import { DraftlineInlineProvider, engineDocument } from './inlineProvider';
import {
  readBackendSettings,
  readEngineSettings,
  readExtraContextSettings,
  readModelSettings,
  readSpeculationSettings,
  debounceMs,
  pauseOnBattery,
  prefetchWhileShown,
  SECTION,
  sharedWorkerIdleMs,
} from './settings';
import { PowerMonitor } from './battery';
import { ExtraContextCollector } from './extraContext';
import { StatusBar } from './statusBar';
import { STATS_VIEW_TYPE, StatsPanel } from './statsPanel';
import { statsView } from '../statsView/statsPage';
import { NextEditController } from './nextEdit/controller';
import { replaySourceFromEnvironment } from './nextEdit/replay';
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
  /** Why the active document gets no completions (e.g. untitled plain text), or null when it does. */
  noCompletionReason: string | null = null;
  /** Settings problems reported this session: each is logged once; new ones share one notification. */
  private readonly settingProblems = new Set<string>();
  private pendingSettingProblems: string[] = [];
  /** The notice shown while the worker is down: one per burst of crashes, its countdown kept true. */
  private crashNotice: OutageNotice | null = null;
  private readonly activatedAt = performance.now();
  /** Activation to the first models ready, in ms (null until then): the cold-start figure. */
  activationToReadyMs: number | null = null;
  /** Show Stats' view, updated after each completion while it is open. */
  private readonly statsPanel = new StatsPanel(
    () => statsView(this.statsReport(), this.engine.stats.all, this.engine.stats.firstKeptNumber),
    () => reportMarkdown(this.statsReport()),
  );
  private readonly editArrivals = new EditArrivals();
  private readonly hugeFileAdvice: HugeFileAdvice;
  /** Where the time went for the last ghost text (Show Stats). */
  private lastTimeline: GhostTextTimeline | undefined;
  /** Battery or mains, for draftline.prefetch.pauseOnBattery (read at most once a minute). */
  private readonly power = new PowerMonitor();
  /** Model files that ended the inference worker twice, kept for every window of this profile. */
  readonly quarantine: ModelQuarantine;
  /** The local worker as Show Stats last asked it (null: a server, or not asked yet). */
  private workerStatus: WorkerStatus | null = null;
  /** Next-edit suggestions (issue #38): asked after a pause on an edit, drawn by their shape, Tab / Escape. */
  readonly nextEdits: NextEditController;
  /** The local backend's next-edit model, kept across backends: toggling next edits resets what it was answered. */
  private readonly nextEditModel: NextEditModelResolver;
  private nextEditsWereOn: boolean;

  constructor(readonly context: vscode.ExtensionContext) {
    this.log = vscode.window.createOutputChannel('Draftline', { log: true });
    this.quarantine = new ModelQuarantine(path.join(context.globalStorageUri.fsPath, 'model-quarantine.json'));
    this.nextEditModel = nextEditModelResolver(context, this.reportSettingProblem, this.log);
    this.nextEditsWereOn = readNextEditUiSettings(this.reportSettingProblem).enabled;
    this.backendSettings = readBackendSettings(this.reportSettingProblem);
    this.backend = this.createBackend(this.backendSettings);
    const backend: CompletionBackend = {
      complete: (request: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult> => this.backend.complete(request, signal),
      // The backend that serves now (it changes with Select Backend): one without alternatives says so.
      alternatives: (request, count, signal) =>
        this.backend.alternatives?.(request, count, signal) ?? Promise.resolve({ completions: [], limitedBy: 'this backend computes one suggestion only', totalMs: 0 }),
    };
    this.engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS, ...readEngineSettings(false, this.reportSettingProblem) });
    this.engine.prefetchBlocker = async () => (pauseOnBattery(this.reportSettingProblem) && (await this.power.onBattery()) ? 'on battery (draftline.prefetch.pauseOnBattery)' : null);
    this.engine.prefetchWhileShown = () => prefetchWhileShownFor(prefetchWhileShown(this.reportSettingProblem), this.backend.kind);
    this.engine.onPrefetch = (outcome, trigger, detail) => {
      if (outcome === 'cached' || outcome === 'skipped') return;
      this.log[outcome === 'failed' ? 'warn' : 'debug'](
        `prefetch (${trigger === 'accepted' ? 'after an accepted completion' : 'while a ghost text is shown'}): ${outcome}${detail ? `, ${detail}` : ''}`,
      );
      if (outcome === 'ready') this.refreshStats();
    };
    this.documentSync = new DocumentSync(() => this.backend);
    this.hugeFileAdvice = new HugeFileAdvice(context.globalState, (message) => this.log.info(message));
    this.extraContext = new ExtraContextCollector(() => readExtraContextSettings(this.reportSettingProblem));
    const provider = (this.provider = new DraftlineInlineProvider({
      engine: () => (this.info ? this.engine : null),
      debounceMs: () => debounceMs(this.reportSettingProblem),
      onBusy: (busy) => this.statusBar.setState(busy ? { kind: 'busy' } : this.restingState()),
      onCompleted: (completion) => {
        if (completion.prefetched) {
          const made = completion.prefetchedBy ? ` ${prefetchOrigin(completion.prefetchedBy)}` : '';
          this.log.info(`ghost text served from the prefetch${made} (${completion.text.length} chars, ${completion.latencyMs.toFixed(1)} ms, no model call)`);
        }
        this.refreshStats();
      },
      onError: (error) => this.log.warn(`completion failed: ${error.message}`),
      onSkipped: (skip) => this.setNoCompletionReason(skip?.message ?? null),
      extraContext: (document) => this.extraContext.contextFor(document),
      lastEditAt: (document) => this.editArrivals.lastEditAt(document),
      onAnswered: (timeline) => {
        this.lastTimeline = timeline;
        const slow = describeSlowGhostText(timeline);
        if (slow) this.log.info(slow);
      },
      onAlternatives: (answer) => {
        this.log.info(describeAlternatives(answer));
        this.refreshStats();
      },
      nextEditItem: (document, position) => this.nextEdits.ghostItem(document, position),
      onFim: (document, position, phase) => this.nextEdits.fimPhase(document, position, phase),
    }));
    // The real-editor tests' recorded answers (DRAFTLINE_NEXT_EDIT_REPLAY), else the backend's nextEdit.
    const replay = replaySourceFromEnvironment((message) => this.log.warn(message));
    this.nextEdits = new NextEditController({
      log: this.log,
      source: () => replay ?? (this.info ? this.backend : null),
      noSourceReason: () => `no suggestion: ${this.backend.kind === 'local' ? 'the models are not loaded' : `the ${this.backend.kind} server is not connected`} yet`,
      settings: () => readNextEditUiSettings(this.reportSettingProblem),
      // The window copy proposer (with the draft and n-grams where there are): lossless, and where next edits are fast.
      mode: () => (this.engine.settings.speculation ? 'hybrid' : 'plain'),
      lastEditAt: (document) => this.editArrivals.lastEditAt(document),
      onStats: () => this.refreshStats(),
    });
    this.disposables.push(
      this.nextEdits,
      this.editArrivals,
      this.extraContext,
      this.log,
      this.statusBar,
      this.documentSync,
      this.statsPanel,
      vscode.window.registerWebviewPanelSerializer(STATS_VIEW_TYPE, this.statsPanel.serializer()),
      vscode.languages.registerInlineCompletionItemProvider({ pattern: '**' }, provider),
      vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)),
      // A keystroke stops a prefetch at once (the accept, or the typing, of the ghost text it was made for excepted).
      vscode.workspace.onDidChangeTextDocument((e) => {
        // Output channels (this extension's log among them) are documents too, changed by the extension
        // itself: their changes are no keystrokes (Show Stats is a webview, no document). Nor is a change
        // to a document no editor shows (another extension's work in the background): the user types
        // where an editor is.
        if (e.contentChanges.length === 0 || e.document.uri.scheme === 'output') return;
        if (!vscode.window.visibleTextEditors.some((editor) => editor.document === e.document)) return;
        this.engine.documentEdited(
          e.document.uri.toString(),
          e.contentChanges.map((c) => ({ offset: c.rangeOffset, deleteCount: c.rangeLength, text: c.text })),
        );
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.checkActiveDocument()),
      // Picking a language for an untitled file reopens it under the new language id.
      vscode.workspace.onDidOpenTextDocument((d) => d === vscode.window.activeTextEditor?.document && this.checkActiveDocument()),
    );
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
   * at the cursor after it is prefetched (the editor asks there next). The insertion is done by the
   * time this runs, with the cursor after it.
   */
  accepted(key: string, text: string): void {
    this.backend.accepted(key, text);
    if (!this.info || !this.engine.settings.enabled) return;
    const editor = [vscode.window.activeTextEditor, ...vscode.window.visibleTextEditors].find((e) => e?.document.uri.toString() === key);
    if (!editor?.selection.isEmpty) return;
    const document = editor.document;
    const version = document.version;
    const position = editor.selection.active;
    const doc = engineDocument(document, position, editor, (d) => this.extraContext.contextFor(d));
    void this.engine.prefetch(doc, 'accepted').then((outcome) => {
      // Ask VS Code for the ghost text at this cursor once it is ready (a cache hit): VS Code 1.100
      // asks by itself after an accept (that request waits for the running prefetch), but nothing
      // says every version does, and a second ask costs a cache lookup.
      if (outcome !== 'ready' && outcome !== 'cached') return;
      const active = vscode.window.activeTextEditor;
      if (active?.document !== document || document.version !== version || !active.selection.active.isEqual(position)) return;
      this.provider.expectOwnTrigger(document, position);
      void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
    });
  }

  /**
   * Asks VS Code for the ghost text at the cursor, announced to the provider: such a request comes
   * as Invoke, like the user's Alt+], and must cost one suggestion, not the alternatives.
   */
  private triggerGhostText(): void {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    this.provider.expectOwnTrigger(editor.document, editor.selection.active);
    void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
  }

  /** The in-process models, when the local backend serves (null for a server, or before a load). */
  get models(): LoadedModelsInfo | null {
    return this.info?.local ?? null;
  }

  /** Whether the loaded model files were verified (downloads) or not (files from disk), for Show Stats and the log. */
  private modelFilesProvenance(): ModelFilesProvenance | null {
    const local = this.info?.local;
    if (!local) return null;
    const dir = modelsDir(this.context);
    const pairs = Object.keys(EMBEDDED_PAIRS) as EmbeddedPairName[];
    const embedded = pairs.flatMap((pair) => Object.values(embeddedPairPaths(this.context.extensionPath, pair)));
    return {
      target: describeProvenance(dir, local.target.path, embedded).text,
      draft: local.draft ? describeProvenance(dir, local.draft.path, embedded).text : null,
    };
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
    if (settings.kind !== 'local') {
      return createServerBackend(settings, { apiKey: (endpoint) => Promise.resolve(this.context.secrets.get(serverApiKeyName(endpoint))) }, events);
    }
    const workerPath = path.join(this.context.extensionPath, 'dist', 'worker.js');
    return new LocalBackend(
      {
        workerPath,
        shared: settings.sharedWorker ? this.sharedWorkerAddress(workerPath) : undefined,
        // DRAFTLINE_SHARED_IDLE_MS in the editor's environment (the e2e harness's) reaches the worker as is.
        sharedIdleMs: process.env.DRAFTLINE_SHARED_IDLE_MS === undefined ? sharedWorkerIdleMs(this.reportSettingProblem) : undefined,
        quarantine: this.quarantine,
        // The worker starts loading the llama.cpp binding for this GPU choice as soon as it runs.
        preloadGpu: readModelSettings(this.context.extensionPath).gpu,
        settings: async (worker) => ({
          models: {
            ...(await resolveModelFiles(this.context, readModelSettings(this.context.extensionPath, this.reportSettingProblem), worker, this.log)),
            // Measured flash-attention choices outlive the window: the measurement runs once per model.
            attentionMemoFile: path.join(this.context.globalStorageUri.fsPath, 'flash-attention.json'),
          },
          speculation: readSpeculationSettings(this.reportSettingProblem),
        }),
        nextEditModel: this.nextEditModel,
      },
      events,
    );
  }

  /** Where the shared worker listens, or undefined (a private worker) where it cannot be shared safely. */
  private sharedWorkerAddress(workerPath: string): SharedWorkerAddress | undefined {
    if (!sharedWorkerSupported()) return undefined;
    try {
      const address = sharedWorkerAddress(workerPath);
      ensurePrivateDirectory(address.dir);
      return address;
    } catch (error) {
      this.log.warn(`a worker of this window's own: the shared worker's directory cannot be used (${(error as Error).message})`);
      return undefined;
    }
  }

  /**
   * Loads (or reloads) what serves completions: the models in the worker, or a server's check. The
   * previous ones keep serving until then. Another backend in the settings replaces the current one
   * here, without a reload of the window (the worker is stopped when a server takes over).
   */
  async loadModels(reason: string): Promise<void> {
    const generation = ++this.loadGeneration;
    const wanted = readBackendSettings(this.reportSettingProblem);
    if (JSON.stringify(wanted) !== JSON.stringify(this.backendSettings)) {
      // Local to local needs no new worker (the load below picks up the new models), unless the
      // worker is to be shared now, or no longer.
      const sharing = this.backendSettings.sharedWorker !== wanted.sharedWorker;
      if (wanted.kind !== 'local' || this.backend.kind !== 'local' || sharing) {
        this.log.info(`backend: ${this.backend.kind} → ${wanted.kind}${wanted.kind === 'local' ? '' : ` at ${wanted.endpoint || 'its default endpoint'}`}`);
        this.backend.dispose();
        this.crashNotice?.close();
        this.info = null;
        this.backend = this.createBackend(wanted);
      }
      this.backendSettings = wanted;
    }
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
      this.info = info;
      this.loadError = null;
      this.crashNotice?.close();
      const local = info.local;
      if (this.activationToReadyMs === null) {
        this.activationToReadyMs = Math.round(performance.now() - this.activatedAt);
        const t = local?.loadTimings;
        const others = local?.sharedWith;
        const how =
          others !== undefined
            ? ` (the models were already loaded in the shared worker, ${others === 0 ? 'kept from a window that closed' : `for ${others} other window${others === 1 ? '' : 's'}`})`
            : t
              ? ` (worker up at ${t.workerAgeMs} ms of its life, then ${describeLoadTimings(t)})`
              : '';
        this.log.info(`ready ${this.activationToReadyMs} ms after activation${how}`);
      }
      this.engine.settings = readEngineSettings(local ? local.draft !== null : false, this.reportSettingProblem);
      this.engine.cache.clear();
      if (local) this.documentSync.resendAll();
      this.statusBar.setModels(info, this.modeLabel);
      this.checkActiveDocument();
      this.statusBar.setState(this.restingState());
      // In the log only: a model picked from disk is not verified, and that needs no notification.
      const files = this.modelFilesProvenance();
      if (files) this.log.info(`model files: target ${files.target}${files.draft ? `; draft ${files.draft}` : ''}`);
      if (local?.draftProblem) void vscode.window.showWarningMessage(`Draftline: ${local.draftProblem}`);
      if (local?.gpuFallback) void vscode.window.showWarningMessage(`Draftline runs on the CPU: ${local.gpuFallback}.`);
      if (local?.promptFormat === 'prefix-only') {
        void vscode.window.showWarningMessage(`Draftline: ${local.target.name} has no fill-in-the-middle tokens; completions see only the text before the cursor.`);
      }
      this.refreshStats();
      // Whatever the user typed while the models loaded gets its completion now.
      this.triggerGhostText();
    } catch (error) {
      if (generation !== this.loadGeneration || backend !== this.backend) return;
      // Saving the settings again (unchanged) retries a failed load.
      this.loadedInputs = null;
      this.info = null;
      const message = (error as Error).message;
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
      if (code === 'quarantined') {
        // The user may know better (a driver updated, more memory free): one click loads it again.
        const files = (error as QuarantinedModelError).entries.flatMap((e) => Object.keys(e.files));
        void vscode.window.showErrorMessage(`Draftline: ${message}`, 'Load It Anyway', 'Select Target Model', 'Show Log').then((choice) => {
          if (choice === 'Load It Anyway') {
            this.quarantine.clear(files);
            void this.loadModels('the user loads a quarantined model anyway');
          }
          if (choice === 'Select Target Model') void vscode.commands.executeCommand('draftline.selectTargetModel');
          if (choice === 'Show Log') this.log.show();
        });
      } else if (backend.kind === 'local') {
        void vscode.window.showErrorMessage(`Draftline: cannot load the model. ${message}`, 'Select Target Model', 'Show Log').then((choice) => {
          if (choice === 'Select Target Model') void vscode.commands.executeCommand('draftline.selectTargetModel');
          if (choice === 'Show Log') this.log.show();
        });
      } else {
        const actions = code === 'unauthorized' ? ['Set Server API Key', 'Show Log'] : ['Select Backend', 'Show Log'];
        void vscode.window.showErrorMessage(`Draftline: cannot use the ${backend.kind} server. ${message}`, ...actions).then((choice) => {
          if (choice === 'Set Server API Key') void vscode.commands.executeCommand('draftline.setServerApiKey');
          if (choice === 'Select Backend') void vscode.commands.executeCommand('draftline.selectBackend');
          if (choice === 'Show Log') this.log.show();
        });
      }
    }
  }

  /** Applies toggles and knobs that need no reload. */
  applyLiveSettings(): void {
    this.nextEdits.settingsChanged();
    const wasEnabled = this.engine.settings.enabled;
    this.engine.settings = readEngineSettings(this.models?.draft != null, this.reportSettingProblem);
    // Turned back on: VS Code does not ask again by itself, so the cursor would stay bare.
    if (!wasEnabled && this.engine.settings.enabled) this.triggerGhostText();
    this.engine.cache.clear();
    if (this.info) void this.backend.configure(readSpeculationSettings(this.reportSettingProblem)).catch(() => undefined);
    this.statusBar.setModels(this.info, this.modeLabel);
    this.checkActiveDocument();
    this.statusBar.setState(this.restingState());
    this.refreshStats();
  }

  /** Draftline: Clear Model Quarantine. Every quarantined file may load again; the models load now. */
  async clearModelQuarantine(): Promise<void> {
    const entries = this.quarantine.list();
    if (entries.length === 0) {
      void vscode.window.showInformationMessage('Draftline: no model file is quarantined.');
      return;
    }
    const files = entries.flatMap((e) => Object.keys(e.files));
    this.quarantine.clear();
    this.log.info(`model quarantine cleared: ${files.join(', ')}`);
    void vscode.window.showInformationMessage(`Draftline: ${files.map((f) => path.basename(f)).join(', ')} may load again.`);
    await this.loadModels('model quarantine cleared');
  }

  /** Asks the local worker how many windows it serves, for Show Stats (a server has none to ask). */
  async refreshWorkerStatus(): Promise<void> {
    const backend = this.backend;
    if (!(backend instanceof LocalBackend) || !backend.worker.pid) {
      this.workerStatus = null;
      return;
    }
    try {
      const d = await backend.worker.request('diagnostics', {});
      const { kvSequences = null, nextEditModel = null } = d;
      this.workerStatus = { shared: backend.worker.shared !== undefined, pid: backend.worker.pid, windows: d.clients, idleMinutes: sharedWorkerIdleMs() / 60_000, kvSequences, nextEditModel };
    } catch {
      this.workerStatus = null;
    }
  }

  refreshStats(): void {
    this.statusBar.setNextEdits(this.nextEdits.stats.tooltipLine());
    this.statusBar.setSummary(this.engine.stats.summary(), this.modeLabel);
    this.statsPanel.refresh();
  }

  /** Draftline: Show Stats. */
  showStats(): void {
    this.statsPanel.show();
  }

  private statsReport(): StatsReportModel {
    const report = statsReportModel(this.engine.stats, this.engine.mode, this.info, this.modelFilesProvenance() ?? undefined, this.workerStatus ?? undefined, this.lastTimeline);
    return { ...report, sections: [...report.sections, this.nextEdits.stats.section()] };
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
    if (!this.info) return { kind: 'loading' as const };
    if (!this.engine.settings.enabled) return { kind: 'off' as const };
    // Off for this document: the status bar shows why once its 'off' state carries a message.
    return this.noCompletionReason ? { kind: 'off' as const, message: this.noCompletionReason } : { kind: 'ready' as const };
  }

  /** Whether the active document gets completions at all, before anyone types in it. */
  private checkActiveDocument(): void {
    const document = vscode.window.activeTextEditor?.document;
    if (!document) {
      this.setNoCompletionReason(null);
      return;
    }
    const length = documentLength(document);
    const skip = this.engine.skipReason({ uri: document.uri.toString(), languageId: document.languageId, length });
    this.setNoCompletionReason(skip?.message ?? null);
    if (!skip && this.engine.settings.enabled) {
      void this.hugeFileAdvice.check(document, this.documentSync.notMirroredReason(document)).catch((e: Error) => this.log.warn(`huge-file advice: ${e.message}`));
    }
  }

  private setNoCompletionReason(reason: string | null): void {
    if (reason === this.noCompletionReason) return;
    this.noCompletionReason = reason;
    if (reason) this.log.info(`no completions for the active document: ${reason}`);
    this.statusBar.setState(this.restingState());
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
