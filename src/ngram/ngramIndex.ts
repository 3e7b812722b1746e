import { ChunkedDocument, type TextEdit } from './chunkedDocument';
import { hashNgram } from './hashNgram';
import { type RunMatch, TokenRun, tokensAfter } from './tokenRun';
import { assertValidSizes, type NgramMatch } from './types';

export type { TextEdit } from './chunkedDocument';

export type NgramIndexOptions = {
  minN: number;
  maxN: number;
  tokenize: (text: string) => number[];
  /** Larger documents are not indexed (memory). Default 2 MB of UTF-16 code units. */
  maxDocumentChars?: number;
  /** Accepted-completion sequences kept, least recently added dropped first. Default 64. */
  maxSequences?: number;
  /**
   * Total text of all indexed documents (UTF-16 code units); past it the least recently used
   * documents are dropped from the index. Default 4 M (the index's memory grows with its text).
   */
  maxTotalChars?: number;
  /** setDocumentInSlices works this long (ms) between yields to the event loop. Default 8. */
  sliceMs?: number;
};

export type LookupOptions = {
  /** Among equally long matches, this source wins (usually the document being edited). */
  preferKey?: string;
  excludeKeys?: string[];
};

export type NgramIndexStats = {
  documents: number;
  /** Text of the indexed documents, in UTF-16 code units. */
  indexedChars: number;
  skippedDocuments: number;
  /** Dropped to stay under maxTotalChars (indexed again when their text is sent again). */
  evictedDocuments: number;
  /** Being indexed in slices. */
  pendingDocuments: number;
  sequences: number;
  chunks: number;
  tokens: number;
  /** Cumulative: how often and how much text the tokenizer was asked to do. */
  tokenizeCalls: number;
  tokenizedChars: number;
};

const DEFAULT_MAX_DOCUMENT_CHARS = 2 * 1024 * 1024;
const DEFAULT_MAX_SEQUENCES = 64;
const DEFAULT_MAX_TOTAL_CHARS = 4_000_000;
const DEFAULT_SLICE_MS = 8;

/** Where a document stands in the index (see useDocument). */
export type DocumentState = 'indexed' | 'pending' | 'evicted' | 'skipped' | 'unknown';

/** A document being indexed in slices; edits that arrive meanwhile wait here, in order. */
type PendingDocument = { queuedEdits: TextEdit[][]; cancelled: boolean };

/** Something to search: a chunked document or one accepted sequence (a single run). */
export type IndexSource = {
  key: string;
  runs(): readonly TokenRun[];
  /** Recency stamp: larger means touched more recently. */
  touched: number;
};

type SourceMatch = RunMatch & { runIndex: number };

/**
 * Prompt-lookup proposals from many token documents (open editors, accepted completions).
 * Documents are split into content-defined chunks tokenized separately, so an edit re-tokenizes
 * only the chunk or two it touches. Limits: an n-gram that spans a chunk boundary is not found
 * (a proposal does continue into the next chunk), and a chunk's tokens may differ slightly from
 * tokenizing the whole document at once, near its boundaries.
 */
export class NgramIndex {
  private readonly minN: number;
  private readonly maxN: number;
  private readonly tokenize: (text: string) => number[];
  private readonly maxDocumentChars: number;
  private readonly maxSequences: number;
  private readonly maxTotalChars: number;
  private readonly sliceMs: number;
  private readonly documents = new Map<string, { doc: ChunkedDocument; touched: number }>();
  private readonly skipped = new Set<string>();
  private readonly evicted = new Set<string>();
  private readonly pending = new Map<string, PendingDocument>();
  /** Insertion order is LRU order: re-adding a key moves it to the end. */
  private readonly sequences = new Map<string, { run: TokenRun; touched: number }>();
  private clock = 0;
  /** The sources in a lookup's order, and what they were sorted for (sourcesByPreference). */
  private order: { stamp: string; sources: readonly IndexSource[] } | undefined;
  private tokenizeCalls = 0;
  private tokenizedChars = 0;

  constructor(options: NgramIndexOptions) {
    assertValidSizes(options);
    this.minN = options.minN;
    this.maxN = options.maxN;
    this.tokenize = options.tokenize;
    this.maxDocumentChars = options.maxDocumentChars ?? DEFAULT_MAX_DOCUMENT_CHARS;
    this.maxSequences = options.maxSequences ?? DEFAULT_MAX_SEQUENCES;
    this.maxTotalChars = options.maxTotalChars ?? DEFAULT_MAX_TOTAL_CHARS;
    this.sliceMs = options.sliceMs ?? DEFAULT_SLICE_MS;
  }

  /**
   * (Re)indexes a whole document at once; huge or binary-looking text is skipped, not indexed. Blocks
   * for the whole text (seconds for a large file with a real tokenizer): the worker uses
   * setDocumentInSlices.
   */
  setDocument(key: string, text: string): void {
    if (!this.startDocument(key, text)) return;
    this.addIndexed(key, new ChunkedDocument(text, (chunk) => this.buildRun(chunk)));
  }

