import * as vscode from 'vscode';
import type { InferenceBackend } from '../backend/backend';
import { LocalBackend } from '../backend/localBackend';
import type { CompletionEngine } from '../engine/completionEngine';
import type { GhostTextTimeline } from '../stats/ghostTextTimeline';
import { type ModelFilesProvenance, reportMarkdown, type StatsReportModel, statsReportModel, type WorkerStatus } from '../stats/statsReport';
import type { BackendInfo } from '../shared/backendInfo';
import type { ModelFileNotes } from '../stats/statusText';
import { statsView } from '../statsView/statsPage';
import type { NextEditController } from './nextEdit/nextEditController';
import { sharedWorkerIdleMs } from './settings';
import { STATS_VIEW_TYPE, StatsPanel } from './statsPanel';
import type { StatusBar } from './statusBar';

/** Where Show Stats and the status bar's summary read from (asked each time: each may be replaced). */
export interface StatsSources {
  engine(): CompletionEngine;
  info(): BackendInfo | null;
  provenance(): ModelFilesProvenance | null;
  /** What the status bar tooltip says of the model files. */
  fileNotes(): ModelFileNotes;
  nextEditStats(): NextEditController['stats'];
  statusBar: StatusBar;
  modeLabel(): string;
}

/**
 * The session's figures where the user sees them: the status bar's summary and Show Stats' view,
 * refreshed after each completion while it is open, with what only the editor knows (the last ghost
 * text's timeline, the local worker's status).
 */
export class StatsDisplay implements vscode.Disposable {
  /** Where the time went for the last ghost text (Show Stats). */
  lastTimeline: GhostTextTimeline | undefined;
  /** The local worker as Show Stats last asked it (null: a server, or not asked yet). */
  private workerStatus: WorkerStatus | null = null;
  private readonly panel: StatsPanel;
  private readonly serializer: vscode.Disposable;

  constructor(private readonly sources: StatsSources) {
    this.panel = new StatsPanel(
      () => {
        const engine = sources.engine();
        return statsView(this.report(), engine.stats.all, engine.stats.firstKeptNumber);
      },
      () => reportMarkdown(this.report()),
    );
    this.serializer = vscode.window.registerWebviewPanelSerializer(STATS_VIEW_TYPE, this.panel.serializer());
  }

  refresh(): void {
    const { statusBar } = this.sources;
    statusBar.setNextEdits(this.sources.nextEditStats().tooltipLine());
    statusBar.setFileNotes(this.sources.fileNotes());
    statusBar.setSummary(this.sources.engine().stats.summary(), this.sources.modeLabel());
    this.panel.refresh();
  }

  /** Draftline: Show Stats. */
  show(): void {
    this.panel.show();
  }

  /** Asks the local worker how many windows it serves, for Show Stats (a server has none to ask). */
  async refreshWorkerStatus(backend: InferenceBackend): Promise<void> {
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

  private report(): StatsReportModel {
    const { sources } = this;
    const engine = sources.engine();
    const report = statsReportModel(engine.stats, engine.mode, sources.info(), sources.provenance() ?? undefined, this.workerStatus ?? undefined, this.lastTimeline);
    return { ...report, sections: [...report.sections, sources.nextEditStats().section()] };
  }

  dispose(): void {
    this.panel.dispose();
    this.serializer.dispose();
  }
}
