import type { ContextChunk } from '../shared/completion';

/**
 * Chunks of the user's other code to show the model before the current file (extra context), kept
 * the way llama.vscode keeps them: a ring of at most `maxChunks` chunks of at most `chunkLines`
 * lines, newest last; a new chunk that is nearly the same as one already kept (Jaccard similarity of
 * their line sets above `similarity`) replaces it. Rendered oldest first, so adding a chunk appends
 * to the prompt's extra-context section and the KV cache of the chunks before it stays valid; only
 * an eviction or a replacement changes what comes earlier.
 *
 * Sources (the VS Code layer decides, vscode/extraContext.ts): the code around the cursor of a file
 * the user leaves or saves. Nothing leaves the machine.
 */

export interface ExtraContextOptions {
  maxChunks: number;
  chunkLines: number;
  /** Above this Jaccard similarity of line sets, a new chunk replaces the old one. */
  similarity: number;
  /**
   * A chunk longer than this (characters) is not kept: minified or generated code, whose 64 lines can
   * be a whole 2 MB file on one line. It would go with every request and be tokenized whole in the
   * worker, for a third of the prompt at most. Default MAX_CHUNK_CHARS.
   */
  maxChunkChars?: number;
}

/** 64 lines of hand-written code are 2-4 K characters; twice the longest of those. */
export const MAX_CHUNK_CHARS = 8192;

export const DEFAULT_EXTRA_CONTEXT: ExtraContextOptions = { maxChunks: 16, chunkLines: 64, similarity: 0.9 };

interface Kept extends ContextChunk {
  lines: Set<string>;
}

export class ExtraContextRing {
  private kept: Kept[] = [];
  /** Bumped on every change (a chunk seen again changes nothing: the prompt's KV stays valid). */
  version = 0;

  constructor(private readonly options: ExtraContextOptions = DEFAULT_EXTRA_CONTEXT) {}

  get chunks(): readonly ContextChunk[] {
    return this.kept.map(({ path, text }) => ({ path, text }));
  }

  /**
   * Adds the lines of `text` around line `centerLine` (a chunk of at most chunkLines lines); returns
   * false when it added nothing (blank, or the same as a kept chunk).
   */
  add(path: string, text: string, centerLine = 0): boolean {
    const all = text.split('\n');
    const half = Math.floor(this.options.chunkLines / 2);
    const start = Math.max(0, Math.min(centerLine - half, all.length - this.options.chunkLines));
    const chunkText = all.slice(start, start + this.options.chunkLines).join('\n');
    if (chunkText.length > (this.options.maxChunkChars ?? MAX_CHUNK_CHARS)) return false;
    const lines = lineSet(chunkText);
    if (lines.size === 0) return false;
    // The same chunk again (the user looks at the same code): nothing changes, the KV stays valid.
    if (this.kept.some((k) => k.path === path && k.text === chunkText)) return false;
    const similar = this.kept.findIndex((k) => jaccard(k.lines, lines) > this.options.similarity);
    if (similar >= 0) this.kept.splice(similar, 1);
    this.kept.push({ path, text: chunkText, lines });
    while (this.kept.length > this.options.maxChunks) this.kept.shift();
    this.version++;
    return true;
  }

  /** Forgets a file's chunks (closed, deleted or excluded). */
  removeFile(path: string): void {
    const before = this.kept.length;
    this.kept = this.kept.filter((k) => k.path !== path);
    if (this.kept.length !== before) this.version++;
  }

  clear(): void {
    if (this.kept.length) this.version++;
    this.kept = [];
  }
}

/** Non-blank lines, trimmed: indentation and blank lines do not make two chunks different. */
function lineSet(text: string): Set<string> {
  const set = new Set<string>();
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t) set.add(t);
  }
  return set;
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let both = 0;
  for (const x of a) if (b.has(x)) both++;
  return both / (a.size + b.size - both);
}
