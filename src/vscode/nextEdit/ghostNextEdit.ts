import * as vscode from 'vscode';
import type { ShownSuggestion } from '../../nextEditSession/session';
import { DueAnswer } from './dueAnswer';

/** The longest the inline provider's call waits for a next edit due at its cursor. */
const DUE_ANSWER_MAX_MS = 60_000;

interface Drawn {
  uri: string;
  version: number;
  offset: number;
  suggestion: ShownSuggestion;
}

/**
 * A next edit VS Code draws as ghost text (an insertion at the cursor, or a change it can draw so):
 * served to the inline provider for the document version and cursor it was answered for, and its
 * accept recognised however VS Code carries it out (its own Tab, or the item's command).
 */
export class GhostNextEdit {
  /** The request due or under way (the controller reports it), for the provider's wait. */
  readonly due = new DueAnswer();
  private drawn: Drawn | null = null;

  /** `onServed`: the provider took it (it is on screen now). */
  constructor(private readonly onServed: (s: ShownSuggestion) => void) {}

  get suggestion(): ShownSuggestion | null {
    return this.drawn?.suggestion ?? null;
  }

  /** Draws `s` on `document` at its cursor: VS Code is asked for ghost text there. */
  show(document: vscode.TextDocument, s: ShownSuggestion): void {
    this.drawn = { uri: document.uri.toString(), version: document.version, offset: s.cursor, suggestion: s };
    this.due.wake();
    void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
  }

  /** Forgets what is drawn (only `s`, when given). VS Code drops the ghost text itself on a keystroke. */
  clear(s?: ShownSuggestion): void {
    if (!s || this.drawn?.suggestion === s) this.drawn = null;
  }

  /** Escape: VS Code hides the ghost text too. */
  hide(): void {
    this.drawn = null;
    void vscode.commands.executeCommand('editor.action.inlineSuggest.hide');
  }

  /**
   * Whether this change is the ghost text being accepted (however VS Code split it); if so it is
   * forgotten and the offset after the inserted text is returned, else null.
   */
  acceptedBy(e: vscode.TextDocumentChangeEvent): number | null {
    const ghost = this.drawn?.uri === e.document.uri.toString() ? this.drawn.suggestion.shape.ghost : undefined;
    if (!ghost) return null;
    const delta = e.contentChanges.reduce((sum, c) => sum + c.text.length - c.rangeLength, 0);
    if (delta !== ghost.text.length - (ghost.end - ghost.start)) return null;
    const doc = e.document;
    if (Math.min(...e.contentChanges.map((c) => c.rangeOffset)) < ghost.start) return null;
    if (doc.getText(new vscode.Range(doc.positionAt(ghost.start), doc.positionAt(ghost.start + ghost.text.length))) !== ghost.text) return null;
    this.drawn = null;
    return ghost.start + ghost.text.length;
  }

  /** The item for the inline provider at this version and cursor, if the ghost text is for them. */
  itemAt(document: vscode.TextDocument, position: vscode.Position): vscode.InlineCompletionItem | undefined {
    const d = this.drawn;
    if (!d || !this.isFor(document, position)) return undefined;
    const ghost = d.suggestion.shape.ghost!;
    this.onServed(d.suggestion);
    return new vscode.InlineCompletionItem(ghost.text, new vscode.Range(document.positionAt(ghost.start), document.positionAt(ghost.end)), {
      title: 'Draftline: next edit accepted',
      command: 'draftline.nextEdit.accepted',
    });
  }

  /** The item once the request due at this version and cursor has answered (dueAnswer.ts), else nothing. */
  async itemWhenAnswered(document: vscode.TextDocument, position: vscode.Position, token: vscode.CancellationToken): Promise<vscode.InlineCompletionItem | undefined> {
    const uri = document.uri.toString();
    const ready = () => this.isFor(document, position);
    await this.due.until(uri, document.version, document.offsetAt(position), token, DUE_ANSWER_MAX_MS, ready);
    return token.isCancellationRequested ? undefined : this.itemAt(document, position);
  }

  private isFor(document: vscode.TextDocument, position: vscode.Position): boolean {
    const d = this.drawn;
    return !!d && d.uri === document.uri.toString() && d.version === document.version && d.offset === document.offsetAt(position);
  }
}
