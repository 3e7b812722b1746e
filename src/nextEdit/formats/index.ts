// Which next-edit format a model speaks, from what its GGUF says about itself (general.name,
// general.basename) or its file name; a forced setting wins. A model none of these name has no next-edit
// format: the caller shows nothing and logs 'noFormat' (a plain code model asked for a window rewrite
// would produce garbage edits).
import type { NextEditFormat, NextEditFormatId } from '../types';
import { sweepFormat } from './sweep';
import { zetaFormat } from './zeta';

export const NEXT_EDIT_FORMATS: Record<NextEditFormatId, NextEditFormat> = { sweep: sweepFormat, zeta: zetaFormat };

export interface ModelIdentity {
  /** GGUF general.name, e.g. "Sweep Next Edit 1.5B". */
  name?: string | null;
  /** GGUF general.basename, e.g. "sweep-next-edit". */
  basename?: string | null;
  /** The model file's name or path, e.g. "sweep-next-edit-1.5b.q8_0.v2.gguf". */
  fileName?: string | null;
}

/** Names by which the published models call themselves, checked in this order. */
const NAME_PATTERNS: readonly (readonly [RegExp, NextEditFormatId])[] = [
  // sweepai/sweep-next-edit-{0.5B,1.5B}: "sweep-next-edit", "Sweep Next Edit", "sweep_next_edit".
  [/sweep[\s_-]*next[\s_-]*edit/i, 'sweep'],
  // zed-industries/zeta and its quantisations: "zeta", "Zeta", "zeta-Q8_0"; not words that merely contain it.
  [/(?:^|[^a-z])zeta(?:[^a-z]|$)/i, 'zeta'],
];

/** The format for a model; `forced` (a setting) wins over the name; null when nothing names one. */
export function chooseFormat(model: ModelIdentity, forced?: NextEditFormatId | 'auto'): NextEditFormat | null {
  if (forced && forced !== 'auto') return NEXT_EDIT_FORMATS[forced];
  for (const text of [model.name, model.basename, model.fileName ? baseName(model.fileName) : null]) {
    if (!text) continue;
    for (const [pattern, id] of NAME_PATTERNS) if (pattern.test(text)) return NEXT_EDIT_FORMATS[id];
  }
  return null;
}

function baseName(file: string): string {
  return file.split(/[\\/]/).pop() ?? file;
}
