// Which prompt layout a next-edit model was trained on, from what its GGUF says of itself
// (general.name, general.basename) and its file name; a forced setting (draftline.nextEdit.format)
// wins. Pure: the caller reads the metadata (src/gguf/ggufReader.ts, or node-llama-cpp's
// model.fileInfo.metadata in the worker). The layouts themselves are in src/nextEdit/formats/.
import * as path from 'node:path';
import type { NextEditFormatId } from './types';

/** What a model says of itself: GGUF `general.name`, `general.basename`, and its file's path or name. */
export interface ModelIdentity {
  name?: string;
  basename?: string;
  file?: string;
}

/** The layout a name says, or null. Exported for the table test. */
export function formatFromName(text: string): NextEditFormatId | null {
  const t = text.toLowerCase();
  // Sweep Next-Edit (sweepai/sweep-next-edit-1.5B: sweep-next-edit-1.5b.q8_0.v2.gguf, its 0.5B and
  // v2 7B): its `<|file_sep|>` original / current / updated layout.
  if (/sweep[\s._-]*next[\s._-]*edit/.test(t)) return 'sweep';
  // Zeta 2 (zed-industries/zeta-2, zeta-2.1) is trained on another layout (fill-in-the-middle with
  // merge markers), not Zeta's: no format of ours fits it.
  if (/(?:^|[^a-z])zeta[\s._-]*2(?:$|[^0-9])/.test(t)) return null;
  // Zeta (zed-industries/zeta, its GGUFs: zed-industries_zeta-Q4_K_M.gguf, zeta-Q8_0.gguf, zeta.Q5_K_M.gguf).
  // Continue's Instinct is not Zeta's layout (a chat template with a system prompt and `### Context:`):
  // no format of ours fits it, so it gets none rather than a prompt it was not trained on.
  if (/(?:^|[^a-z])zeta(?:$|[^a-z0-9])/.test(t)) return 'zeta';
  return null;
}

/**
 * The layout to prompt a next-edit model with: the forced one when the setting names one, else the
 * first of general.name, general.basename and the file name that names a known next-edit model;
 * null when none does (a model with no next-edit layout: the caller says so and shows nothing).
 * Metadata comes before the file name: a file can be renamed, and the metadata is what its
 * publisher wrote.
 */
export function nextEditFormatOf(model: ModelIdentity, forced: NextEditFormatId | 'auto' = 'auto'): NextEditFormatId | null {
  if (forced !== 'auto') return forced;
  const file = model.file ? path.basename(model.file.replace(/\\/g, '/')) : undefined;
  for (const text of [model.name, model.basename, file]) {
    if (!text) continue;
    const format = formatFromName(text);
    // A name that knows the model but no layout of ours (Zeta 2) settles it: null.
    if (format || isKnownWithoutFormat(text)) return format;
  }
  return null;
}

function isKnownWithoutFormat(text: string): boolean {
  const t = text.toLowerCase();
  return /(?:^|[^a-z])zeta[\s._-]*2(?:$|[^0-9])/.test(t) || /(?:^|[^a-z])instinct(?:$|[^a-z])/.test(t);
}

/** The identity fields of a GGUF's key/values (a Map as src/gguf/ggufReader.ts reads it, or a plain record as node-llama-cpp gives it). */
export function identityFromGguf(kv: ReadonlyMap<string, { value: unknown }> | Readonly<Record<string, unknown>>, file?: string): ModelIdentity {
  const get = (key: string): unknown => (kv instanceof Map ? kv.get(key)?.value : (kv as Record<string, unknown>)[key]);
  const text = (v: unknown) => (typeof v === 'string' && v.trim() ? v : undefined);
  return { name: text(get('general.name')), basename: text(get('general.basename')), file };
}
