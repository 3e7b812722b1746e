import { defaultFilters, postprocess, type ShownCompletion } from '../postprocess';
import { documentWindow, looksBinary, type TextSource } from '../prompt/documentWindow';
import { type CacheHit, CompletionCache } from './completionCache';
import type { CompletionBackend } from '../backend/backend';
import { DEFAULT_ENGINE_SETTINGS, type EngineSettings } from '../settings/declaredSettings';
import { type PrefetchTrigger, StatsCollector } from '../stats/statsCollector';
export { emptyPrefetchTally, type PrefetchTally, type PrefetchTrigger, wastedPrefetches } from '../stats/statsCollector';
import type { AlternativesResult, CompletionRequest, CompletionResult, DocumentEdit, ExtraContext } from '../shared/completion';
import type { BackendKind } from '../shared/settings';
import type { DecodeMode } from '../shared/decoding';

export interface EngineDocument extends TextSource {
  uri: string;
  languageId: string;
  /** Cursor offset in UTF-16 code units. */
  offset: number;
  tabSize?: number;
  insertSpaces?: boolean;
  /** The user's other code for the prompt (the editor's extra-context ring), asked only for a model request. */
  extraContext?: () => ExtraContext | undefined;
}

/** The declared defaults (package.json), read once. */
export { DEFAULT_ENGINE_SETTINGS } from '../settings/declaredSettings';

export interface EngineCompletion {
  text: string;
  /** Characters after the cursor, on its line, that `text` replaces (auto-closed brackets it writes itself). */
  replaceSuffixChars: number;
  fromCache: boolean;
  /** Served from what a prefetch computed. */
  prefetched?: boolean;
  /** Why that prefetch was made: at an accept, or while the ghost text before this one was shown. */
  prefetchedBy?: PrefetchTrigger;
  result: CompletionResult | null;
  latencyMs: number;
}

/** The suggestions to cycle through (issue #32): the greedy one the user saw first, then distinct alternatives. */
export interface EngineAlternatives {
  /** Greedy first (when it has text), then the alternatives that read differently, most likely first. */
  items: ShownCompletion[];
  greedy: EngineCompletion;
  branch?: AlternativesResult['branch'];
  /** Why there are fewer than asked (the backend's reason, or none has alternatives). */
  limitedBy?: string;
  /** Served again from what an earlier ask computed (the user cycles back). */
  fromCache: boolean;
  /** From the ask to the alternatives. */
  latencyMs: number;
}

export type SkipReason = 'disabled' | 'language' | 'binary' | 'tooLarge' | 'cancelled';

export class SkippedCompletion {
  constructor(
    readonly reason: SkipReason,
    readonly message: string,
  ) {}
}

/** The decode mode the toggles ask for. */
export function modeFor(settings: Pick<EngineSettings, 'speculation' | 'ngramReuse' | 'draftAvailable'>): DecodeMode {
  if (!settings.speculation) return 'plain';
  if (settings.ngramReuse) return settings.draftAvailable ? 'hybrid' : 'ngram';
  return settings.draftAvailable ? 'draft' : 'plain';
}

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

/**
 * The document as it will be once `text` is inserted at the cursor (replacing `replaceSuffixChars`
 * characters after it), with the cursor after the insertion: what the editor's next request sees.
 */
export function documentAfterInsertion(doc: EngineDocument, text: string, replaceSuffixChars = 0): EngineDocument {
  const at = doc.offset;
  const removed = Math.max(0, Math.min(replaceSuffixChars, doc.length - at));
  const tailStart = at + removed;
  const length = doc.length - removed + text.length;
  const end = at + text.length;
  const slice = (start: number, stop: number): string => {
    const s = Math.max(0, start);
    const e = Math.min(length, stop);
    if (e <= s) return '';
    let out = '';
    if (s < at) out += doc.slice(s, Math.min(e, at));
    if (e > at && s < end) out += text.slice(Math.max(s, at) - at, Math.min(e, end) - at);
    if (e > end) out += doc.slice(tailStart + Math.max(s, end) - end, tailStart + e - end);
    return out;
  };
  return { ...doc, offset: end, length, slice };
}

