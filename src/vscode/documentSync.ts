import * as vscode from 'vscode';
import type { InferenceBackend } from '../backend/backend';
import { mirrorDecision } from '../engine/documentMirror';

type DocumentSink = Pick<InferenceBackend, 'openDocument' | 'editDocument' | 'closeDocument'>;

/** A document's length in characters, without reading its text (getText() of a huge file is a huge string). */
export function documentLength(doc: vscode.TextDocument): number {
  return doc.offsetAt(doc.lineAt(doc.lineCount - 1).range.end);
}

function mirrorable(doc: vscode.TextDocument): boolean {
  return (doc.uri.scheme === 'file' || doc.uri.scheme === 'untitled' || doc.uri.scheme === 'vscode-remote') && !doc.isClosed;
}

/**
 * Mirrors open documents into the backend's n-gram index: full text once, then only the edits, so a
 * keystroke in a 1 MB file sends a few bytes. `sink` is asked each time: the backend can change.
 */
export class DocumentSync implements vscode.Disposable {
  private readonly mirrored = new Set<string>();
  /** Why an open document is not mirrored (huge, binary, minified), by URI. */
  private readonly notMirrored = new Map<string, string>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly sink: () => DocumentSink) {
    this.disposables.push(
      vscode.workspace.onDidOpenTextDocument((d) => this.open(d)),
      vscode.workspace.onDidCloseTextDocument((d) => this.close(d)),
      vscode.workspace.onDidChangeTextDocument((e) => this.change(e)),
    );
  }

  /** Why the document is not mirrored (e.g. 'minified (very long lines)'), or undefined when it is (or is not open). */
  notMirroredReason(doc: vscode.TextDocument): string | undefined {
    return this.notMirrored.get(doc.uri.toString());
  }

  /** Sends every open document again (after a worker restart or model change). */
  resendAll(): void {
    this.mirrored.clear();
    for (const doc of vscode.workspace.textDocuments) this.open(doc);
  }

  /** Sends one document again (the worker could not apply an edit to its mirror). */
  resend(key: string): void {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
    this.mirrored.delete(key);
    if (doc) this.open(doc);
  }

  private open(doc: vscode.TextDocument): void {
    if (!mirrorable(doc)) return;
    const key = doc.uri.toString();
    let text = '';
    const length = documentLength(doc);
    // Huge, binary and minified documents are not mirrored: bounded work (engine/documentMirror.ts).
    const decision = mirrorDecision(length, () => (text = doc.getText()));
    if (!decision.mirror) {
      this.notMirrored.set(key, decision.reason);
      return;
    }
    this.notMirrored.delete(key);
    this.mirrored.add(key);
    this.sink().openDocument(key, text);
  }

  private close(doc: vscode.TextDocument): void {
    const key = doc.uri.toString();
    this.notMirrored.delete(key);
    if (this.mirrored.delete(key)) this.sink().closeDocument(key);
  }

  private change(event: vscode.TextDocumentChangeEvent): void {
    const key = event.document.uri.toString();
    if (!this.mirrored.has(key) || event.contentChanges.length === 0) return;
    this.sink().editDocument(
      key,
      event.contentChanges.map((c) => ({ offset: c.rangeOffset, deleteCount: c.rangeLength, text: c.text })),
    );
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
