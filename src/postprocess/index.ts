import type { CompletionContext } from './context';
import { DEFAULT_MAX_LINES, limitLines } from './limitLines';
import { limitScopeByIndentation } from './limitScopeByIndentation';
import { removeRepetitiveLines } from './removeRepetitiveLines';
import { replaceSameLineSuffix, type ShownCompletion } from './replaceSameLineSuffix';
import { stopAtRedeclaration } from './stopAtRedeclaration';
import { trimSpaceAtJoins } from './trimSpaceAtJoins';
import { trimSuffixOverlap } from './trimSuffixOverlap';
import { trimTrailingWhitespace } from './trimTrailingWhitespace';

export type PostprocessFilter = (completion: string, ctx: CompletionContext) => string;

/**
 * Order matters: loops go first (they confuse the scope rules), the block's closing line is kept
 * before the suffix overlap decides whether the document already has it, whitespace goes last
 * (the spaces where the completion meets the document after the rest, once its ends are final).
 */
export function defaultFilters(maxLines: number = DEFAULT_MAX_LINES): readonly PostprocessFilter[] {
  return [removeRepetitiveLines, stopAtRedeclaration, limitScopeByIndentation, trimSuffixOverlap, limitLines(maxLines), trimTrailingWhitespace, trimSpaceAtJoins];
}

export const DEFAULT_FILTERS = defaultFilters();

/**
 * Turns a raw completion into the ghost text shown ("" means show nothing): the filters, then how
 * much of the rest of the cursor's line the text replaces (replaceSameLineSuffix).
 */
export function postprocess(completion: string, ctx: CompletionContext, filters: readonly PostprocessFilter[] = DEFAULT_FILTERS): ShownCompletion {
  let text = completion;
  for (const filter of filters) {
    if (text === '') break;
    text = filter(text, ctx);
  }
  return replaceSameLineSuffix(text, ctx);
}

export * from './context';
export { blockEndOffset, limitScopeByIndentation, type BlockEndOptions } from './limitScopeByIndentation';
export { DEFAULT_MAX_LINES, limitLines } from './limitLines';
export { removeRepetitiveLines } from './removeRepetitiveLines';
export { replaceSameLineSuffix, type ShownCompletion } from './replaceSameLineSuffix';
export { stopAtRedeclaration } from './stopAtRedeclaration';
export { trimSpaceAtJoins } from './trimSpaceAtJoins';
export { trimSuffixOverlap } from './trimSuffixOverlap';
export { trimTrailingWhitespace } from './trimTrailingWhitespace';
