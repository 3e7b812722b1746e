import * as vscode from 'vscode';
import { SkippedCompletion, type CompletionEngine, type EngineAlternatives, type EngineCompletion, type EngineDocument } from '../engine/completionEngine';
import type { GhostTextTimeline } from '../stats/ghostTextTimeline';
import { type CursorAt, InvokeIntent } from '../engine/invokeIntent';
import type { ExtraContext } from '../shared/completion';

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
    lineAt: (offset) => document.positionAt(offset).line,
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
  /** How long between two moments (performance.now()) the models could not serve, and why; null when they could. */
  modelsNotReady?(from: number, to: number): { ms: number; cause: string } | null;
  /** The suggestions offered to cycle through (the user invoked the next/previous suggestion). */
  onAlternatives?(alternatives: EngineAlternatives): void;
  /** A next edit to show as ghost text here (an insertion at the cursor, or a change VS Code can draw so); asked first. */
  nextEditItem?(document: vscode.TextDocument, position: vscode.Position): vscode.InlineCompletionItem | undefined;
  /**
   * Where fill-in-the-middle has nothing here: the next edit due at this version and cursor, once it
   * has answered (VS Code may not ask again here: src/vscode/nextEdit/dueAnswer.ts).
   */
  nextEditItemWhenAnswered?(document: vscode.TextDocument, position: vscode.Position, token: vscode.CancellationToken): Promise<vscode.InlineCompletionItem | undefined>;
  /** Fill-in-the-middle ghost text asked for ('pending'), shown, or not ('none') at this version and cursor. */
  onFim?(document: vscode.TextDocument, position: vscode.Position, phase: 'pending' | 'shown' | 'none'): void;
}

