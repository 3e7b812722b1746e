import type * as vscode from 'vscode';
import { ChangeSignal } from './changeSignal';

interface Due {
  uri: string;
  version: number;
  /** The request's cursor (a document offset), or null while it waits for the pause. */
  cursor: number | null;
}

/**
 * The next-edit request that is due (the pause after a keystroke runs) or under way, so that the
 * inline provider can wait for its answer at the same cursor. VS Code asks the provider once per
 * document version and cursor for a trigger it counts as explicit: a later trigger at the same place
 * reuses that (empty) answer and asks no one (InlineCompletionsSource.fetch: UpdateRequest.satisfies).
 * A next edit drawn as ghost text after such an ask (the models finishing their load, the user's
 * Alt+\) would never be asked for; the provider's call there waits for the answer instead.
 */
export class DueAnswer {
  private due: Due | null = null;
  private readonly changed = new ChangeSignal();

  /** The pause runs: a request will be made for this version of the document. */
  scheduled(uri: string, version: number): void {
    this.due = { uri, version, cursor: null };
    this.wake();
  }

  /** The request started at `cursor`. */
  started(uri: string, version: number, cursor: number): void {
    this.due = { uri, version, cursor };
    this.wake();
  }

  /** Nothing is due any more: the request ended, was cancelled, or was never made. */
  settled(): void {
    this.due = null;
    this.wake();
  }

  /** Something changed that a waiter may be waiting for (an answer drawn): `ready` is checked again. */
  wake(): void {
    this.changed.notify();
  }

  /** Whether a request is due or under way for this version of the document at this cursor. */
  isDueAt(uri: string, version: number, cursor: number): boolean {
    const d = this.due;
    return !!d && d.uri === uri && d.version === version && (d.cursor === null || d.cursor === cursor);
  }

  /**
   * Resolves once `ready()` (checked at each change), once no request is due at this place any more,
   * once the token is cancelled, or after `maxMs`.
   */
  async until(uri: string, version: number, cursor: number, token: vscode.CancellationToken, maxMs: number, ready: () => boolean): Promise<void> {
    const deadline = Date.now() + maxMs;
    while (!ready() && this.isDueAt(uri, version, cursor) && !token.isCancellationRequested && Date.now() < deadline) {
      await this.changed.next(deadline - Date.now(), token);
    }
  }
}
