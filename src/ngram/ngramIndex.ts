import { ChunkedDocument, type TextEdit } from './chunkedDocument';
import { hashNgram } from './hashNgram';
import { TokenRun, type RunMatch } from './tokenRun';
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
};

export type LookupOptions = {
  /** Among equally long matches, this source wins (usually the document being edited). */
  preferKey?: string;
  excludeKeys?: string[];
};

export type NgramIndexStats = {
  documents: number;
  skippedDocuments: number;
  sequences: number;
  chunks: number;
  tokens: number;
  /** Cumulative: how often and how much text the tokenizer was asked to do. */
  tokenizeCalls: number;
  tokenizedChars: number;
};

const DEFAULT_MAX_DOCUMENT_CHARS = 2 * 1024 * 1024;
const DEFAULT_MAX_SEQUENCES = 64;

/** Something to search: a chunked document or one accepted sequence (a single run). */
type Source = {
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
  private readonly documents = new Map<string, { doc: ChunkedDocument; touched: number }>();
  private readonly skipped = new Set<string>();
  /** Insertion order is LRU order: re-adding a key moves it to the end. */
  private readonly sequences = new Map<string, { run: TokenRun; touched: number }>();
  private clock = 0;
  private tokenizeCalls = 0;
  private tokenizedChars = 0;

  constructor(options: NgramIndexOptions) {
    assertValidSizes(options);
    this.minN = options.minN;
    this.maxN = options.maxN;
    this.tokenize = options.tokenize;
    this.maxDocumentChars = options.maxDocumentChars ?? DEFAULT_MAX_DOCUMENT_CHARS;
    this.maxSequences = options.maxSequences ?? DEFAULT_MAX_SEQUENCES;
  }

  /** (Re)indexes a whole document; huge or binary-looking text is skipped, not indexed. */
  setDocument(key: string, text: string): void {
    this.documents.delete(key);
    this.skipped.delete(key);
    if (!this.isIndexable(text, text.length)) {
      this.skipped.add(key);
      return;
    }
    this.documents.set(key, { doc: new ChunkedDocument(text, (chunk) => this.buildRun(chunk)), touched: ++this.clock });
  }

  /**
   * Applies edits in order (each edit's offsets refer to the text after the previous edits).
   * Returns false when the document is not indexed (unknown, skipped, or an edit did not fit:
   * then it is dropped, since its text is out of step) — call setDocument to index it again.
   */
  applyEdits(key: string, edits: readonly TextEdit[]): boolean {
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
    return true;
  }

  removeDocument(key: string): void {
    this.documents.delete(key);
    this.skipped.delete(key);
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
    let best: { source: Source; match: SourceMatch } | null = null;
    for (const source of this.sourcesByPreference(opts)) {
      const match = this.findInSource(source, context, tailHash, maxN);
      if (match === null || (best !== null && match.n <= best.match.n)) continue;
      best = { source, match };
      if (match.n === maxN) break;
    }
    if (best === null) return null;
    return {
      tokens: continuation(best.source.runs(), best.match.runIndex, best.match.end, maxLen),
      n: best.match.n,
      source: best.source.key,
    };
  }

  stats(): NgramIndexStats {
    let chunks = 0;
    let tokens = 0;
    for (const { doc } of this.documents.values()) {
      for (const chunk of doc.chunkList) {
        chunks++;
        tokens += chunk.run.length;
      }
    }
    return {
      documents: this.documents.size,
      skippedDocuments: this.skipped.size,
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
    return entry && entry.doc.chunkList.flatMap((chunk) => Array.from(chunk.run.tokens));
  }

  private isIndexable(text: string, resultingLength: number): boolean {
    return resultingLength <= this.maxDocumentChars && !text.includes('\u0000');
  }

  private buildRun(text: string): TokenRun {
    this.tokenizeCalls++;
    this.tokenizedChars += text.length;
    return new TokenRun(this.tokenize(text), this.minN);
  }

  private sourcesByPreference({ preferKey, excludeKeys = [] }: LookupOptions): Source[] {
    const excluded = new Set(excludeKeys);
    const sources: Source[] = [];
    for (const [key, { doc, touched }] of this.documents) {
      if (!excluded.has(key)) sources.push({ key, runs: () => doc.runs(), touched });
    }
    for (const [key, { run, touched }] of this.sequences) {
      if (!excluded.has(key)) sources.push({ key, runs: () => [run], touched });
    }
    const preferred = (source: Source) => (source.key === preferKey ? 1 : 0);
    return sources.sort((a, b) => preferred(b) - preferred(a) || b.touched - a.touched);
  }

  /** Best match in one source: longest, then latest; runs are searched from the last one back. */
  private findInSource(source: Source, context: readonly number[], tailHash: number, maxN: number): SourceMatch | null {
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

/** Up to maxLen tokens from `end` in runs[runIndex], continuing into the following runs. */
function continuation(runs: readonly TokenRun[], runIndex: number, end: number, maxLen: number): number[] {
  const tokens: number[] = [];
  for (let i = runIndex, from = end; i < runs.length && tokens.length < maxLen; i++, from = 0) {
    const run = runs[i]!.tokens;
    for (let t = from; t < run.length && tokens.length < maxLen; t++) tokens.push(run[t]!);
  }
  return tokens;
}
