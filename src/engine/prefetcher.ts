import type { ShownCompletion } from '../postprocess';
import type { CompletionRequest, CompletionResult, DocumentEdit } from '../shared/completion';
import type { BackendKind } from '../shared/settings';
import type { CacheHit, CompletionCache } from './completionCache';
import { documentAfterInsertion, type EngineDocument } from './engineDocument';
import type { PrefetchTally, PrefetchTrigger } from '../stats/statsCollector';

/**
 * What a prefetch came to. ready: computed and in the cache; cached: the cache (or the prefetch
 * running) already has it; busy: a real request runs (here or, for the worker, in another window);
 * blocked: turned off, or on battery; cancelled: a keystroke or another request stopped it.
 */
export type PrefetchOutcome = 'ready' | 'cached' | 'busy' | 'blocked' | 'skipped' | 'cancelled' | 'failed';

/**
 * Which shown ghost texts get the completion after them prefetched while the user reads them:
 * every one (the first Tab of a chain is then instant too), only those a prefetch computed (a chain
 * of accepts already under way), or none.
 */
export type PrefetchWhileShown = 'all' | 'prefetched' | 'none';

/**
 * What draftline.prefetch.whileShown means for a backend: 'auto' is every shown ghost text with
 * in-process models (the machine's own idle time), and with a server only in a chain of accepts
 * (every shown ghost text would cost the server one more request).
 */
export function prefetchWhileShownFor(setting: 'auto' | 'all' | 'chain', backend: BackendKind): PrefetchWhileShown {
  if (setting === 'all') return 'all';
  if (setting === 'chain') return 'prefetched';
  return backend === 'local' ? 'all' : 'prefetched';
}

/** How the editor (or a bench, a test) steers prefetching; each is asked at the moment it matters. */
export interface PrefetchOptions {
  /**
   * Asked before each prefetch: why not now (e.g. 'on battery'), or null. The editor puts the
   * battery check here; the engine knows nothing of the platform.
   */
  prefetchBlocker?: () => Promise<string | null> | string | null;
  /**
   * Which shown ghost texts get the one after them prefetched (PrefetchWhileShown), asked at each
   * one. The editor decides by its setting and backend (every one with in-process models); the
   * bench compares them.
   */
  prefetchWhileShown?: () => PrefetchWhileShown;
  /** Told of each prefetch's end (the editor's log). */
  onPrefetch?: (outcome: PrefetchOutcome, trigger: PrefetchTrigger, detail: string) => void;
}

/** What a prefetch needs of its engine: the same request, backend, cache and post-processing as a real request. */
export interface PrefetchHost {
  /** draftline.prefetch.enabled, as the engine's settings say now. */
  enabled(): boolean;
  /** The request for `doc`, or why there is none (the message). */
  requestFor(doc: EngineDocument): CompletionRequest | { message: string };
  readonly cache: CompletionCache;
  /** Whether a real model request runs now. */
  realRequestRunning(): boolean;
  complete(request: CompletionRequest, signal: AbortSignal): Promise<CompletionResult>;
  shownFor(result: CompletionResult, request: CompletionRequest, doc: EngineDocument): ShownCompletion;
  /** The stats' prefetch tally (replaced when the stats are reset: asked each time). */
  tally(): PrefetchTally;
  now(): number;
}

/** The edit a prefetch made while a ghost text is shown is for (that ghost text accepted). */
export type ExpectedEdit = { uri: string } & DocumentEdit;

interface RunningPrefetch {
  id: number;
  prefix: string;
  suffix: string;
  /**
   * A prefetch made while a ghost text is shown is for after this edit (that ghost text accepted):
   * that edit keeps it, and so does typing its first characters (the rest is then expected).
   */
  expectedEdit?: ExpectedEdit;
  controller: AbortController;
  /** Settles (never rejects) when the prefetch ended, however it ended. */
  done: Promise<void>;
}

/**
 * The engine's prefetching: the completion the editor will ask for next, computed before it asks
 * (after an accept, or while a ghost text is read) and kept in the cache. At most one at a time in
 * an engine (a window): a newer one or any real request stops it, so it never delays one.
 */
