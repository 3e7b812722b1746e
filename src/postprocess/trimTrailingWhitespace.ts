import { currentLineSuffix, isBlank, type CompletionContext } from './context';

/**
 * Drops trailing whitespace and empty lines; whitespace alone becomes "". When the cursor's line
 * goes on after the cursor, whitespace at the end separates the completion from that text
 * (`await |value`), and a final line break plus indentation puts it on its own line (`{|}`):
 * both are kept, only empty lines before them go.
 */
export function trimTrailingWhitespace(completion: string, ctx: CompletionContext): string {
  if (isBlank(completion)) return '';
  if (isBlank(currentLineSuffix(ctx))) return completion.trimEnd();
  const lastLineStart = completion.lastIndexOf('\n') + 1;
  const lastLine = completion.slice(lastLineStart);
  if (lastLineStart === 0 || !isBlank(lastLine)) return completion;
  return `${completion.slice(0, lastLineStart - 1).trimEnd()}\n${lastLine}`;
}
