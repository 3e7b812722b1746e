import * as vscode from 'vscode';
import type { DocumentEdit } from '../shared/completion';

/**
 * Calls `listener` with each of the user's keystrokes: a change to a document an editor shows.
 * Output channels (this extension's log among them) are documents too, changed by the extension
 * itself: their changes are no keystrokes (Show Stats is a webview, no document). Nor is a change to
 * a document no editor shows (another extension's work in the background): the user types where an
 * editor is.
 */
export function onKeystroke(listener: (uri: string, edits: DocumentEdit[]) => void): vscode.Disposable {
  return vscode.workspace.onDidChangeTextDocument((e) => {
    if (e.contentChanges.length === 0 || e.document.uri.scheme === 'output') return;
    if (!vscode.window.visibleTextEditors.some((editor) => editor.document === e.document)) return;
    listener(
      e.document.uri.toString(),
      e.contentChanges.map((c) => ({ offset: c.rangeOffset, deleteCount: c.rangeLength, text: c.text })),
    );
  });
}