export class Prefetcher {
  prefetchBlocker: NonNullable<PrefetchOptions['prefetchBlocker']>;
  prefetchWhileShown: NonNullable<PrefetchOptions['prefetchWhileShown']>;
  onPrefetch: PrefetchOptions['onPrefetch'];
  private running: RunningPrefetch | null = null;
  private nextId = 1;
  /** Prefetch ids a real request was answered from (each counts once, however often it serves). */
  private readonly servedIds = new Set<number>();

  constructor(
    private readonly host: PrefetchHost,
    options: PrefetchOptions = {},
  ) {
    this.prefetchBlocker = options.prefetchBlocker ?? (() => null);
    this.prefetchWhileShown = options.prefetchWhileShown ?? (() => 'prefetched');
    this.onPrefetch = options.onPrefetch;
  }

  /** Whether a prefetch runs now. */
  get isRunning(): boolean {
    return this.running !== null;
  }

  /** Settles when the running prefetch of exactly `request` ends; undefined when none runs. */
  runningFor(request: CompletionRequest): Promise<void> | undefined {
    const running = this.running;
    return running && running.prefix === request.prefix && running.suffix === request.suffix ? running.done : undefined;
  }

  /** A real request goes to the model: a prefetch of another request stops (one of this request was waited for). */
  yieldTo(request: CompletionRequest): void {
    const running = this.running;
    if (running && (running.prefix !== request.prefix || running.suffix !== request.suffix)) running.controller.abort();
  }

  /** Stops the running prefetch, if any (a keystroke, a request elsewhere). */
  cancel(): void {
    this.running?.controller.abort();
  }

  /** A real request was answered from `hit`: a prefetch's first such answer counts as served (and shown, with text). */
  countServed(hit: CacheHit): void {
    if (!hit.prefetch || this.servedIds.has(hit.prefetch.id)) return;
    this.servedIds.add(hit.prefetch.id);
    const tally = this.host.tally();
    tally.served++;
    if (hit.text) tally.shown++;
  }

  /**
   * The ghost text `shown` at `doc`'s cursor is on screen (`prefetched`: a prefetch computed it): the
   * completion after it is prefetched where prefetchWhileShown says so.
   */
  shown(doc: EngineDocument, shown: ShownCompletion, prefetched: boolean): void {
    const whileShown = this.prefetchWhileShown();
    if (whileShown === 'all' || (whileShown === 'prefetched' && prefetched)) this.prefetchAfterShown(doc, shown);
  }

  /**
   * The user reads the ghost text `shown` at `doc`'s cursor now: the completion after it (the one the
   * editor asks for once it is accepted) is computed meanwhile, and kept by the accept's edit.
   */
  private prefetchAfterShown(doc: EngineDocument, shown: ShownCompletion): void {
    if (!shown.text) return;
    const next = documentAfterInsertion(doc, shown.text, shown.replaceSuffixChars);
    const expectedEdit = { uri: doc.uri, offset: doc.offset, deleteCount: shown.replaceSuffixChars, text: shown.text };
    // Registered now (before anything is awaited), so the next keystroke finds it and stops it.
    void this.prefetch(next, 'shown', expectedEdit);
  }

  /**
   * The user edited a document: a keystroke stops the running prefetch at once, except the edit a
   * prefetch made while a ghost text was shown is for (that ghost text accepted with Tab), and the
   * keystrokes that type that ghost text's beginning (the user types it instead: the accept of the
   * rest, or the last of those keystrokes, ends where the prefetch is for).
   */
  documentEdited(uri: string, edits: readonly DocumentEdit[]): void {
    const running = this.running;
    if (!running || edits.length === 0) return;
    const e = running.expectedEdit;
    const [edit] = edits;
    const at = e && edits.length === 1 && e.uri === uri && e.offset === edit.offset;
    if (at && e.deleteCount === edit.deleteCount && e.text === edit.text) running.expectedEdit = undefined;
    else if (at && edit.deleteCount === 0 && edit.text !== '' && edit.text.length < e.text.length && e.text.startsWith(edit.text)) {
      running.expectedEdit = { ...e, offset: e.offset + edit.text.length, text: e.text.slice(edit.text.length) };
    } else running.controller.abort();
  }

