// Which next-edit format a model speaks, from what its GGUF says about itself (general.name,
// general.basename) or its file name; a forced setting wins. A model none of these name has no next-edit
// format: the caller shows nothing and logs 'noFormat' (a plain code model asked for a window rewrite
// would produce garbage edits).
import { nextEditFormatOf } from '../modelFormat';
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

/** The format for a model; `forced` (a setting) wins over the name; null when nothing names one (modelFormat.ts decides). */
export function chooseFormat(model: ModelIdentity, forced?: NextEditFormatId | 'auto'): NextEditFormat | null {
  const id = nextEditFormatOf({ name: model.name ?? undefined, basename: model.basename ?? undefined, file: model.fileName ?? undefined }, forced ?? 'auto');
  return id ? NEXT_EDIT_FORMATS[id] : null;
}
