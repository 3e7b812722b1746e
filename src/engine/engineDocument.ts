import type { TextSource } from '../prompt/documentWindow';
import type { ExtraContext } from '../shared/completion';

/** A document and its cursor as the engine sees them: text by slices, so a huge file is never copied whole. */
export interface EngineDocument extends TextSource {
  uri: string;
  languageId: string;
  /** Cursor offset in UTF-16 code units. */
  offset: number;
  tabSize?: number;
  insertSpaces?: boolean;
  /** The user's other code for the prompt (the editor's extra-context ring), asked only for a model request. */
  extraContext?: () => ExtraContext | undefined;
}

/**
 * The document as it will be once `text` is inserted at the cursor (replacing `replaceSuffixChars`
 * characters after it), with the cursor after the insertion: what the editor's next request sees.
 */
export function documentAfterInsertion(doc: EngineDocument, text: string, replaceSuffixChars = 0): EngineDocument {
  const at = doc.offset;
  const removed = Math.max(0, Math.min(replaceSuffixChars, doc.length - at));
  const tailStart = at + removed;
  const length = doc.length - removed + text.length;
  const end = at + text.length;
  const slice = (start: number, stop: number): string => {
    const s = Math.max(0, start);
    const e = Math.min(length, stop);
    if (e <= s) return '';
    let out = '';
    if (s < at) out += doc.slice(s, Math.min(e, at));
    if (e > at && s < end) out += text.slice(Math.max(s, at) - at, Math.min(e, end) - at);
    if (e > end) out += doc.slice(tailStart + Math.max(s, end) - end, tailStart + e - end);
    return out;
  };
  const newlines = (s: string) => s.split('\n').length - 1;
  const lineAt = doc.lineAt;
  return {
    ...doc,
    offset: end,
    length,
    slice,
    lineAt:
      lineAt &&
      ((offset: number) => {
        if (offset <= at) return lineAt(offset);
        if (offset <= end) return lineAt(at) + newlines(text.slice(0, offset - at));
        return lineAt(at) + newlines(text) + lineAt(tailStart + offset - end) - lineAt(tailStart);
      }),
  };
}
