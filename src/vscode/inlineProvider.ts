import * as vscode from 'vscode';
import { SkippedCompletion, type CompletionEngine, type EngineCompletion, type EngineDocument } from '../engine/completionEngine';
import type { GhostTextTimeline } from '../engine/ghostTextTimeline';
import type { ExtraContext } from '../shared/types';

/** TextSource over a VS Code document that reads only the window it needs. */
export function engineDocument(
  document: vscode.TextDocument,
  position: vscode.Position,
  editor?: vscode.TextEditor,
  extraContext?: (document: vscode.TextDocument) => ExtraContext | undefined,
): EngineDocument {
  const lastLine = document.lineAt(document.lineCount - 1);
  const length = document.offsetAt(lastLine.range.end);
  const tabSize = editor?.options.tabSize;
  return {
    uri: document.uri.toString(),
    languageId: document.languageId,
    offset: document.offsetAt(position),
    length,
    tabSize: typeof tabSize === 'number' ? tabSize : 4,
    insertSpaces: editor?.options.insertSpaces !== false,
    slice: (start, end) => document.getText(new vscode.Range(document.positionAt(start), document.positionAt(end))),
    extraContext: extraContext && (() => extraContext(document)),
  };
}

export interface ProviderHooks {
  engine(): CompletionEngine | null;
  debounceMs(): number;
  onBusy(busy: boolean): void;
  /** Ghost text is shown (prefetched: computed before it was asked for). */
  onCompleted(completion: EngineCompletion): void;
  onError(error: Error): void;
  /** Why this document gets no completions (a disabled language, too large...), or null when it does. */
  onSkipped(skip: SkippedCompletion | null): void;
  /** Chunks of the user's other code for the prompt (vscode/extraContext.ts). */
  extraContext?(document: vscode.TextDocument): ExtraContext | undefined;
  /** When the document's last edit reached the extension host (performance.now()), if one was seen (vscode/editArrivals.ts). */
  lastEditAt?(document: vscode.TextDocument): number | undefined;
  /** Where the time went for a request answered with ghost text. */
  onAnswered?(timeline: GhostTextTimeline): void;
}

function sleep(ms: number, token: vscode.CancellationToken): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || token.isCancellationRequested) return resolve();
    const timer = setTimeout(done, ms);
    const sub = token.onCancellationRequested(done);
    function done() {
      clearTimeout(timer);
      sub.dispose();
      resolve();
    }
  });
}

/** Ghost text: debounce, cache, then one model call that the next keystroke cancels. */
export class DraftlineInlineProvider implements vscode.InlineCompletionItemProvider {
  constructor(private readonly hooks: ProviderHooks) {}

  async provideInlineCompletionItems(
    document: vscode.TextDocument,
    position: vscode.Position,
    context: vscode.InlineCompletionContext,
    token: vscode.CancellationToken,
  ): Promise<vscode.InlineCompletionItem[] | undefined> {
    const askedAt = performance.now();
    const editAt = this.hooks.lastEditAt?.(document);
    const engine = this.hooks.engine();
    if (!engine?.settings.enabled) return undefined;
    const editor = vscode.window.visibleTextEditors.find((e) => e.document === document);
    const doc = engineDocument(document, position, editor, this.hooks.extraContext && ((d) => this.hooks.extraContext!(d)));
    const controller = new AbortController();
    const sub = token.onCancellationRequested(() => controller.abort());
    let busy = false;
    try {
      const result = await engine.complete(doc, controller.signal, async () => {
        // Only a cache miss waits for the user to pause typing.
        if (context.triggerKind === vscode.InlineCompletionTriggerKind.Automatic) await sleep(this.hooks.debounceMs(), token);
        if (token.isCancellationRequested) controller.abort();
        else {
          busy = true;
          this.hooks.onBusy(true);
        }
      });
      if (result instanceof SkippedCompletion) {
        if (result.reason !== 'cancelled') this.hooks.onSkipped(result);
        return undefined;
      }
      this.hooks.onSkipped(null);
      if (token.isCancellationRequested || !result.text) return undefined;
      this.hooks.onCompleted(result);
      const last = result.fromCache ? undefined : engine.stats.last;
      this.hooks.onAnswered?.({
        askedAfterEditMs: editAt === undefined ? null : Math.max(0, askedAt - editAt),
        answeredInMs: performance.now() - askedAt,
        ...(last?.waitMs !== undefined ? { waitMs: last.waitMs, modelMs: last.latencyMs } : {}),
        fromCache: result.fromCache,
      });
      // The text also replaces what it covers of the rest of the line (auto-closed brackets it writes itself).
      const replaced = new vscode.Range(position, position.translate(0, result.replaceSuffixChars));
      const item = new vscode.InlineCompletionItem(result.text, replaced, {
        title: 'Draftline: completion accepted',
        command: 'draftline.accepted',
        arguments: [document.uri.toString(), result.text],
      });
      return [item];
    } catch (error) {
      if (!token.isCancellationRequested) this.hooks.onError(error as Error);
      return undefined;
    } finally {
      sub.dispose();
      if (busy) this.hooks.onBusy(false);
    }
  }
}
