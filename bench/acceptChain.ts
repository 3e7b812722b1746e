// Regime 9: the accept chain (issue 29). On each task the user takes the ghost text with Tab, three
// times in a row, reading each ghost text for a while before the next Tab. Timed: from each accept to
// the next ghost text being available to the provider, as the editor asks right after an accept (an
// automatic request: the debounce runs on a cache miss). Side by side, per task, rotated:
// - off: no prefetch (the debounce, then the model);
// - accept: the completion at the cursor after the accept is prefetched when the accept happens
//   (draftline.accepted); the editor's request joins it;
// - accept+chain: also, when a prefetched completion is shown, the one after it is prefetched while
//   the user reads it (the extension's behaviour with an inference server, draftline.prefetch.whileShown auto);
// - shown: also while any ghost text is shown, the first of a chain included (the extension's
//   behaviour with in-process models).
// After the last accept the user types something else: a prefetch still running is stopped then
// and counts as never shown. All through CompletionEngine over an in-process session: the same path
// (window, prompt, speculation, post-processing, cache) as the extension, without the IPC hop.
import {
  CompletionEngine,
  DEFAULT_ENGINE_SETTINGS,
  documentAfterInsertion,
  type EngineDocument,
  SkippedCompletion,
  type PrefetchTally,
  type PrefetchWhileShown,
  wastedPrefetches,
} from '../src/engine/completionEngine';
import type { CompletionRequest } from '../src/shared/completion';
import type { BenchTask } from './corpus';
import { type BenchSessionOptions, benchSession, engineDocument } from './engineView';
import { oneAtATime } from './oneAtATime';
import { Progress } from './stats';

export type ChainMode = 'off' | 'accept' | 'accept+chain' | 'shown';
export const CHAIN_MODES: readonly ChainMode[] = ['off', 'accept', 'accept+chain', 'shown'];
const WHILE_SHOWN: Record<ChainMode, PrefetchWhileShown> = { off: 'none', accept: 'none', 'accept+chain': 'prefetched', shown: 'all' };
export const ACCEPTS_PER_CHAIN = 3;

export interface ChainOptions extends BenchSessionOptions {
  /** The editor's debounce (draftline.debounceMs), waited before a model call on a cache miss. */
  debounceMs: number;
  /** How long the user reads a ghost text before pressing Tab. */
  thinkMs: number;
}

export interface ChainRow {
  mode: ChainMode;
  /** Accept -> next ghost text available, ms, by accept number (1..3). */
  nextGhostMs: number[][];
  /** Chains that ended early: the ghost text was empty, nothing to accept. */
  emptyGhostTexts: number;
  prefetch: PrefetchTally;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A plain-text document (the editor's state after the accepts so far). */
function textDocument(base: EngineDocument, text: string, offset: number): EngineDocument {
  return { ...base, offset, length: text.length, slice: (s, e) => text.slice(s, e) };
}

/**
 * The document right after Enter at the end of a line that ends a statement (; } or )), when the
 * task has one: an empty-line-in-block task after such a line is that already; an end-of-line task
 * at such a line gets the Enter (a newline and the line's indentation) inserted at its cursor.
 */
export function afterStatementEnd(task: BenchTask, start: EngineDocument): EngineDocument | null {
  const before = task.text.slice(0, task.offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  const line = before.slice(lineStart);
  if (task.kind === 'empty-line-in-block') {
    return line.trim() === '' && /[;})]$/.test(before.slice(0, lineStart).trimEnd()) ? start : null;
  }
  if (task.kind !== 'end-of-line' || !/[;})]\s*$/.test(line)) return null;
  const enter = `\n${/^\s*/.exec(line)![0]}`;
  const text = task.text.slice(0, task.offset) + enter + task.text.slice(task.offset);
  return textDocument(start, text, task.offset + enter.length);
}

export type EnterMode = 'debounce' | 'early';

