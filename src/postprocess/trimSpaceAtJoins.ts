import { currentLinePrefix, currentLineSuffix, isBlank, type CompletionContext } from './context';

/**
 * No double spaces where the completion meets the document: when the text before the cursor ends
 * with a space or tab, the completion's leading spaces go (`total = |` + ` sum(` is not `=  sum(`);
 * when the text after the cursor starts with one, the completion's trailing spaces go (`foo(bar,|
 * baz)` + `qux, ` is not `,  baz`). Only the completion is trimmed, never the document. Indentation
 * is left alone: a cursor line with nothing but whitespace before the cursor, and a last line
 * that is only indentation (it puts the rest of the line on its own line), keep their spaces.
 */
export function trimSpaceAtJoins(completion: string, ctx: CompletionContext): string {
  let text = completion;
  const linePrefix = currentLinePrefix(ctx);
  if (!isBlank(linePrefix) && /[ \t]$/.test(linePrefix)) text = text.replace(/^[ \t]+/, '');
  const lastLine = text.slice(text.lastIndexOf('\n') + 1);
  if (/^[ \t]/.test(currentLineSuffix(ctx)) && !isBlank(lastLine)) text = text.replace(/[ \t]+$/, '');
  return text;
}
