import * as vscode from 'vscode';
import { SERVED_NAMES } from '../stats/servedKind';
import type { StatusSummary } from '../stats/statsCollector';
import { type ModelFileNotes, statusTooltip } from '../stats/statusText';
import type { BackendInfo } from '../shared/backendInfo';

export type StatusState = { kind: 'loading' } | { kind: 'ready' } | { kind: 'busy' } | { kind: 'off'; message?: string } | { kind: 'error'; message: string };

/** Status bar readout: tokens/s · acceptance · latency of the last completion; click for the menu. */
export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private state: StatusState = { kind: 'loading' };
  private summary: StatusSummary | null = null;
  private backendInfo: BackendInfo | null = null;
  private mode = '';
  private nextEdits: string | null = null;
  private files: ModelFileNotes = {};

  constructor() {
    this.item = vscode.window.createStatusBarItem('status', vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Draftline';
    this.item.command = 'draftline.showMenu';
    this.render();
    this.item.show();
  }

  setState(state: StatusState): void {
    this.state = state;
    this.render();
  }

  setSummary(summary: StatusSummary, mode: string): void {
    this.summary = summary;
    this.mode = mode;
    this.render();
  }

  /** The tooltip's next-edit line (null: none asked yet). */
  setNextEdits(line: string | null): void {
    if (line === this.nextEdits) return;
    this.nextEdits = line;
    this.render();
  }

  /** What the tooltip says of the model files ("local file, not verified"). */
  setFileNotes(files: ModelFileNotes): void {
    if (JSON.stringify(files) === JSON.stringify(this.files)) return;
    this.files = files;
    this.render();
  }

  setModels(info: BackendInfo | null, mode: string): void {
    this.backendInfo = info;
    this.mode = mode;
    this.render();
  }

  /** The label as shown (without the icon), for tests and the log. */
  static label(summary: StatusSummary | null): string {
    if (!summary || summary.latencyMs === null) return 'Draftline';
    const speed = summary.served !== 'computed' ? SERVED_NAMES[summary.served] : summary.tokensPerSecond === null ? '- tok/s' : `${Math.round(summary.tokensPerSecond)} tok/s`;
    const acceptance = summary.acceptance === null ? '-' : `${Math.round(summary.acceptance * 100)}%`;
    return `${speed} · ${acceptance} · ${Math.round(summary.latencyMs)} ms`;
  }

  private render(): void {
    const s = this.state;
    const icon = s.kind === 'busy' || s.kind === 'loading' ? '$(loading~spin)' : s.kind === 'error' ? '$(error)' : s.kind === 'off' ? '$(circle-slash)' : '$(zap)';
    const label = s.kind === 'loading' ? 'Draftline' : s.kind === 'off' ? 'Draftline off' : s.kind === 'error' ? 'Draftline' : StatusBar.label(this.summary);
    this.item.text = `${icon} ${label}`;
    const tip = new vscode.MarkdownString(undefined, true);
    tip.appendMarkdown(
      statusTooltip({ status: s, mode: this.mode, models: this.backendInfo?.local ?? null, server: this.backendInfo, summary: this.summary, nextEdits: this.nextEdits, files: this.files }),
    );
    this.item.tooltip = tip;
    this.item.backgroundColor = s.kind === 'error' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
