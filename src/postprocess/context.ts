/** What a filter knows about where the completion goes. */
export type CompletionContext = {
  /** Document text before the cursor (may be a window ending at the cursor). */
  prefix: string;
  /** Text after the cursor (may be a window). */
  suffix: string;
  languageId?: string;
  tabSize?: number;
  insertSpaces?: boolean;
};

export const DEFAULT_TAB_SIZE = 4;

/** Text between the start of the cursor's line and the cursor. */
export function currentLinePrefix(ctx: CompletionContext): string {
  return ctx.prefix.slice(ctx.prefix.lastIndexOf('\n') + 1);
}

/** Text between the cursor and the end of its line. */
export function currentLineSuffix(ctx: CompletionContext): string {
  const lineEnd = ctx.suffix.indexOf('\n');
  return lineEnd < 0 ? ctx.suffix : ctx.suffix.slice(0, lineEnd);
}

export function isBlank(text: string): boolean {
  return text.trim() === '';
}

/** Columns of leading whitespace, a tab counting as tabSize. */
export function indentationWidth(line: string, tabSize: number = DEFAULT_TAB_SIZE): number {
  let width = 0;
  for (const char of line) {
    if (char === ' ') width += 1;
    else if (char === '\t') width += tabSize;
    else break;
  }
  return width;
}

/** The first non-blank line after the cursor's line, if the suffix has one. */
export function firstNonBlankLineBelowCursor(ctx: CompletionContext): string | undefined {
  const suffix = ctx.suffix;
  let start = suffix.indexOf('\n') + 1;
  while (start > 0 && start <= suffix.length) {
    const end = suffix.indexOf('\n', start);
    const line = suffix.slice(start, end < 0 ? undefined : end);
    if (!isBlank(line)) return line;
    start = end + 1;
  }
  return undefined;
}
