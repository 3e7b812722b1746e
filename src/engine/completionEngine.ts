import { defaultFilters, postprocess } from '../postprocess';
import { documentWindow, looksBinary, type TextSource, type WindowLimits } from '../prompt/documentWindow';
import { CompletionCache } from './completionCache';
import { DEFAULT_ENGINE_SETTINGS } from './declaredSettings';
import { StatsCollector } from './statsCollector';
import type { CompletionRequest, CompletionResult, DecodeMode, ExtraContext } from '../shared/types';

/** Where completions are computed: the worker client in the extension, an in-process session in tests. */
export interface CompletionBackend {
  complete(request: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult>;
}

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

export interface EngineSettings extends WindowLimits {
  enabled: boolean;
  speculation: boolean;
  ngramReuse: boolean;
  /** True when a usable draft model is loaded. */
  draftAvailable: boolean;
  maxTokens: number;
  maxLines: number;
  disabledLanguages: string[];
  /** Documents longer than this are not completed in (chars). */
  maxDocumentChars: number;
}

/** The declared defaults (package.json), read once. */
export { DEFAULT_ENGINE_SETTINGS } from './declaredSettings';

export interface EngineCompletion {
  text: string;
  /** Characters after the cursor, on its line, that `text` replaces (auto-closed brackets it writes itself). */
  replaceSuffixChars: number;
  fromCache: boolean;
  result: CompletionResult | null;
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
   */
  async complete(doc: EngineDocument, signal?: AbortSignal, beforeModel?: () => Promise<void>): Promise<EngineCompletion | SkippedCompletion> {
    let started = this.now();
    const request = this.buildRequest(doc);
    if (request instanceof SkippedCompletion) return request;
    const cached = this.cache.get(request.prefix, request.suffix);
    if (cached !== undefined) {
      const latencyMs = this.now() - started;
      this.stats.record({ at: Date.now(), latencyMs, fromCache: true, chars: cached.text.length, stats: null });
      return { ...cached, fromCache: true, result: null, latencyMs };
    }
    const waitStarted = this.now();
    await beforeModel?.();
    if (signal?.aborted) return new SkippedCompletion('cancelled', 'superseded by a newer request');
    started = this.now(); // latency counts from the model request, not the debounce
    const waitMs = started - waitStarted;
    const result = await this.backend.complete(request, signal);
    if (signal?.aborted || result.stats.stopReason === 'abort') return new SkippedCompletion('cancelled', 'superseded by a newer request');
    // The user's maxLines, not the filters' default: the stop rule already cut there.
    const ctx = { prefix: request.prefix, suffix: request.suffix, languageId: doc.languageId, tabSize: doc.tabSize, insertSpaces: doc.insertSpaces };
    const shown = postprocess(result.text, ctx, defaultFilters(this.settings.maxLines));
    const latencyMs = this.now() - started;
    this.cache.put(request.prefix, request.suffix, shown);
    this.stats.record({ at: Date.now(), latencyMs, waitMs, fromCache: false, chars: shown.text.length, stats: result.stats });
    return { ...shown, fromCache: false, result, latencyMs };
  }
}