  /**
   * Like setDocument, but tokenizes in slices of about `sliceMs` with a yield to the event loop
   * between them, so a completion waits for one slice rather than the whole file. The document is
   * searched once complete; edits that arrive meanwhile are applied then, in order. Resolves when the
   * document is indexed, skipped or superseded (setDocument, removeDocument or clear for its key).
   * `pause` runs between slices (the worker also waits there while a generation runs).
   */
  async setDocumentInSlices(key: string, text: string, pause: () => Promise<void> = yieldToEventLoop): Promise<void> {
    if (!this.startDocument(key, text)) return;
    const state: PendingDocument = { queuedEdits: [], cancelled: false };
    this.pending.set(key, state);
    const step = ChunkedDocument.inSteps(text, (chunk) => this.buildRun(chunk));
    let doc: ChunkedDocument | null;
    while ((doc = step(this.sliceMs)) === null) {
      await pause();
      if (state.cancelled) return;
    }
    if (state.cancelled) return;
    this.pending.delete(key);
    this.addIndexed(key, doc);
    for (const edits of state.queuedEdits) if (!this.applyEdits(key, edits)) return;
  }

  /**
   * A completion is about to use this document (LRU): marks it recently used and says where it
   * stands. 'evicted' means the caller should send its text again to have it indexed.
   */
  useDocument(key: string): DocumentState {
    const entry = this.documents.get(key);
    if (entry) {
      entry.touched = ++this.clock;
      return 'indexed';
    }
    if (this.pending.has(key)) return 'pending';
    if (this.evicted.has(key)) return 'evicted';
    return this.skipped.has(key) ? 'skipped' : 'unknown';
  }

  /** Drops every document and stops the slices in progress (the index is being replaced). */
  clear(): void {
    for (const state of this.pending.values()) state.cancelled = true;
    this.pending.clear();
    this.documents.clear();
    this.skipped.clear();
    this.evicted.clear();
    this.sequences.clear();
  }

  /**
   * Applies edits in order (each edit's offsets refer to the text after the previous edits).
   * Returns false when the document is not indexed (unknown, skipped, or an edit did not fit:
   * then it is dropped, since its text is out of step) — call setDocument to index it again.
   */
  applyEdits(key: string, edits: readonly TextEdit[]): boolean {
    const pending = this.pending.get(key);
    if (pending !== undefined) {
      pending.queuedEdits.push([...edits]);
      return true;
    }
    const entry = this.documents.get(key);
    if (entry === undefined) return false;
    for (const edit of edits) {
      const newLength = entry.doc.length + edit.text.length - edit.deleteCount;
      if (!this.isIndexable(edit.text, newLength)) {
        this.documents.delete(key);
        this.skipped.add(key);
        return false;
      }
      if (!entry.doc.applyEdit(edit)) {
        this.documents.delete(key);
        return false;
      }
    }
    entry.touched = ++this.clock;
    this.evictOverBudget(key);
    return true;
  }

  removeDocument(key: string): void {
    this.cancelPending(key);
    this.documents.delete(key);
    this.skipped.delete(key);
    this.evicted.delete(key);
  }

  /** Remembers a token sequence (e.g. an accepted completion) under `key`. */
  addSequence(key: string, tokens: readonly number[]): void {
    this.sequences.delete(key);
    this.sequences.set(key, { run: new TokenRun(tokens, this.minN), touched: ++this.clock });
    while (this.sequences.size > this.maxSequences) {
      const oldest = this.sequences.keys().next().value as string;
      this.sequences.delete(oldest);
    }
  }

  hasSequence(key: string): boolean {
    return this.sequences.has(key);
  }

  /**
   * Longest match of the context's tail (n from maxN down to minN) over all sources; among equal
   * n, `preferKey` first, then the most recently touched source, then the latest position.
   * Returns up to maxLen tokens that followed it.
   */
  lookup(context: readonly number[], maxLen: number, opts: LookupOptions = {}): NgramMatch | null {
    if (maxLen <= 0 || context.length < this.minN) return null;
    const tailHash = hashNgram(context, context.length, this.minN);
    const maxN = Math.min(this.maxN, context.length);
    let best: { source: IndexSource; match: SourceMatch } | null = null;
    for (const source of this.sourcesByPreference(opts)) {
      const match = this.findInSource(source, context, tailHash, maxN);
      if (match === null || (best !== null && match.n <= best.match.n)) continue;
      best = { source, match };
      if (match.n === maxN) break;
    }
    if (best === null) return null;
    return {
      tokens: tokensAfter(best.source.runs(), best.match.runIndex, best.match.end, maxLen),
      n: best.match.n,
      source: best.source.key,
    };
  }