  /**
   * Computes the completion at `doc`'s cursor through the same path as a real request (window,
   * prompt, speculation, post-processing) and keeps it in the cache under the exact prefix and
   * suffix that request will have. Never delays a real request: none starts while one runs, any
   * real request stops it, and the backend is told it is a prefetch (the worker refuses it while
   * another window's request runs). At most one at a time: a newer one replaces it.
   */
  async prefetch(doc: EngineDocument, trigger: PrefetchTrigger = 'accepted', expectedEdit?: ExpectedEdit): Promise<PrefetchOutcome> {
    const end = (outcome: PrefetchOutcome, detail = ''): PrefetchOutcome => {
      this.onPrefetch?.(outcome, trigger, detail);
      return outcome;
    };
    const { host } = this;
    if (!host.enabled()) {
      host.tally().blocked++;
      return end('blocked', 'draftline.prefetch.enabled is off');
    }
    const request = host.requestFor(doc);
    if (!('prefix' in request)) return end('skipped', request.message);
    if (this.runningFor(request)) return end('cached', 'already being prefetched');
    if (host.cache.get(request.prefix, request.suffix)) return end('cached', 'already in the cache');
    if (host.realRequestRunning()) {
      host.tally().busy++;
      return end('busy', 'a completion is running');
    }
    // Registered before anything is awaited: the editor's request for this cursor, which comes
    // right after the accept, finds it and waits for it instead of stopping it.
    this.cancel();
    const entry = this.register(request, expectedEdit);
    try {
      const [outcome, detail] = await this.run(entry, doc, request, trigger);
      return end(outcome, detail);
    } finally {
      if (this.running === entry) this.running = null;
      entry.settle();
    }
  }

  private register(request: CompletionRequest, expectedEdit: ExpectedEdit | undefined): RunningPrefetch & { settle: () => void } {
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    const entry = { id: this.nextId++, prefix: request.prefix, suffix: request.suffix, expectedEdit, controller: new AbortController(), done, settle };
    this.running = entry;
    return entry;
  }

  /** The registered prefetch `entry`, from the blocker's check to the cache; its outcome and the detail for onPrefetch. */
  private async run(entry: RunningPrefetch, doc: EngineDocument, request: CompletionRequest, trigger: PrefetchTrigger): Promise<[PrefetchOutcome, string]> {
    const { host } = this;
    const tally = () => host.tally();
    const started = host.now();
    const signal = entry.controller.signal;
    const blocked = await this.prefetchBlocker();
    if (blocked) {
      tally().blocked++;
      return ['blocked', blocked];
    }
    // The check above awaited: a real request or a keystroke may have come meanwhile.
    if (signal.aborted) return ['cancelled', 'stopped before it started'];
    if (host.realRequestRunning()) {
      tally().busy++;
      return ['busy', 'a completion is running'];
    }
    tally().started++;
    try {
      const result = await host.complete({ ...request, prefetch: true }, signal);
      if (signal.aborted || result.stats.stopReason === 'abort') {
        tally().cancelled++;
        return ['cancelled', 'stopped by a keystroke or a request'];
      }
      const shown = host.shownFor(result, request, doc);
      host.cache.put(request.prefix, request.suffix, shown, { id: entry.id, by: trigger });
      tally().ready++;
      return ['ready', `${shown.text.length} chars in ${Math.round(host.now() - started)} ms`];
    } catch (error) {
      if ((error as { code?: string }).code === 'busy') {
        // Refused before it ran (another window's request): not started after all.
        tally().started--;
        tally().busy++;
        return ['busy', (error as Error).message];
      }
      if (signal.aborted) {
        tally().cancelled++;
        return ['cancelled', 'stopped by a keystroke or a request'];
      }
      tally().failed++;
      return ['failed', (error as Error).message];
    }
  }
}
