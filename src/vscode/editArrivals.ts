import * as vscode from 'vscode';

/**
 * When each open document's last edit reached the extension host (performance.now()): the start of
 * the ghost-text timeline (stats/ghostTextTimeline.ts), so that the time VS Code takes before it
 * asks for ghost text is told apart from Draftline's own.
 */
export class EditArrivals implements vscode.Disposable {
  private readonly lastEdit = new Map<string, number>();
  private readonly disposables: vscode.Disposable[];

  constructor(private readonly now: () => number = () => performance.now()) {
    this.disposables = [
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0) this.lastEdit.set(e.document.uri.toString(), this.now());
      }),
      vscode.workspace.onDidCloseTextDocument((d) => this.lastEdit.delete(d.uri.toString())),
    ];
  }

  /** When the document's last edit arrived, or undefined when none was seen since it was opened. */
  lastEditAt(document: vscode.TextDocument): number | undefined {
    return this.lastEdit.get(document.uri.toString());
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
