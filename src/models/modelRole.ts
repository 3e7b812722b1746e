// Whether a model file the user chose (Use a Local File…, Browse, a typed path) can do the job it was
// chosen for, checked at once from its GGUF header, before it is saved in a setting: a completion
// target is any usable GGUF; a draft must speak the target's vocabulary (llama.cpp's rule for
// speculation); a next-edit model must name a prompt layout Draftline knows (modelFormat.ts), or have
// the body and vocabulary of the catalog's next-edit model it stands in for. Without that check a
// plain code model chosen for next edits would load fine and then answer every pause with nothing.
import * as path from 'node:path';
import { readGgufMetadata } from '../gguf/ggufReader';
import { checkVocabularyCompatible, type ModelFileInfo, validateGgufMetadata } from '../gguf/modelFileCheck';
import { identityFromGguf, nextEditFormatOf } from '../nextEdit/modelFormat';
import type { NextEditFormatId } from '../nextEdit/types';
import { NEXT_EDIT_CATALOG, type ModelShape, type NextEditCatalogModel } from './catalog';

export type ModelRole = 'target' | 'draft' | 'nextEdit';

export interface RoleCheckOptions {
  /** For a draft: the completion target it drafts for (null: not known yet, nothing to compare). */
  target?: ModelFileInfo | null;
  /** For a next-edit model: draftline.nextEdit.format ('auto': the model must say which). */
  format?: NextEditFormatId | 'auto';
  /** For a next-edit model: the catalog entry the file is chosen in place of (Use a Local File… after its download failed). */
  standsFor?: NextEditCatalogModel;
}

/**
 * The file can do the job (`format`: the next-edit layout it will be prompted with), or why not, in a
 * sentence (`unreadable`: it is no usable GGUF at all, whatever the role).
 */
export type RoleCheck = { ok: true; info: ModelFileInfo; format?: NextEditFormatId } | { ok: false; problem: string; unreadable?: boolean };

const ROLE_NAMES: Record<ModelRole, string> = { target: 'completion model', draft: 'draft model', nextEdit: 'next-edit model' };

/** The GGUF's general.basename (the next-edit layout may be named there only), when it has one. */
export interface RoleIdentity {
  basename?: string;
}

/** Reads `file`'s GGUF header (bounded) and checks it for `role`. */
export async function checkModelForRole(file: string, role: ModelRole, options: RoleCheckOptions = {}): Promise<RoleCheck> {
  let info: ModelFileInfo;
  let identity: RoleIdentity;
  try {
    const meta = await readGgufMetadata(file);
    info = validateGgufMetadata(meta);
    identity = { basename: identityFromGguf(meta.kv).basename };
  } catch (error) {
    return { ok: false, problem: `${path.basename(file)} cannot be used as the ${ROLE_NAMES[role]}: ${(error as Error).message}`, unreadable: true };
  }
  return checkInfoForRole(info, role, options, identity);
}

/** The checks of checkModelForRole on a header already read. */
export function checkInfoForRole(info: ModelFileInfo, role: ModelRole, options: RoleCheckOptions = {}, identity: RoleIdentity = {}): RoleCheck {
  const base = path.basename(info.path);
  if (role === 'draft' && options.target) {
    const check = checkVocabularyCompatible(options.target, info);
    if (!check.compatible) {
      return {
        ok: false,
        problem: `${base} cannot draft for ${options.target.name ?? path.basename(options.target.path)}: their vocabularies differ (${check.reason}), and a draft must share the target's`,
      };
    }
  }
  if (role !== 'nextEdit') return { ok: true, info };
  const format = nextEditFormatOf({ name: info.name ?? undefined, basename: identity.basename, file: info.path }, options.format ?? 'auto');
  if (format) return { ok: true, info, format };
  const entry = options.standsFor;
  if (entry && sameShape(info, entry.gguf)) return { ok: true, info, format: entry.format };
  const said = info.name ? `its name "${info.name}"` : 'its file name';
  const shape = entry ? ` and it is not a ${describeShape(entry.gguf)} model as ${entry.name} is (it is a ${describeShape(shapeOf(info))} model)` : '';
  return {
    ok: false,
    problem:
      `${base} is not a next-edit model: ${said} names no next-edit prompt layout Draftline knows (${knownModels()})${shape}, so it would give no next edits. ` +
      'Choose a next-edit model, or set draftline.nextEdit.format if this file is one under another name.',
  };
}

/** A file's shape, as the catalog names a model's. */
export function shapeOf(info: ModelFileInfo): ModelShape {
  return { architecture: info.architecture, tokenizer: info.tokenizerModel, tokenizerPre: info.tokenizerPre ?? '', vocabSize: info.vocabSize };
}

function sameShape(info: ModelFileInfo, shape: ModelShape): boolean {
  const own = shapeOf(info);
  return own.architecture === shape.architecture && own.tokenizer === shape.tokenizer && own.tokenizerPre === shape.tokenizerPre && own.vocabSize === shape.vocabSize;
}

function describeShape(shape: ModelShape): string {
  return `${shape.architecture} (${shape.tokenizerPre || shape.tokenizer} vocabulary of ${shape.vocabSize.toLocaleString('en-US')} tokens)`;
}

function knownModels(): string {
  return Object.values(NEXT_EDIT_CATALOG)
    .map((m) => m.name.replace(/ \(.*\)$/, ''))
    .join(', ');
}
