/*
 * Content-defined chunking of document text. A chunk ends where a rule fires that looks only at
 * the chunk's own text up to that point, so the chunking of a text is canonical (it depends on the
 * text, not on its edit history) and after an edit the boundaries fall back in step with the old
 * ones within a chunk or two: only those chunks need tokenizing again.
 */

/** A chunk ends after a line whose hash is divisible by this, once it has MIN_LINES lines (~32 lines on average). */
const LINE_BOUNDARY_DIVISOR = 16;
const MIN_LINES = 16;
const MAX_LINES = 128;
/** Lines are long: end the chunk at the next newline past this size. */
const SOFT_MAX_CHARS = 4096;
/** A chunk never grows past this (minified code, data on one line): cut inside the line. */
export const HARD_MAX_CHARS = 8192;
/** Inside a line this long, cut where the hash of the last few characters is divisible by LONG_LINE_DIVISOR. */
const LONG_LINE_CUT_MIN_CHARS = 512;
const LONG_LINE_DIVISOR = 256;
const LONG_LINE_WINDOW = 8;

const NEWLINE = 10;
const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function windowHash(text: string, last: number): number {
  let hash = FNV_OFFSET;
  for (let i = last - LONG_LINE_WINDOW + 1; i <= last; i++) hash = Math.imul(hash ^ text.charCodeAt(i), FNV_PRIME);
  return (hash ^ (hash >>> 13)) >>> 0;
}

/** End (exclusive) of the chunk that starts at `start`; `text.length` if no boundary rule fires. */
export function nextChunkEnd(text: string, start: number): number {
  let lines = 0;
  let lineHash = FNV_OFFSET;
  let lineChars = 0;
  for (let p = start; p < text.length; p++) {
    const code = text.charCodeAt(p);
    const chunkChars = p + 1 - start;
    if (code === NEWLINE) {
      lines++;
      const quietLine = (lineHash >>> 0) % LINE_BOUNDARY_DIVISOR === 0;
      if (lines >= MAX_LINES || chunkChars >= SOFT_MAX_CHARS || (lines >= MIN_LINES && quietLine)) return p + 1;
      lineHash = FNV_OFFSET;
      lineChars = 0;
      continue;
    }
    lineHash = Math.imul(lineHash ^ code, FNV_PRIME);
    lineChars++;
    // Never cut between the halves of a surrogate pair.
    if (isHighSurrogate(code)) continue;
    if (chunkChars >= HARD_MAX_CHARS) return p + 1;
    if (lineChars >= LONG_LINE_CUT_MIN_CHARS && windowHash(text, p) % LONG_LINE_DIVISOR === 0) return p + 1;
  }
  return text.length;
}

/** How much text past a chunk's start nextChunkEnd may need to see before its answer is final. */
export const CHUNK_LOOKAHEAD_CHARS = HARD_MAX_CHARS + 2;

export function splitIntoChunks(text: string): string[] {
  const chunks: string[] = [];
  for (let start = 0; start < text.length; ) {
    const end = nextChunkEnd(text, start);
    chunks.push(text.slice(start, end));
    start = end;
  }
  return chunks;
}