interface RunningPrefetch {
  id: number;
  prefix: string;
  suffix: string;
  /**
   * A prefetch made while a ghost text is shown is for after this edit (that ghost text accepted):
   * that edit keeps it, and so does typing its first characters (the rest is then expected).
   */
  expectedEdit?: { uri: string } & DocumentEdit;
  controller: AbortController;
  /** Settles (never rejects) when the prefetch ended, however it ended. */
  done: Promise<void>;
}

/** Closing brackets and punctuation after the cursor still allow a multi-line completion. */
const TRIVIAL_LINE_SUFFIX = /^[\s)\]}>;,'"`]*$/;

/**
 * The IDE-agnostic completion core: window the document, serve from cache, ask the backend, post-
 * process, record stats. The VS Code layer (or a test) injects the backend and the document.
 */
export class CompletionEngine {
  readonly cache = new CompletionCache();
  readonly stats = new StatsCollector();
  /**
   * Asked before each prefetch: why not now (e.g. 'on battery'), or null. The editor puts the
   * battery check here; the engine knows nothing of the platform.
   */
  prefetchBlocker: () => Promise<string | null> | string | null = () => null;
  /**
   * Which shown ghost texts get the one after them prefetched (PrefetchWhileShown), asked at each
   * one. The editor decides by its setting and backend (every one with in-process models); the
   * bench compares them.
   */
  prefetchWhileShown: () => PrefetchWhileShown = () => 'prefetched';
  /** Told of each prefetch's end (the editor's log). */
  onPrefetch?: (outcome: PrefetchOutcome, trigger: PrefetchTrigger, detail: string) => void;
  /** At most one at a time in this engine (a window): a newer one or any real request stops it. */
  private prefetching: RunningPrefetch | null = null;
  private nextPrefetchId = 1;
  /** Prefetch ids a real request was answered from (each counts once, however often it serves). */
  private readonly servedPrefetches = new Set<number>();
  /** Real model requests in flight (from the model call to its end). */
  private realRequests = 0;
  /** The last few answers to "alternatives here": cycling back and forth asks again for the same cursor. */
  private readonly alternativesCache: { prefix: string; suffix: string; answer: Omit<EngineAlternatives, 'greedy' | 'fromCache' | 'latencyMs'> }[] = [];

  constructor(
    private readonly backend: CompletionBackend,
    public settings: EngineSettings = { ...DEFAULT_ENGINE_SETTINGS },
    private readonly now: () => number = () => performance.now(),
  ) {}

  get mode(): DecodeMode {
    return modeFor(this.settings);
  }

  /**
   * Why a document gets no completions at all, wherever the cursor is (null: it does). The editor
   * shows it, so a file without ghost text is not a mystery (an untitled file is plain text, which is
   * off by default).
   */
  skipReason(doc: Pick<EngineDocument, 'uri' | 'languageId' | 'length'>): SkippedCompletion | null {
    const s = this.settings;
    if (!s.enabled) return new SkippedCompletion('disabled', 'completions are turned off (Draftline: Toggle Completions)');
    if (s.disabledLanguages.includes(doc.languageId)) {
      const untitled = doc.uri.startsWith('untitled:') && doc.languageId === 'plaintext' ? ': an untitled file is plain text until you pick its language or save it with an extension' : '';
      return new SkippedCompletion('language', `completions are off for ${doc.languageId} (draftline.disabledLanguages)${untitled}`);
    }
    if (doc.length > s.maxDocumentChars) return new SkippedCompletion('tooLarge', `the document is larger than ${s.maxDocumentChars} characters`);
    return null;
  }

  /** The request the engine sends for a document and cursor (also used to reproduce a completion). */
  buildRequest(doc: EngineDocument): CompletionRequest | SkippedCompletion {
    const s = this.settings;
    const skipped = this.skipReason(doc);
    if (skipped) return skipped;
    const window = documentWindow(doc, doc.offset, s);
    if (looksBinary(window.prefix) || looksBinary(window.suffix)) return new SkippedCompletion('binary', 'document looks binary (NUL characters)');
    const lineSuffix = window.suffix.split('\n', 1)[0];
    return {
      prefix: window.prefix,
      suffix: window.suffix,
      documentKey: doc.uri,
      languageId: doc.languageId,
      tabSize: doc.tabSize,
      maxTokens: s.maxTokens,
      mode: this.mode,
      stopAtBlockEnd: true,
      singleLine: !TRIVIAL_LINE_SUFFIX.test(lineSuffix),
      maxLines: s.maxLines,
      extraContext: doc.extraContext?.(),
    };
  }

