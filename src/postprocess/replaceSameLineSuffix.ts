import { currentLinePrefix, currentLineSuffix, isBlank, type CompletionContext } from './context';
import { isCloser, isOpener } from './syntax';

/** What the editor shows: `text` replaces the cursor position and the next `replaceSuffixChars` characters of its line. */
export type ShownCompletion = { text: string; replaceSuffixChars: number };

const QUOTES = new Set(['"', "'", '`']);

const CLOSER_OF: Record<string, string> = { '(': ')', '[': ']', '{': '}' };

/**
 * What is open at the end of the cursor line's prefix, innermost last: the closers it waits for
 * (`)`, `]`, `}`), and the quote of a string literal still open (always the last, if any).
 */
function openAtCursor(linePrefix: string): { closers: string[]; quote: string | undefined } {
  const closers: string[] = [];
  let quote: string | undefined;
  let escaped = false;
  for (const char of linePrefix) {
    if (quote !== undefined) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === quote) quote = undefined;
    } else if (QUOTES.has(char)) quote = char;
    else if (isOpener(char)) closers.push(CLOSER_OF[char]!);
    else if (isCloser(char) && closers[closers.length - 1] === char) closers.pop();
  }
  return { closers, quote };
}

type Closer = { char: string; offset: number };

/**
 * The closers the rest of the line starts with (spaces between them allowed): `)`, `]`, `}`, and
 * the quote of the string open at the cursor. `offset` is just after each.
 */
function leadingClosers(rest: string, openQuote: string | undefined): Closer[] {
  const closers: Closer[] = [];
  let quote = openQuote;
  for (let i = 0; i < rest.length; i++) {
    const char = rest[i]!;
    if (char === ' ' || char === '\t') continue;
    if (quote !== undefined && char === quote) quote = undefined;
    else if (quote !== undefined || !isCloser(char)) break;
    closers.push({ char, offset: i + 1 });
  }
  return closers;
}

/**
 * Runs the completion over what is open at the cursor: the closers it writes for what the document
 * opened (brackets it closes without having opened them, the quote of the string open at the
 * cursor; `offset` is at each, `mismatched` when a bracket is not the one awaited) and the brackets
 * of the document still open after it, innermost last.
 */
function runCompletion(text: string, open: { closers: string[]; quote: string | undefined }): { written: (Closer & { mismatched: boolean })[]; stillOpen: string[] } {
  const written: (Closer & { mismatched: boolean })[] = [];
  const documentOpen = [...open.closers];
  const own: string[] = [];
  let quote = open.quote;
  let quoteIsDocument = quote !== undefined;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quote !== undefined) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === quote) {
        if (quoteIsDocument) written.push({ char, offset: i, mismatched: false });
        quote = undefined;
      }
    } else if (QUOTES.has(char)) {
      quote = char;
      quoteIsDocument = false;
    } else if (isOpener(char)) own.push(CLOSER_OF[char]!);
    else if (isCloser(char)) {
      if (own.length) own.pop();
      else written.push({ char, offset: i, mismatched: documentOpen.length > 0 && documentOpen.pop() !== char });
    }
  }
  return { written, stillOpen: documentOpen };
}

const stripped = (text: string) => text.replace(/\s+/g, '');

/** Whether the characters of `part` appear in `text` in order. */
function isSubsequence(part: string, text: string): boolean {
  let i = 0;
  for (const char of text) if (i < part.length && char === part[i]) i++;
  return i === part.length;
}

/** How many characters of `text` hold its first `count` non-whitespace characters. */
function spanOfChars(text: string, count: number): number {
  let seen = 0;
  let i = 0;
  while (i < text.length && seen < count) if (!/\s/.test(text[i++]!)) seen++;
  return i;
}

/**
 * The completion goes in at the cursor, but the rest of the cursor's line often holds what the
 * editor auto-closed (`foo(|)`, `"|"`, `{|}`) and the completion writes again: shown as it is, the
 * line would read `min);))`. Matched with a bracket stack, the closers the completion writes for
 * what the document opened pair, in order, with the closers the rest of the line starts with; the
 * paired ones (and a `;` or text after them that the completion also writes) are replaced rather
 * than repeated. When they do not pair (the completion closes what the line does not, or writes
 * something else between closers the line keeps), the completion is cut before its first such
 * closer, at the end of its first line at most: shorter, never broken. A completion inside a string
 * that writes the closer after the string's quote without the quote (`"text);` before `")`) forgot
 * it: cut there too.
 */
export function replaceSameLineSuffix(completion: string, ctx: CompletionContext): ShownCompletion {
  const rest = currentLineSuffix(ctx);
  if (completion === '' || isBlank(rest)) return { text: completion, replaceSuffixChars: 0 };
  const open = openAtCursor(currentLinePrefix(ctx));
  const lineClosers = leadingClosers(rest, open.quote);
  const { written, stillOpen } = runCompletion(completion, open);
  const firstLineEnd = completion.indexOf('\n') < 0 ? completion.length : completion.indexOf('\n');
  const cutBefore = (offset: number): ShownCompletion => ({ text: completion.slice(0, Math.min(offset, firstLineEnd)), replaceSuffixChars: 0 });

  if (written.length === 0) {
    if (open.quote !== undefined && lineClosers[0]?.char === open.quote && lineClosers.length > 1) {
      const asCode = runCompletion(completion, { closers: open.closers, quote: undefined }).written;
      if (asCode.length && asCode[0]!.char === lineClosers[1]!.char) return cutBefore(asCode[0]!.offset);
    }
    return { text: completion, replaceSuffixChars: 0 };
  }
  const mismatch = written.find((closer) => closer.mismatched);
  if (mismatch) return cutBefore(mismatch.offset);
  // The rest of the line still closes what the completion left open: inserted as it is, the line is whole.
  const quoteStillOpen = open.quote !== undefined && written.every((closer) => closer.char !== open.quote);
  const awaited = [...(quoteStillOpen ? [open.quote!] : []), ...[...stillOpen].reverse()];
  const lineStillFits = lineClosers.every((closer, i) => closer.char === awaited[i]);
  if (lineStillFits) return { text: completion, replaceSuffixChars: 0 };

  const paired = Math.min(written.length, lineClosers.length);
  for (let i = 0; i < paired; i++) if (written[i]!.char !== lineClosers[i]!.char) return cutBefore(written[0]!.offset);
  if (paired === 0) return cutBefore(written[0]!.offset);

  const covered = lineClosers[paired - 1]!.offset;
  const tail = stripped(completion.slice(written[paired - 1]!.offset + 1));
  const after = rest.slice(covered);
  const afterChars = stripped(after);
  let replaced: number;
  if (afterChars === '' || tail === '') replaced = covered;
  else if (afterChars.startsWith(tail)) replaced = covered + spanOfChars(after, tail.length);
  else if (tail.startsWith(afterChars)) replaced = covered + spanOfChars(after, afterChars.length);
  else return cutBefore(written[0]!.offset);
  // VS Code draws a replacement as ghost text only when the replaced characters are all in the
  // text, in order (spaces between the line's closers may not be): else shorter, never broken.
  if (!isSubsequence(rest.slice(0, replaced), completion)) return cutBefore(written[0]!.offset);
  return { text: completion, replaceSuffixChars: replaced };
}
