import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import { changedParts, type StatsView, type StatsViewParts, statsPageHtml, statsViewParts } from '../statsView/statsPage';

/** How often at most the open view is updated: completions and prefetches can end several times a second. */
const UPDATE_EVERY_MS = 150;

/** The stats view's type: package.json's activation event `onWebviewPanel:draftline.stats` names it. */
export const STATS_VIEW_TYPE = 'draftline.stats';

const WEBVIEW_OPTIONS: vscode.WebviewPanelOptions & vscode.WebviewOptions = {
  enableScripts: true,
  // Nothing to load: the page is self-contained.
  localResourceRoots: [],
  enableFindWidget: true,
};

/**
 * Show Stats: one webview panel (src/statsView renders it). While it is visible, what changed is posted
 * to it after each completion; a hidden one is reloaded by VS Code when shown again, and then asks for
 * the figures itself. Nothing in it is a document, so its updates are no edits anywhere.
 */
export class StatsPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  /** What the page shows now, by part (empty: it is loading, and asks when ready). */
  private shown: Partial<StatsViewParts> = {};
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly view: () => StatsView,
    private readonly markdown: () => string,
  ) {}

  show(): void {
    if (this.panel) {
      this.panel.reveal(undefined, false);
      this.update();
      return;
    }
    this.adopt(vscode.window.createWebviewPanel(STATS_VIEW_TYPE, 'Draftline Stats', vscode.ViewColumn.Active, WEBVIEW_OPTIONS));
  }

  /**
   * VS Code restores the views that were open when the window reloaded (registerWebviewPanelSerializer):
   * the stats view comes back with the session's figures, not as an empty tab.
   */
  serializer(): vscode.WebviewPanelSerializer {
    return {
      deserializeWebviewPanel: async (panel) => {
        // Two restored tabs (not expected): the newer one is the view.
        this.panel?.dispose();
        panel.webview.options = WEBVIEW_OPTIONS;
        this.adopt(panel);
      },
    };
  }

  private adopt(panel: vscode.WebviewPanel): void {
    this.panel = panel;
    this.shown = {};
    panel.webview.html = statsPageHtml(this.view(), randomBytes(16).toString('hex'));
    panel.webview.onDidReceiveMessage((message: unknown) => {
      const type = (message as { type?: unknown } | null)?.type;
      if (type === 'ready') {
        this.shown = {};
        this.update();
      } else if (type === 'copy') {
        void vscode.env.clipboard.writeText(this.markdown()).then(
          () => vscode.window.setStatusBarMessage('Draftline: stats copied as Markdown', 3000),
          (error: Error) => void vscode.window.showWarningMessage(`Draftline: the stats could not be copied (${error.message}).`),
        );
      }
    });
    panel.onDidDispose(() => {
      if (this.panel === panel) this.panel = undefined;
      clearTimeout(this.timer);
      this.timer = undefined;
    });
  }

  /** The figures changed: the open view shows them shortly (at most every UPDATE_EVERY_MS). */
  refresh(): void {
    if (!this.panel || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.update();
    }, UPDATE_EVERY_MS);
  }

  private update(): void {
    const panel = this.panel;
    // A hidden page gets nothing (VS Code drops it): it asks again when shown.
    if (!panel?.visible) return;
    const parts = statsViewParts(this.view());
    const changed = changedParts(this.shown, parts);
    if (Object.keys(changed).length === 0) return;
    this.shown = parts;
    void panel.webview.postMessage({ type: 'update', parts: changed });
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.panel?.dispose();
  }
}