  /**
   * `beforeModel` runs only on a cache miss, before the model is asked (the editor debounces there).
   * A prefetch of exactly this request that is still running is waited for instead (no debounce);
   * one of another request is stopped at once.
   */
  async complete(doc: EngineDocument, signal?: AbortSignal, beforeModel?: () => Promise<void>): Promise<EngineCompletion | SkippedCompletion> {
    let started = this.now();
    const request = this.buildRequest(doc);
    if (request instanceof SkippedCompletion) return request;
    const cached = await this.fromCacheOrPrefetch(request, signal);
    if (cached === 'cancelled') return new SkippedCompletion('cancelled', 'superseded by a newer request');
    if (cached) return this.served(doc, cached, started);
    // A real request elsewhere: the prefetch yields at once.
    this.yieldPrefetchTo(request);
    const waitStarted = this.now();
    await beforeModel?.();
    if (signal?.aborted) return new SkippedCompletion('cancelled', 'superseded by a newer request');
    // A prefetch may have computed it during the debounce (the accept's, when the editor asked first).
    const cachedLater = await this.fromCacheOrPrefetch(request, signal);
    if (cachedLater === 'cancelled') return new SkippedCompletion('cancelled', 'superseded by a newer request');
    if (cachedLater) return this.served(doc, cachedLater, started);
    this.yieldPrefetchTo(request);
    started = this.now(); // latency counts from the model request, not the debounce
    const waitMs = started - waitStarted;
    this.realRequests++;
    let result: CompletionResult;
    try {
      result = await this.backend.complete(request, signal);
    } finally {
      this.realRequests--;
    }
    if (signal?.aborted || result.stats.stopReason === 'abort') return new SkippedCompletion('cancelled', 'superseded by a newer request');
    const shown = this.shownFor(result, request, doc);
    const latencyMs = this.now() - started;
    this.cache.put(request.prefix, request.suffix, shown);
    this.stats.record({ at: Date.now(), latencyMs, waitMs, fromCache: false, chars: shown.text.length, stats: result.stats });
    if (this.prefetchWhileShown() === 'all') this.prefetchAfterShown(doc, shown);
    return { ...shown, fromCache: false, prefetched: false, result, latencyMs };
  }

  /** The ghost text a raw completion becomes: the user's maxLines, not the filters' default (the stop rule already cut there). */
  private shownFor(result: CompletionResult, request: CompletionRequest, doc: EngineDocument) {
    const ctx = { prefix: request.prefix, suffix: request.suffix, languageId: doc.languageId, tabSize: doc.tabSize, insertSpaces: doc.insertSpaces };
    return postprocess(result.text, ctx, defaultFilters(this.settings.maxLines));
  }

  /** The cache's answer; if a prefetch of exactly this request runs, its answer once it ends. */
  private async fromCacheOrPrefetch(request: CompletionRequest, signal?: AbortSignal): Promise<CacheHit | undefined | 'cancelled'> {
    const hit = this.cache.get(request.prefix, request.suffix);
    if (hit) return hit;
    const running = this.prefetching;
    if (!running || running.prefix !== request.prefix || running.suffix !== request.suffix) return undefined;
    await abortable(running.done, signal);
    if (signal?.aborted) return 'cancelled';
    return this.cache.get(request.prefix, request.suffix);
  }

  private served(doc: EngineDocument, hit: CacheHit, started: number): EngineCompletion {
    const latencyMs = this.now() - started;
    const prefetched = hit.prefetch !== undefined;
    if (hit.prefetch && !this.servedPrefetches.has(hit.prefetch.id)) {
      this.servedPrefetches.add(hit.prefetch.id);
      this.stats.prefetch.served++;
      if (hit.text) this.stats.prefetch.shown++;
    }
    const prefetchedBy = hit.prefetch?.by;
    this.stats.record({ at: Date.now(), latencyMs, fromCache: true, ...(prefetchedBy ? { prefetchedBy } : {}), chars: hit.text.length, stats: null });
    const whileShown = this.prefetchWhileShown();
    if (whileShown === 'all' || (whileShown === 'prefetched' && prefetched)) this.prefetchAfterShown(doc, hit);
    return { text: hit.text, replaceSuffixChars: hit.replaceSuffixChars, fromCache: true, prefetched, ...(prefetchedBy ? { prefetchedBy } : {}), result: null, latencyMs };
  }

