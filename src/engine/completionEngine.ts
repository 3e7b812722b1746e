import { defaultFilters, postprocess, type ShownCompletion } from '../postprocess';
import { documentWindow, looksBinary } from '../prompt/documentWindow';
import { type CacheHit, CompletionCache } from './completionCache';
import type { CompletionBackend } from '../backend/backend';
import { DEFAULT_ENGINE_SETTINGS, type EngineSettings } from '../settings/declaredSettings';
import { type PrefetchTrigger, StatsCollector } from '../stats/statsCollector';
import type { EngineDocument } from './engineDocument';
import { type ExpectedEdit, type PrefetchOptions, type PrefetchOutcome, Prefetcher } from './prefetcher';
export { emptyPrefetchTally, type PrefetchTally, type PrefetchTrigger, wastedPrefetches } from '../stats/statsCollector';
import type { AlternativesResult, CompletionRequest, CompletionResult, DocumentEdit } from '../shared/completion';
import type { DecodeMode } from '../shared/decoding';

export { documentAfterInsertion, type EngineDocument } from './engineDocument';
export { type PrefetchOptions, type PrefetchOutcome, type PrefetchWhileShown, prefetchWhileShownFor } from './prefetcher';

/** How an engine is made besides its backend and settings. */
export interface EngineOptions extends PrefetchOptions {
  /** The clock latencies are measured by (tests step it). */
  now?: () => number;
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

/** The suggestions to cycle through: the greedy one the user saw first, then distinct alternatives. */
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

/** Closing brackets and punctuation after the cursor still allow a multi-line completion. */
const TRIVIAL_LINE_SUFFIX = /^[\s)\]}>;,'"`]*$/;

/**
 * The IDE-agnostic completion core: window the document, serve from cache, ask the backend, post-
 * process, record stats. The VS Code layer (or a test) injects the backend and the document.
 */
export class CompletionEngine {
  readonly cache = new CompletionCache();
  readonly stats = new StatsCollector();
  /** The completion the editor will ask for next, computed before it asks (prefetcher.ts). */
  private readonly prefetcher: Prefetcher;
  /** Real model requests in flight (from the model call to its end). */
  private realRequests = 0;
  /** The last few answers to "alternatives here": cycling back and forth asks again for the same cursor. */
  private readonly alternativesCache: { prefix: string; suffix: string; answer: Omit<EngineAlternatives, 'greedy' | 'fromCache' | 'latencyMs'> }[] = [];

  private readonly now: () => number;

  /** `options`: the prefetch's hooks (PrefetchOptions), and the clock (tests). */
  constructor(
    private readonly backend: CompletionBackend,
    public settings: EngineSettings = { ...DEFAULT_ENGINE_SETTINGS },
    options: EngineOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
    this.prefetcher = new Prefetcher(
      {
        enabled: () => this.settings.prefetch,
        requestFor: (doc) => this.buildRequest(doc),
        cache: this.cache,
        realRequestRunning: () => this.realRequests > 0,
        complete: (request, signal) => this.backend.complete(request, signal),
        shownFor: (result, request, doc) => this.shownFor(result, request, doc),
        tally: () => this.stats.prefetch,
        now: () => this.now(),
      },
      options,
    );
  }

  /** PrefetchOptions.prefetchBlocker (the editor's battery check; tests set it). */
  get prefetchBlocker(): Prefetcher['prefetchBlocker'] {
    return this.prefetcher.prefetchBlocker;
  }
  set prefetchBlocker(blocker: Prefetcher['prefetchBlocker']) {
    this.prefetcher.prefetchBlocker = blocker;
  }

  /** PrefetchOptions.prefetchWhileShown (the bench compares its choices). */
  get prefetchWhileShown(): Prefetcher['prefetchWhileShown'] {
    return this.prefetcher.prefetchWhileShown;
  }
  set prefetchWhileShown(whileShown: Prefetcher['prefetchWhileShown']) {
    this.prefetcher.prefetchWhileShown = whileShown;
  }

  get onPrefetch(): Prefetcher['onPrefetch'] {
    return this.prefetcher.onPrefetch;
  }
  set onPrefetch(listener: Prefetcher['onPrefetch']) {
    this.prefetcher.onPrefetch = listener;
  }

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
      ...(window.prefixLine === undefined ? {} : { prefixLine: window.prefixLine }),
      suffix: window.suffix,
      documentKey: doc.uri,
      languageId: doc.languageId,
      tabSize: doc.tabSize,
      maxTokens: s.maxTokens,
      mode: this.mode,
      stopAtBlockEnd: true,
      singleLine: !TRIVIAL_LINE_SUFFIX.test(lineSuffix),
      maxLines: s.maxLines,
      // Prefetches and alternatives too: the editor may wait for a prefetch (it joins one at its
      // cursor), and for alternatives all at once.
      ...(s.timeBudgetMs > 0 ? { timeBudgetMs: s.timeBudgetMs } : {}),
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
    this.prefetcher.yieldTo(request);
    const waitStarted = this.now();
    await beforeModel?.();
    if (signal?.aborted) return new SkippedCompletion('cancelled', 'superseded by a newer request');
    // A prefetch may have computed it during the debounce (the accept's, when the editor asked first).
    const cachedLater = await this.fromCacheOrPrefetch(request, signal);
    if (cachedLater === 'cancelled') return new SkippedCompletion('cancelled', 'superseded by a newer request');
    if (cachedLater) return this.served(doc, cachedLater, started);
    this.prefetcher.yieldTo(request);
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
    this.prefetcher.shown(doc, shown, false);
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
    const running = this.prefetcher.runningFor(request);
    if (!running) return undefined;
    await abortable(running, signal);
    if (signal?.aborted) return 'cancelled';
    return this.cache.get(request.prefix, request.suffix);
  }

  private served(doc: EngineDocument, hit: CacheHit, started: number): EngineCompletion {
    const latencyMs = this.now() - started;
    const prefetched = hit.prefetch !== undefined;
    this.prefetcher.countServed(hit);
    const prefetchedBy = hit.prefetch?.by;
    this.stats.record({ at: Date.now(), latencyMs, fromCache: true, ...(prefetchedBy ? { prefetchedBy } : {}), chars: hit.text.length, stats: null });
    this.prefetcher.shown(doc, hit, prefetched);
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

  /** Whether a prefetch runs now (for tests and the bench). */
  get prefetchRunning(): boolean {
    return this.prefetcher.isRunning;
  }

  /** Stops the running prefetch, if any (a keystroke, a request elsewhere). */
  cancelPrefetch(): void {
    this.prefetcher.cancel();
  }

  /** A keystroke stops the running prefetch, but for the edit it is for (Prefetcher.documentEdited). */
  documentEdited(uri: string, edits: readonly DocumentEdit[]): void {
    this.prefetcher.documentEdited(uri, edits);
  }

  /** Prefetcher.prefetch: the completion at `doc`'s cursor, computed before it is asked for and kept in the cache. */
  prefetch(doc: EngineDocument, trigger: PrefetchTrigger = 'accepted', expectedEdit?: ExpectedEdit): Promise<PrefetchOutcome> {
    return this.prefetcher.prefetch(doc, trigger, expectedEdit);
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