  stats(): NgramIndexStats {
    let chunks = 0;
    let tokens = 0;
    let indexedChars = 0;
    for (const { doc } of this.documents.values()) {
      indexedChars += doc.length;
      for (const chunk of doc.chunkList) {
        chunks++;
        tokens += chunk.run.length;
      }
    }
    return {
      documents: this.documents.size,
      indexedChars,
      skippedDocuments: this.skipped.size,
      evictedDocuments: this.evicted.size,
      pendingDocuments: this.pending.size,
      sequences: this.sequences.size,
      chunks,
      tokens,
      tokenizeCalls: this.tokenizeCalls,
      tokenizedChars: this.tokenizedChars,
    };
  }

  /** The indexed text of a document (tests and diagnostics). */
  documentText(key: string): string | undefined {
    return this.documents.get(key)?.doc.text();
  }

  /** The indexed token stream of a document, chunk after chunk (tests and diagnostics). */
  documentTokens(key: string): number[] | undefined {
    const entry = this.documents.get(key);
    return entry?.doc.chunkList.flatMap((chunk) => Array.from(chunk.run.tokens));
  }

  private isIndexable(text: string, resultingLength: number): boolean {
    return resultingLength <= Math.min(this.maxDocumentChars, this.maxTotalChars) && !text.includes('\u0000');
  }

  /** Forgets what the index had for `key`; false (and marked skipped) when `text` is not indexable. */
  private startDocument(key: string, text: string): boolean {
    this.removeDocument(key);
    if (this.isIndexable(text, text.length)) return true;
    this.skipped.add(key);
    return false;
  }

  private addIndexed(key: string, doc: ChunkedDocument): void {
    this.documents.set(key, { doc, touched: ++this.clock });
    this.evictOverBudget(key);
  }

  private cancelPending(key: string): void {
    const state = this.pending.get(key);
    if (state === undefined) return;
    state.cancelled = true;
    this.pending.delete(key);
  }

  /** Drops the least recently used documents (never `keep`) until the indexed text fits maxTotalChars. */
  private evictOverBudget(keep: string): void {
    let total = 0;
    for (const { doc } of this.documents.values()) total += doc.length;
    if (total <= this.maxTotalChars) return;
    const oldestFirst = [...this.documents].filter(([key]) => key !== keep).sort((a, b) => a[1].touched - b[1].touched);
    for (const [key, { doc }] of oldestFirst) {
      if (total <= this.maxTotalChars) break;
      this.documents.delete(key);
      this.evicted.add(key);
      total -= doc.length;
    }
  }

  private buildRun(text: string): TokenRun {
    this.tokenizeCalls++;
    this.tokenizedChars += text.length;
    return new TokenRun(this.tokenize(text), this.minN);
  }

  /** The n-gram sizes the index looks for (minN: the hashed n-gram of its chains). */
  get sizes(): { minN: number; maxN: number } {
    return { minN: this.minN, maxN: this.maxN };
  }

  /**
   * The sources a lookup searches, in the order it prefers them: `preferKey` first, then the most
   * recently touched. Kept until a source is added, touched or dropped (every step of a decode asks).
   */
  sourcesByPreference({ preferKey, excludeKeys = [] }: LookupOptions): readonly IndexSource[] {
    // Adding or touching a source advances the clock; dropping one shrinks a map.
    const stamp = `${this.clock} ${this.documents.size} ${this.sequences.size} ${preferKey ?? ''}\u0000${excludeKeys.join('\u0000')}`;
    if (this.order?.stamp === stamp) return this.order.sources;
    const excluded = new Set(excludeKeys);
    const sources: IndexSource[] = [];
    for (const [key, { doc, touched }] of this.documents) {
      if (!excluded.has(key)) sources.push({ key, runs: () => doc.runs(), touched });
    }
    for (const [key, { run, touched }] of this.sequences) {
      const runs = [run];
      if (!excluded.has(key)) sources.push({ key, runs: () => runs, touched });
    }
    const preferred = (source: IndexSource) => (source.key === preferKey ? 1 : 0);
    sources.sort((a, b) => preferred(b) - preferred(a) || b.touched - a.touched);
    this.order = { stamp, sources };
    return sources;
  }

  /** Best match in one source: longest, then latest; runs are searched from the last one back. */
  private findInSource(source: IndexSource, context: readonly number[], tailHash: number, maxN: number): SourceMatch | null {
    const runs = source.runs();
    let best: SourceMatch | null = null;
    let hasLaterTokens = false;
    for (let runIndex = runs.length - 1; runIndex >= 0; runIndex--) {
      const run = runs[runIndex]!;
      const match = run.findLongestMatch(context, tailHash, maxN, hasLaterTokens);
      if (match !== null && (best === null || match.n > best.n)) {
        best = { ...match, runIndex };
        if (match.n === maxN) break;
      }
      hasLaterTokens ||= run.length > 0;
    }
    return best;
  }
}

function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