  /** Whether alternatives at `doc`'s cursor are remembered (asking again costs no model time: no spinner). */
  hasAlternatives(doc: EngineDocument): boolean {
    const request = this.buildRequest(doc);
    return !(request instanceof SkippedCompletion) && this.rememberedAlternatives(request) !== undefined;
  }

  /** The alternatives already computed for exactly this request (cycling back over them costs nothing). */
  private rememberedAlternatives(request: CompletionRequest) {
    return this.alternativesCache.find((e) => e.prefix === request.prefix && e.suffix === request.suffix)?.answer;
  }

  /**
   * Up to `count` alternatives after the greedy completion at the cursor, asked only when the user
   * cycles suggestions: the greedy one comes from the cache (the user saw it), the others from the
   * backend, post-processed like it, and only those that read differently from it and from each
   * other are kept. A real request: a running prefetch stops; the signal (a keystroke) stops it.
   */
  async alternatives(doc: EngineDocument, count = 2, signal?: AbortSignal): Promise<EngineAlternatives | SkippedCompletion> {
    const started = this.now();
    const greedy = await this.complete(doc, signal);
    if (greedy instanceof SkippedCompletion) return greedy;
    const request = this.buildRequest(doc);
    if (request instanceof SkippedCompletion) return request;
    const tally = this.stats.alternatives;
    tally.asked++;
    const done = (answer: Omit<EngineAlternatives, 'greedy' | 'fromCache' | 'latencyMs'>, fromCache: boolean): EngineAlternatives => {
      const latencyMs = this.now() - started;
      if (!fromCache) {
        tally.computed++;
        tally.totalMs += latencyMs;
      }
      tally.items += answer.items.length;
      tally.lastLimitedBy = answer.limitedBy ?? null;
      return { ...answer, greedy, fromCache, latencyMs };
    };
    const greedyItem: ShownCompletion[] = greedy.text ? [{ text: greedy.text, replaceSuffixChars: greedy.replaceSuffixChars }] : [];
    const known = this.rememberedAlternatives(request);
    if (known) return done(known, true);
    if (!this.backend.alternatives) return done({ items: greedyItem, limitedBy: 'this backend computes one suggestion only' }, false);
    this.cancelPrefetch();
    this.realRequests++;
    let result: AlternativesResult;
    try {
      result = await this.backend.alternatives(request, count, signal);
    } finally {
      this.realRequests--;
    }
    if (signal?.aborted) return new SkippedCompletion('cancelled', 'superseded by a newer request');
    const items = distinctSuggestions(
      greedyItem,
      result.completions.filter((c) => c.stats.stopReason !== 'abort').map((c) => this.shownFor(c, request, doc)),
      count + greedyItem.length,
    );
    const answer = { items, branch: result.branch, limitedBy: result.limitedBy };
    this.alternativesCache.push({ prefix: request.prefix, suffix: request.suffix, answer });
    if (this.alternativesCache.length > 8) this.alternativesCache.shift();
    return done(answer, false);
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

  /** Whether a prefetch runs now (for tests and the bench). */
  get prefetchRunning(): boolean {
    return this.prefetching !== null;
  }

  /** A real request goes to the model: a prefetch of another request stops (one of this request was waited for). */
  private yieldPrefetchTo(request: CompletionRequest): void {
    const running = this.prefetching;
    if (running && (running.prefix !== request.prefix || running.suffix !== request.suffix)) running.controller.abort();
  }

  /** Stops the running prefetch, if any (a keystroke, a request elsewhere). */
  cancelPrefetch(): void {
    this.prefetching?.controller.abort();
  }

  /**
   * The user edited a document: a keystroke stops the running prefetch at once, except the edit a
   * prefetch made while a ghost text was shown is for (that ghost text accepted with Tab), and the
   * keystrokes that type that ghost text's beginning (the user types it instead: the accept of the
   * rest, or the last of those keystrokes, ends where the prefetch is for).
   */
  documentEdited(uri: string, edits: readonly DocumentEdit[]): void {
    const running = this.prefetching;
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
  async prefetch(doc: EngineDocument, trigger: PrefetchTrigger = 'accepted', expectedEdit?: RunningPrefetch['expectedEdit']): Promise<PrefetchOutcome> {
    const tally = this.stats.prefetch;
    const end = (outcome: PrefetchOutcome, detail = ''): PrefetchOutcome => {
      this.onPrefetch?.(outcome, trigger, detail);
      return outcome;
    };
    if (!this.settings.prefetch) {
      tally.blocked++;
      return end('blocked', 'draftline.prefetch.enabled is off');
    }
    const request = this.buildRequest(doc);
    if (request instanceof SkippedCompletion) return end('skipped', request.message);
    const running = this.prefetching;
    if (running && running.prefix === request.prefix && running.suffix === request.suffix) return end('cached', 'already being prefetched');
    if (this.cache.get(request.prefix, request.suffix)) return end('cached', 'already in the cache');
    if (this.realRequests > 0) {
      tally.busy++;
      return end('busy', 'a completion is running');
    }
    // Registered before anything is awaited: the editor's request for this cursor, which comes
    // right after the accept, finds it and waits for it instead of stopping it.
    this.cancelPrefetch();
    const id = this.nextPrefetchId++;
    const controller = new AbortController();
    const started = this.now();
    let settle!: () => void;
    const entry: RunningPrefetch = { id, prefix: request.prefix, suffix: request.suffix, expectedEdit, controller, done: new Promise((resolve) => (settle = resolve)) };
    this.prefetching = entry;
    const unregister = () => {
      if (this.prefetching === entry) this.prefetching = null;
      settle();
    };
    const blocked = await this.prefetchBlocker();
    if (blocked) {
      unregister();
      tally.blocked++;
      return end('blocked', blocked);
    }
    // The check above awaited: a real request or a keystroke may have come meanwhile.
    if (controller.signal.aborted) {
      unregister();
      return end('cancelled', 'stopped before it started');
    }
    if (this.realRequests > 0) {
      unregister();
      tally.busy++;
      return end('busy', 'a completion is running');
    }
    tally.started++;
    try {
      const result = await this.backend.complete({ ...request, prefetch: true }, controller.signal);
      if (controller.signal.aborted || result.stats.stopReason === 'abort') {
        tally.cancelled++;
        return end('cancelled', 'stopped by a keystroke or a request');
      }
      const shown = this.shownFor(result, request, doc);
      this.cache.put(request.prefix, request.suffix, shown, { id, by: trigger });
      tally.ready++;
      return end('ready', `${shown.text.length} chars in ${Math.round(this.now() - started)} ms`);
    } catch (error) {
      if ((error as { code?: string }).code === 'busy') {
        // Refused before it ran (another window's request): not started after all.
        tally.started--;
        tally.busy++;
        return end('busy', (error as Error).message);
      }
      if (controller.signal.aborted) {
        tally.cancelled++;
        return end('cancelled', 'stopped by a keystroke or a request');
      }
      tally.failed++;
      return end('failed', (error as Error).message);
    } finally {
      unregister();
    }
  }
}

/** Resolves when `promise` settles or `signal` aborts, whichever comes first. */
function abortable(promise: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    promise.then(done, done);
  });
}

/**
 * `first`, then those of `candidates` that the user would not see as the same text as one before
 * them (trailing whitespace aside; empty ones dropped), at most `max` in all.
 */
export function distinctSuggestions(first: readonly ShownCompletion[], candidates: readonly ShownCompletion[], max: number): ShownCompletion[] {
  const out: ShownCompletion[] = [];
  const seen = new Set<string>();
  for (const c of [...first, ...candidates]) {
    const key = c.text.trimEnd();
    if (key === '' || seen.has(key) || out.length >= max) continue;
    seen.add(key);
    out.push(c);
  }
  return out;
}
