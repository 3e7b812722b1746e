import type * as vscode from 'vscode';
import { ChangeSignal } from './changeSignal';

export type FimPhase = 'pending' | 'shown' | 'none';

interface FimState {
  uri: string;
  version: number;
  line: number;
  character: number;
  phase: FimPhase;
}

/**
 * Whether fill-in-the-middle ghost text is asked for, shown or absent at a document version and
 * cursor, as the inline completion provider reports it: FIM keeps priority where it has a completion,
 * so a next edit waits for its answer there and is not drawn over it.
 */
export class FimTracker {
  private state: FimState | null = null;
  private readonly changed = new ChangeSignal();

  note(document: vscode.TextDocument, position: vscode.Position, phase: FimPhase): void {
    this.state = { uri: document.uri.toString(), version: document.version, line: position.line, character: position.character, phase };
    if (phase !== 'pending') this.changed.notify();
  }

  /** The phase at this version and cursor; 'none' when nothing was asked there. */
  phaseAt(document: vscode.TextDocument, position: vscode.Position): FimPhase {
    const s = this.state;
    if (!s || s.uri !== document.uri.toString() || s.version !== document.version || s.line !== position.line || s.character !== position.character) return 'none';
    return s.phase;
  }

  /** The phase once a pending FIM request there has answered (or `timeoutMs` passed: then 'none'). */
  async settled(document: vscode.TextDocument, position: vscode.Position, timeoutMs: number): Promise<FimPhase> {
    if (this.phaseAt(document, position) !== 'pending') return this.phaseAt(document, position);
    await this.changed.next(timeoutMs);
    const phase = this.phaseAt(document, position);
    return phase === 'pending' ? 'none' : phase;
  }
}