/** How many alternatives to ask for beyond the greedy suggestion: three to cycle through in all. */
export const ALTERNATIVES_ASKED = 2;

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

  /** Whether an Invoke request is the user cycling (alternatives) or one suggestion (src/engine/invokeIntent.ts). */
  private readonly intent = new InvokeIntent();

  /**
   * The controller is about to ask VS Code for the ghost text at the cursor itself (a prefetch is
   * ready after an accept, the models loaded, completions turned on): that request comes as Invoke,
   * like the user's Alt+], but it must cost what an automatic one costs (one suggestion, no
   * alternatives computed).
   */
  expectOwnTrigger(document: vscode.TextDocument, position: vscode.Position): void {
    this.intent.expectOwnTrigger(cursorAt(document, position));
  }

  /**
   * The user asked for the next or previous suggestion at the cursor (Alt+] / Alt+[, the palette):
   * the only requests that compute the alternatives. Returns whether VS Code already holds them there.
   */
  userCycles(document: vscode.TextDocument, position: vscode.Position): boolean {
    return this.intent.userCycles(cursorAt(document, position));
  }

  async provideInlineCompletionItems(
    document: vscode.TextDocument,
    position: vscode.Position,
    context: vscode.InlineCompletionContext,
    token: vscode.CancellationToken,
  ): Promise<vscode.InlineCompletionItem[] | undefined> {
    // A next edit drawn as ghost text (the controller asked VS Code for it with a trigger).
    const nextEdit = this.hooks.nextEditItem?.(document, position);
    if (nextEdit) return [nextEdit];
    const fim = await this.fillInTheMiddle(document, position, context, token);
    if (fim?.length || token.isCancellationRequested || !this.hooks.nextEditItemWhenAnswered) return fim;
    const answered = await this.hooks.nextEditItemWhenAnswered(document, position, token);
    return answered ? [answered] : fim;
  }

  /** The completion (or, when the user cycles, the alternatives) at the cursor. */
  private async fillInTheMiddle(
    document: vscode.TextDocument,
    position: vscode.Position,
    context: vscode.InlineCompletionContext,
    token: vscode.CancellationToken,
  ): Promise<vscode.InlineCompletionItem[] | undefined> {
    // Alternatives only where the user asked to cycle (Alt+] / Alt+[): never for a trigger, Draftline's
    // own included, or the keystrokes after one, which get their one suggestion.
    const at = cursorAt(document, position);
    const intent = this.intent.classify(at, context.triggerKind === vscode.InlineCompletionTriggerKind.Invoke);
    if (intent.kind === 'alternatives') return this.provideAlternatives(document, position, token);
    const askedAt = performance.now();
    const editAt = this.hooks.lastEditAt?.(document);
    const engine = this.hooks.engine();
    if (!engine?.settings.enabled) {
      this.hooks.onFim?.(document, position, 'none');
      return undefined;
    }
    let fim: 'pending' | 'shown' | 'none' = 'pending';
    this.hooks.onFim?.(document, position, fim);
    const doc = this.documentAt(document, position);
    const controller = new AbortController();
    const sub = token.onCancellationRequested(() => controller.abort());
    let busy = false;
    try {
      const result = await engine.complete(doc, controller.signal, async () => {
        // Only a cache miss waits for the user to pause typing.
        if (intent.debounce) await sleep(this.hooks.debounceMs(), token);
        if (token.isCancellationRequested) controller.abort();
        else {
          busy = true;
          this.hooks.onBusy(true);
        }
      });
      if (this.skipped(result)) return undefined;
      if (token.isCancellationRequested || !result.text) return undefined;
      fim = 'shown';
      this.intent.shownAt(at);
      this.hooks.onCompleted(result);
      const last = result.fromCache ? undefined : engine.stats.last;
      const waitedForModels = editAt === undefined ? null : (this.hooks.modelsNotReady?.(editAt, askedAt) ?? null);
      this.hooks.onAnswered?.({
        askedAfterEditMs: editAt === undefined ? null : Math.max(0, askedAt - editAt),
        answeredInMs: performance.now() - askedAt,
        ...(last?.waitMs !== undefined ? { waitMs: last.waitMs, modelMs: last.latencyMs } : {}),
        fromCache: result.fromCache,
        ...(result.prefetched ? { prefetched: true } : {}),
        ...(waitedForModels ? { waitedForModels } : {}),
      });
      return [inlineItem(document, position, result)];
    } catch (error) {
      if (!token.isCancellationRequested) this.hooks.onError(error as Error);
      return undefined;
    } finally {
      sub.dispose();
      if (busy) this.hooks.onBusy(false);
      this.hooks.onFim?.(document, position, fim === 'pending' ? 'none' : fim);
    }
  }

  /** The engine's view of the document at the cursor (with its editor's indentation and the extra context). */
  private documentAt(document: vscode.TextDocument, position: vscode.Position): EngineDocument {
    const editor = vscode.window.visibleTextEditors.find((e) => e.document === document);
    return engineDocument(document, position, editor, this.hooks.extraContext && ((d) => this.hooks.extraContext!(d)));
  }

  /** Whether the engine skipped the request; the editor is told why (not for a cancelled one), or that nothing holds it back. */
  private skipped<T>(answer: T | SkippedCompletion): answer is SkippedCompletion {
    if (answer instanceof SkippedCompletion) {
      if (answer.reason !== 'cancelled') this.hooks.onSkipped(answer);
      return true;
    }
    this.hooks.onSkipped(null);
    return false;
  }

  /**
   * The greedy suggestion (the one already shown, from the cache) then up to ALTERNATIVES_ASKED
   * distinct alternatives, for VS Code to cycle through; typing cancels the token, which stops them.
   */
  private async provideAlternatives(document: vscode.TextDocument, position: vscode.Position, token: vscode.CancellationToken): Promise<vscode.InlineCompletionItem[] | undefined> {
    const engine = this.hooks.engine();
    if (!engine?.settings.enabled) return undefined;
    const doc = this.documentAt(document, position);
    const controller = new AbortController();
    const sub = token.onCancellationRequested(() => controller.abort());
    // The greedy one usually comes from the cache; the spinner shows while the model computes the
    // others (not when cycling back over remembered ones).
    const busy = !engine.hasAlternatives(doc);
    if (busy) this.hooks.onBusy(true);
    try {
      const answer = await engine.alternatives(doc, ALTERNATIVES_ASKED, controller.signal);
      if (this.skipped(answer)) return undefined;
      if (token.isCancellationRequested) return undefined;
      if (answer.greedy.text) this.hooks.onCompleted(answer.greedy);
      if (answer.items.length) this.intent.listedAt(cursorAt(document, position));
      this.hooks.onAlternatives?.(answer);
      return answer.items.length ? answer.items.map((item) => inlineItem(document, position, item)) : undefined;
    } catch (error) {
      if (!token.isCancellationRequested) this.hooks.onError(error as Error);
      return undefined;
    } finally {
      sub.dispose();
      if (busy) this.hooks.onBusy(false);
    }
  }
}

function cursorAt(document: vscode.TextDocument, position: vscode.Position): CursorAt {
  return { uri: document.uri.toString(), version: document.version, line: position.line, character: position.character };
}

/**
 * One suggestion as VS Code shows it: the text also replaces what it covers of the rest of the line
 * (auto-closed brackets it writes itself), and accepting it reports that very text (the prefetch
 * after an accept continues after what was inserted).
 */
function inlineItem(document: vscode.TextDocument, position: vscode.Position, shown: { text: string; replaceSuffixChars: number }): vscode.InlineCompletionItem {
  const replaced = new vscode.Range(position, position.translate(0, shown.replaceSuffixChars));
  return new vscode.InlineCompletionItem(shown.text, replaced, {
    title: 'Draftline: completion accepted',
    command: 'draftline.accepted',
    arguments: [document.uri.toString(), shown.text],
  });
}
