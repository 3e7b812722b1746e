/** The part of a document a completion looks at. Work stays bounded however large the file is. */
export interface TextSource {
  readonly length: number;
  slice(start: number, end: number): string;
  /** The 0-based line an offset is on, where the source knows it cheaply (an editor's document does). */
  lineAt?(offset: number): number;
}

export interface WindowLimits {
  maxPrefixChars: number;
  maxSuffixChars: number;
}

export interface DocumentWindow {
  prefix: string;
  suffix: string;
  /** Document offset where `prefix` starts. */
  prefixStart: number;
  /** The document line `prefix` starts on, when it starts at a line's start and the source knows its number. */
  prefixLine?: number;
}

/** The window start moves in steps this big, so typing keeps it (and the model's KV cache) in place. */
export const WINDOW_START_STEP = 512;

export function documentWindow(doc: TextSource, offset: number, limits: WindowLimits): DocumentWindow {
  const cursor = Math.max(0, Math.min(offset, doc.length));
  let start = 0;
  if (cursor > limits.maxPrefixChars) {
    start = Math.ceil((cursor - limits.maxPrefixChars) / WINDOW_START_STEP) * WINDOW_START_STEP;
    // Start on a line boundary when there is one close by, so the model sees whole lines.
    const head = doc.slice(start, Math.min(cursor, start + 256));
    const newline = head.indexOf('\n');
    if (newline >= 0) start += newline + 1;
  }
  let suffix = doc.slice(cursor, Math.min(doc.length, cursor + limits.maxSuffixChars));
  if (cursor + limits.maxSuffixChars < doc.length) {
    const lastNewline = suffix.lastIndexOf('\n');
    if (lastNewline > 0) suffix = suffix.slice(0, lastNewline + 1);
  }
  const window: DocumentWindow = { prefix: doc.slice(start, cursor), suffix, prefixStart: start };
  if (start === 0) window.prefixLine = 0;
  else if (doc.lineAt && doc.slice(start - 1, start) === '\n') window.prefixLine = doc.lineAt(start);
  return window;
}

/** Text that is not worth completing in: NUL bytes mean a binary file. */
export function looksBinary(text: string): boolean {
  return text.includes('\u0000');
}
