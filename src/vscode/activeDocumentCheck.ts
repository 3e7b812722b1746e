import * as vscode from 'vscode';
import type { CompletionEngine } from '../engine/completionEngine';
import { type DocumentSync, documentLength } from './documentSync';
import { HugeFileAdvice } from './hugeFileAdvice';

/** What the check needs of the editor. */
export interface ActiveDocumentCheckDeps {
  engine(): CompletionEngine;
  documentSync: DocumentSync;
  log: vscode.LogOutputChannel;
  globalState: vscode.Memento;
  /** The reason changed: the status bar shows it. */
  onChanged(): void;
}

/**
 * Whether the active document gets completions at all, before anyone types in it: the reason it
 * does not (an untitled file is plain text, which is off by default), so a file without ghost text
 * is not a mystery, and the advice for a file too big to mirror.
 */
export class ActiveDocumentCheck {
  /** Why the active document gets no completions (e.g. untitled plain text), or null when it does. */
  reason: string | null = null;
  private readonly hugeFileAdvice: HugeFileAdvice;

  constructor(private readonly deps: ActiveDocumentCheckDeps) {
    this.hugeFileAdvice = new HugeFileAdvice(deps.globalState, (message) => deps.log.info(message));
  }

  check(): void {
    const document = vscode.window.activeTextEditor?.document;
    if (!document) {
      this.setReason(null);
      return;
    }
    const engine = this.deps.engine();
    const length = documentLength(document);
    const skip = engine.skipReason({ uri: document.uri.toString(), languageId: document.languageId, length });
    this.setReason(skip?.message ?? null);
    if (!skip && engine.settings.enabled) {
      void this.hugeFileAdvice.check(document, this.deps.documentSync.notMirroredReason(document)).catch((e: Error) => this.deps.log.warn(`huge-file advice: ${e.message}`));
    }
  }

  /** A request found a reason not to complete in the active document (null: none any more). */
  setReason(reason: string | null): void {
    if (reason === this.reason) return;
    this.reason = reason;
    if (reason) this.deps.log.info(`no completions for the active document: ${reason}`);
    this.deps.onChanged();
  }
}