export async function regimeAcceptChain(tasks: BenchTask[], pair: { target: string; draft: string }, opts: ChainOptions) {
  const { session } = await benchSession(pair, opts);
  /** Enter -> ghost text, ms, by how the request starts: after the debounce (today) or at the Enter (the prefetch path). */
  const enter: Record<EnterMode, number[]> = { debounce: [], early: [] };
  const rows = new Map<ChainMode, ChainRow>(CHAIN_MODES.map((mode) => [mode, { mode, nextGhostMs: [[], [], []], emptyGhostTexts: 0, prefetch: emptyTally() }]));
  const progress = new Progress(tasks.length * CHAIN_MODES.length, `accept chain (${session.info.target.name})`);
  const turn = oneAtATime();
  const backend = { complete: (request: Parameters<typeof session.complete>[0], signal?: AbortSignal) => turn(() => session.complete(request, signal)) };
  for (const [index, task] of tasks.entries()) {
    const start = engineDocument(task);
    session.documents.setDocument(start.uri, task.text);
    const order = CHAIN_MODES.map((_, i) => CHAIN_MODES[(i + index) % CHAIN_MODES.length]);
    for (const mode of order) {
      const row = rows.get(mode)!;
      // A fresh engine a chain (its own cache and counts), as a window that just opened the file.
      const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS, maxTokens: opts.maxTokens, prefetch: mode !== 'off', timeBudgetMs: 0 });
      engine.prefetchWhileShown = () => WHILE_SHOWN[mode];
      const debounce = () => sleep(opts.debounceMs);
      let text = task.text;
      let doc = textDocument(start, text, task.offset);
      // The first ghost text, untimed (it also puts this task's prompt in the KV cache for every mode
      // alike); in mode 'shown' the one after it is prefetched from here on, while the user reads it.
      let shown = await engine.complete(doc);
      for (let accept = 0; accept < ACCEPTS_PER_CHAIN; accept++) {
        if (shown instanceof SkippedCompletion || !shown.text) {
          row.emptyGhostTexts++;
          break;
        }
        await sleep(opts.thinkMs);
        // Tab: the editor inserts the ghost text (its edit event), runs draftline.accepted, then asks at the new cursor.
        const acceptedAt = performance.now();
        engine.documentEdited(doc.uri, [{ offset: doc.offset, deleteCount: shown.replaceSuffixChars, text: shown.text }]);
        const after = documentAfterInsertion(doc, shown.text, shown.replaceSuffixChars);
        text = after.slice(0, after.length);
        doc = textDocument(start, text, after.offset);
        if (mode !== 'off') void engine.prefetch(doc, 'accepted');
        shown = await engine.complete(doc, undefined, debounce);
        row.nextGhostMs[accept].push(performance.now() - acceptedAt);
      }
      // The user reads the last ghost text, then types on: whatever is still being prefetched is
      // stopped, never shown (and nothing of this chain runs on into the next one's timing).
      await sleep(opts.thinkMs);
      engine.documentEdited(doc.uri, [{ offset: doc.offset, deleteCount: 0, text: ' ' }]);
      while (engine.prefetchRunning) await sleep(1);
      add(row.prefetch, engine.stats.prefetch);
      progress.tick(mode);
    }
    const entered = afterStatementEnd(task, start);
    if (entered) {
      // The cursor is on the new line's indentation, right after Enter (the editor asks at once).
      const enterOrder: EnterMode[] = index % 2 ? ['early', 'debounce'] : ['debounce', 'early'];
      for (const how of enterOrder) {
        const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS, maxTokens: opts.maxTokens, timeBudgetMs: 0 });
        // Untimed: the same prompt state for both (the line before Enter, completed a keystroke earlier).
        const request = engine.buildRequest(entered) as CompletionRequest;
        await session.complete({ ...request, prefix: request.prefix.slice(0, request.prefix.lastIndexOf('\n')), mode: 'plain' });
        const at = performance.now();
        if (how === 'early') void engine.prefetch(entered, 'accepted');
        await engine.complete(entered, undefined, () => sleep(opts.debounceMs));
        enter[how].push(performance.now() - at);
      }
    }
    session.documents.removeDocument(start.uri);
  }
  const info = session.info;
  await session.dispose();
  return { info, rows: [...rows.values()], enter };
}

function emptyTally(): PrefetchTally {
  return { started: 0, ready: 0, served: 0, shown: 0, cancelled: 0, busy: 0, blocked: 0, failed: 0 };
}

function add(into: PrefetchTally, from: PrefetchTally): void {
  for (const key of Object.keys(into) as (keyof PrefetchTally)[]) into[key] += from[key];
}

/** Prefetches never shown, as a share of those started (null when none started). */
export function neverShownShare(t: PrefetchTally): number | null {
  return t.started > 0 ? wastedPrefetches(t) / t.started : null;
}
