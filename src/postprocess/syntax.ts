/* The little language knowledge the filters share: brackets, block openers, continuation keywords. */

const OPENERS = new Set(['(', '[', '{']);
const CLOSERS = new Set([')', ']', '}']);
const BLOCK_OPENING_ENDS = new Set(['(', '[', '{', ':']);
/** Lines that end one branch and open the next at the same depth (Python has no `}` to carry them). */
const CONTINUATION_KEYWORDS = ['else', 'elif', 'except', 'finally', 'catch'];
const COMMENT_STARTS = ['//', '#', '/*', '*', '--'];

export function isOpener(char: string | undefined): boolean {
  return char !== undefined && OPENERS.has(char);
}

export function isCloser(char: string | undefined): boolean {
  return char !== undefined && CLOSERS.has(char);
}

export function isWordChar(char: string | undefined): boolean {
  return char !== undefined && /[\p{L}\p{N}_$]/u.test(char);
}

/** Whether the first non-whitespace character closes a bracket: `}`, `});`, `) {`. */
export function startsWithCloser(text: string): boolean {
  return isCloser(text.trimStart()[0]);
}

/** Whether the line ends by opening a block or bracket (`{`, `(`, `[`, Python's `:`); comments never do. */
export function opensBlock(line: string): boolean {
  const code = line.trim();
  if (COMMENT_STARTS.some((start) => code.startsWith(start))) return false;
  return BLOCK_OPENING_ENDS.has(code[code.length - 1]!);
}

/**
 * Whether a line (leading whitespace already removed) starts with a continuation keyword:
 * 'yes'/'no', or 'unknown' while the first word may still grow (streaming).
 */
export function startsWithContinuationKeyword(content: string, lineComplete: boolean): 'yes' | 'no' | 'unknown' {
  const word = /^[\p{L}\p{N}_$]*/u.exec(content)![0];
  const wordComplete = lineComplete || word.length < content.length;
  if (wordComplete) return CONTINUATION_KEYWORDS.includes(word) ? 'yes' : 'no';
  return CONTINUATION_KEYWORDS.some((keyword) => keyword.startsWith(word)) ? 'unknown' : 'no';
}
