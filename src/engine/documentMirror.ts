// Whether the worker gets a copy of an open document for its n-gram index (vscode/documentSync.ts
// applies it; bench/bigFile.ts and test/integration/bigFile.test.ts drive the same decision without an
// editor). A mirrored document costs its whole text once over IPC and its whole text tokenized in
// the worker (CPU time that competes with completions, and with everything else on a busy
// machine); what the index gives back is prompt-lookup proposals from it. Minified code gives few
// of those (one-letter names, no repeated lines) and is often huge: it is not mirrored. The prompt
// window itself never needs the mirror (prompt/documentWindow.ts reads only the text around the
// cursor), so such a file still gets completions.

/** Largest document mirrored into the n-gram index; bigger ones are skipped (bounded work). */
export const MAX_MIRRORED_CHARS = 2_000_000;

/**
 * Minified or generated text: lines this long on average (hand-written code averages 30-50
 * characters; minified bundles hundreds, or one line for the whole file)...
 */
export const MINIFIED_MEAN_LINE_CHARS = 200;
/** ...or any one line this long (a bundle with a few short header lines and one huge line). */
export const MINIFIED_LINE_CHARS = 20_000;
/** Small files are mirrored whatever their lines look like: cheap, and a long line there is data the user edits. */
const MINIFIED_MIN_CHARS = 50_000;

export type MirrorDecision = { mirror: true } | { mirror: false; reason: string };

/** Whether `text` reads like minified or generated code (see MINIFIED_*): one pass over its newlines. */
export function looksMinified(text: string): boolean {
  if (text.length < MINIFIED_MIN_CHARS) return false;
  let lines = 1;
  let longest = 0;
  let start = 0;
  for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
    longest = Math.max(longest, nl - start);
    lines++;
    start = nl + 1;
  }
  longest = Math.max(longest, text.length - start);
  return longest >= MINIFIED_LINE_CHARS || text.length / lines >= MINIFIED_MEAN_LINE_CHARS;
}

/**
 * `length` first: a document too large is decided without reading its text (a 20 MB file's
 * getText() in the extension host is a 40 MB string for nothing).
 */
export function mirrorDecision(length: number, text: () => string): MirrorDecision {
  if (length > MAX_MIRRORED_CHARS) return { mirror: false, reason: `larger than ${MAX_MIRRORED_CHARS} characters` };
  const content = text();
  if (content.includes('\u0000')) return { mirror: false, reason: 'binary (NUL characters)' };
  if (looksMinified(content)) return { mirror: false, reason: 'minified (very long lines)' };
  return { mirror: true };
}
