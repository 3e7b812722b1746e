// Typing into a document the way the editor drives the completion engine: each keystroke changes the
// text (and, where the worker mirrors the document, sends it the edit, as DocumentSync does), cancels
// the request before it (VS Code's cancellation token) and asks for a completion that waits out the
// debounce before it calls the model. Shared by the big-file benchmark and its test.
import { type CompletionEngine, type EngineCompletion, type EngineDocument, SkippedCompletion } from '../src/engine/completionEngine';
import type { DocumentEdit } from '../src/shared/completion';

/** The document typed into: its text and the cursor, which each keystroke moves on. */
export interface TypedDocument {
  text: string;
  cursor: number;
}

export interface KeystrokeOptions {
  engine: CompletionEngine;
  document: TypedDocument;
  /** The engine's view of the document as it is now. */
  view(): EngineDocument;
  typed: string;
  keyGapMs: number;
  debounceMs: number;
  /** Where a keystroke's edit goes when the worker mirrors the document. */
  sendEdit?(edit: DocumentEdit): void;
  /** A completion the user sees: no later keystroke cancelled it. */
  onShown(completion: EngineCompletion, at: number): void;
  /** A completion that failed (default: typing ends with that error). */
  onError?(error: Error): void;
}

/**
 * Types `typed` key by key. Resolves after the last keystroke with when it came and `answered`, which
 * settles once that keystroke's request has ended (rejected with a failure that had no onError).
 */
export async function typeWithCompletions(o: KeystrokeOptions): Promise<{ lastKeyAt: number; answered: Promise<void> }> {
  const failures: Error[] = [];
  let controller: AbortController | null = null;
  let last: Promise<unknown> = Promise.resolve();
  let lastKeyAt = 0;
  for (const ch of o.typed) {
    controller?.abort();
    const d = o.document;
    d.text = d.text.slice(0, d.cursor) + ch + d.text.slice(d.cursor);
    o.sendEdit?.({ offset: d.cursor, deleteCount: 0, text: ch });
    d.cursor++;
    lastKeyAt = performance.now();
    const mine = new AbortController();
    controller = mine;
    last = o.engine
      .complete(o.view(), mine.signal, () => new Promise((resolve) => setTimeout(resolve, o.debounceMs)))
      .then((r) => {
        if (!(r instanceof SkippedCompletion) && !mine.signal.aborted) o.onShown(r, performance.now());
      })
      .catch((error: Error) => (o.onError ? o.onError(error) : failures.push(error)));
    await new Promise((resolve) => setTimeout(resolve, o.keyGapMs));
  }
  const answered = last.then(() => {
    if (failures.length > 0) throw failures[0];
  });
  return { lastKeyAt, answered };
}
