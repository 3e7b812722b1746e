import { CHUNK_LOOKAHEAD_CHARS, nextChunkEnd, splitIntoChunks } from './chunkBoundaries';
import type { TokenRun } from './tokenRun';

/** One edit in VS Code contentChanges style: offsets into the text as it was before this edit. */
export type TextEdit = { offset: number; deleteCount: number; text: string };

export type DocumentChunk = { text: string; run: TokenRun };

/** Turns chunk text into an indexed run (tokenizes it: the expensive part). */
export type ChunkBuilder = (text: string) => TokenRun;

/**
 * Past the edited text, re-chunking stops after this many chunks even if the boundaries have not
 * fallen back in step (long runs of identical lines): the chunking then differs from a fresh one,
 * which costs nothing but a few differently tokenized boundaries.
 */
const MAX_RECHUNKED_PAST_EDIT = 4;

/** A document as content-defined chunks, each tokenized and indexed on its own. */
export class ChunkedDocument {
  private chunks: DocumentChunk[];
  private textLength: number;
  private cachedRuns: TokenRun[] | undefined;

  constructor(
    text: string,
    private readonly buildChunk: ChunkBuilder,
    prebuilt?: DocumentChunk[],
  ) {
    this.chunks = prebuilt ?? splitIntoChunks(text).map((chunkText) => ({ text: chunkText, run: buildChunk(chunkText) }));
    this.textLength = text.length;
  }

  /**
   * Builds a document's chunks a few at a time: each call of the returned step builds chunks for at
   * least `budgetMs` (one at the least) and returns the document once the whole text is done, so a
   * caller can yield to other work between steps. Chunk boundaries are the same as the constructor's.
   */
  static inSteps(text: string, buildChunk: ChunkBuilder, now: () => number = () => performance.now()): (budgetMs: number) => ChunkedDocument | null {
    const chunks: DocumentChunk[] = [];
    let start = 0;
    return (budgetMs) => {
      const until = now() + budgetMs;
      do {
        if (start >= text.length) return new ChunkedDocument(text, buildChunk, chunks);
        const end = nextChunkEnd(text, start);
        const chunkText = text.slice(start, end);
        chunks.push({ text: chunkText, run: buildChunk(chunkText) });
        start = end;
      } while (now() < until);
      return start >= text.length ? new ChunkedDocument(text, buildChunk, chunks) : null;
    };
  }

  get length(): number {
    return this.textLength;
  }

  get chunkList(): readonly DocumentChunk[] {
    return this.chunks;
  }

  /** The chunks' token runs in order, kept between edits because every lookup walks them. */
  runs(): readonly TokenRun[] {
    return (this.cachedRuns ??= this.chunks.map((chunk) => chunk.run));
  }

  text(): string {
    return this.chunks.map((chunk) => chunk.text).join('');
  }

  /** Applies one edit, re-tokenizing only the chunks it touches; false if it does not fit the text. */
  applyEdit({ offset, deleteCount, text }: TextEdit): boolean {
    if (!(offset >= 0 && deleteCount >= 0 && offset + deleteCount <= this.textLength)) return false;
    const old = this.chunks;
    const { first, firstStart, last } = this.affectedChunks(offset, deleteCount);
    const touched = old
      .slice(first, last + 1)
      .map((chunk) => chunk.text)
      .join('');
    const local = offset - firstStart;
    let work = touched.slice(0, local) + text + touched.slice(local + deleteCount);

    // Old chunk boundaries past the edit, as offsets in `work`: landing on one means in step again.
    const oldChunkAt = new Map<number, number>();
    let nextOld = last + 1;
    if (nextOld < old.length) oldChunkAt.set(work.length, nextOld);

    const fresh: DocumentChunk[] = [];
    const editEnd = local + text.length;
    let chunksPastEdit = 0;
    let pos = 0;
    let resumeAt = old.length;
    while (true) {
      while (nextOld < old.length && work.length - pos <= CHUNK_LOOKAHEAD_CHARS) {
        work += old[nextOld]!.text;
        nextOld++;
        if (nextOld < old.length) oldChunkAt.set(work.length, nextOld);
      }
      if (pos >= work.length) break;
      let end = nextChunkEnd(work, pos);
      if (pos >= editEnd && ++chunksPastEdit > MAX_RECHUNKED_PAST_EDIT) end = this.nextOldBoundary(oldChunkAt, pos) ?? end;
      const chunkText = work.slice(pos, end);
      fresh.push({ text: chunkText, run: this.buildChunk(chunkText) });
      pos = end;
      const inStep = oldChunkAt.get(pos);
      if (inStep !== undefined) {
        resumeAt = inStep;
        break;
      }
    }
    this.chunks = [...old.slice(0, first), ...fresh, ...old.slice(resumeAt)];
    this.cachedRuns = undefined;
    this.textLength += text.length - deleteCount;
    return true;
  }

  /** Chunks first..last hold the edited range; `last` is first - 1 for an empty document. */
  private affectedChunks(offset: number, deleteCount: number): { first: number; firstStart: number; last: number } {
    const chunks = this.chunks;
    if (chunks.length === 0) return { first: 0, firstStart: 0, last: -1 };
    let first = chunks.length - 1;
    let firstStart = this.textLength - chunks[first]!.text.length;
    for (let i = 0, start = 0; i < chunks.length; start += chunks[i]!.text.length, i++) {
      if (offset < start + chunks[i]!.text.length) {
        first = i;
        firstStart = start;
        break;
      }
    }
    let last = first;
    let lastEnd = firstStart + chunks[first]!.text.length;
    while (offset + deleteCount > lastEnd && last + 1 < chunks.length) {
      last++;
      lastEnd += chunks[last]!.text.length;
    }
    return { first, firstStart, last };
  }

  /** The first old boundary after `after`, if it is no farther than a chunk can be long. */
  private nextOldBoundary(oldChunkAt: Map<number, number>, after: number): number | undefined {
    let nearest: number | undefined;
    for (const boundary of oldChunkAt.keys()) {
      if (boundary > after && boundary - after <= CHUNK_LOOKAHEAD_CHARS && (nearest === undefined || boundary < nearest)) {
        nearest = boundary;
      }
    }
    return nearest;
  }
}
