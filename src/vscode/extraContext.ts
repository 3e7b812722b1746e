import * as vscode from 'vscode';
import { ExtraContextRing, MAX_CHUNK_CHARS } from '../prompt/extraContextRing';
import type { ExtraContext } from '../shared/completion';
import { documentLength } from './documentSync';

/** Lines read around the cursor of a file the user leaves or saves (the ring keeps 64 of them). */
const READ_RADIUS = 48;
/** Most read around a cursor (characters): a little more than a ring chunk can hold, for lines cut at the file's ends. */
const MAX_READ_CHARS = 4 * MAX_CHUNK_CHARS;
/** Files larger than this (characters) give no chunks: generated or minified code. */
const MAX_SOURCE_CHARS = 2_000_000;

export interface ExtraContextSettings {
  enabled: boolean;
  maxTokens: number;
}

/**
 * Collects chunks of the user's other code for the prompt (prompt/extraContextRing.ts), the way
 * llama.vscode does: the code around the cursor of a file the user leaves for another, and of a
 * file saved. Only files on disk or untitled ones; only what the user had in front of them; it
 * stays in this process and the local worker.
 */
export class ExtraContextCollector implements vscode.Disposable {
  private readonly ring = new ExtraContextRing();
  private readonly subscriptions: vscode.Disposable[];
  private lastEditor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;

  constructor(private readonly settings: () => ExtraContextSettings) {
    this.subscriptions = [
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        if (this.lastEditor && this.lastEditor.document !== editor?.document) this.addAroundCursor(this.lastEditor.document, this.lastEditor.selection.active.line);
        this.lastEditor = editor;
      }),
      vscode.workspace.onDidSaveTextDocument((document) => {
        const editor = vscode.window.visibleTextEditors.find((e) => e.document === document);
        this.addAroundCursor(document, editor?.selection.active.line ?? 0);
      }),
      // Code that is gone from the workspace is not shown to the model again.
      vscode.workspace.onDidDeleteFiles((e) => {
        for (const uri of e.files) this.ring.removeFile(vscode.workspace.asRelativePath(uri, false));
      }),
      vscode.workspace.onDidRenameFiles((e) => {
        for (const { oldUri } of e.files) this.ring.removeFile(vscode.workspace.asRelativePath(oldUri, false));
      }),
    ];
  }

  /** The chunks for a completion in `document`, or undefined when off or empty. */
  contextFor(document: vscode.TextDocument): ExtraContext | undefined {
    const { enabled, maxTokens } = this.settings();
    if (!enabled) this.ring.clear(); // turned off: keep nothing of the user's other files
    if (!enabled || maxTokens <= 0) return undefined;
    const path = vscode.workspace.asRelativePath(document.uri, false);
    const files = this.ring.chunks.filter((c) => c.path !== path);
    if (!files.length) return undefined;
    return { files, path, repoName: vscode.workspace.getWorkspaceFolder(document.uri)?.name, maxTokens };
  }

  /** For tests and Show Stats: how many chunks are kept. */
  get size(): number {
    return this.ring.chunks.length;
  }

  private addAroundCursor(document: vscode.TextDocument, line: number): void {
    if (!this.settings().enabled || document.isClosed) return;
    if (document.uri.scheme !== 'file' && document.uri.scheme !== 'untitled') return;
    const last = document.lineCount - 1;
    if (documentLength(document) > MAX_SOURCE_CHARS) return;
    const first = Math.max(0, line - READ_RADIUS);
    const range = document.validateRange(new vscode.Range(first, 0, Math.min(last, line + READ_RADIUS), Number.MAX_SAFE_INTEGER));
    // Minified code: these lines can be most of the file, and the ring would not keep them anyway.
    if (document.offsetAt(range.end) - document.offsetAt(range.start) > MAX_READ_CHARS) return;
    const text = document.getText(range);
    if (text.includes('\0')) return;
    this.ring.add(vscode.workspace.asRelativePath(document.uri, false), text, line - first);
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }
}
