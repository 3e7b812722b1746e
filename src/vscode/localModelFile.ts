// A model file the user chooses from disk (Use a Local File… after a failed download, Browse, a typed
// path): checked at once for the job it is chosen for (src/models/modelRole.ts), refused with what is
// wrong and the offer to choose again, and named a "local file, not verified" wherever Draftline names
// its models.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { inspectModelFile, type ModelFileInfo } from '../gguf/modelFileCheck';
import { nextEditModelByUri } from '../models/catalog';
import { describeProvenance, downloadedPath, isModelUri, LOCAL_FILE } from '../models/downloadIndex';
import { EMBEDDED_PAIRS, type EmbeddedPairName, embeddedPairPaths } from '../models/embedded';
import { checkModelForRole, type ModelRole, type RoleCheck } from '../models/modelRole';
import { readModelSettings, readNextEditSettings } from './settings';

/** Folder where downloaded models live. */
export function modelsDir(context: vscode.ExtensionContext): string {
  return path.join(context.globalStorageUri.fsPath, 'models');
}

/** The button that asks for another file. */
export const CHOOSE_AGAIN = 'Choose Another File';

/** What the role check needs beyond the file: the URI it stands in for, the target chosen with it. */
export interface RoleContext {
  /** The hub URI the file is chosen in place of (Use a Local File…). */
  uri?: string;
  /** For a draft: the target's local file when it is chosen at the same time. */
  targetFile?: string;
}

/** `file` checked for `role` with the settings the check depends on (the target a draft drafts for, the next-edit format). */
export async function checkChosenFile(context: vscode.ExtensionContext, file: string, role: ModelRole, chosenFor: RoleContext = {}): Promise<RoleCheck> {
  if (role === 'draft') return checkModelForRole(file, role, { target: await targetInfo(context, chosenFor.targetFile) });
  if (role === 'nextEdit') return checkModelForRole(file, role, { format: readNextEditSettings().format, standsFor: chosenFor.uri ? nextEditModelByUri(chosenFor.uri) : undefined });
  return checkModelForRole(file, role);
}

/** The completion target's header, for a draft's check: the file chosen with it, else the configured one when it is on disk. */
async function targetInfo(context: vscode.ExtensionContext, chosen?: string): Promise<ModelFileInfo | null> {
  const configured = readModelSettings(context.extensionPath).targetModel;
  const file = chosen ?? (isModelUri(configured) ? downloadedPath(modelsDir(context), configured) : configured);
  return file ? inspectModelFile(file).catch(() => null) : null;
}

/**
 * Asks for a model file until one can do `role`'s job, saying what is wrong with each refused one
 * and offering another try; undefined when the user gives up.
 */
export async function chooseModelFile(
  context: vscode.ExtensionContext,
  role: ModelRole,
  dialog: vscode.OpenDialogOptions,
  chosenFor: RoleContext = {},
  log?: vscode.LogOutputChannel,
): Promise<string | undefined> {
  for (;;) {
    const [picked] = (await vscode.window.showOpenDialog({ canSelectMany: false, ...dialog })) ?? [];
    if (!picked) return undefined;
    const check = await checkChosenFile(context, picked.fsPath, role, chosenFor);
    if (check.ok) return picked.fsPath;
    if (!(await refused(check.problem, log))) return undefined;
  }
}

/** Says why a chosen file was refused (a notification and the log); resolves to whether the user wants to choose again. */
export async function refused(problem: string, log?: vscode.LogOutputChannel): Promise<boolean> {
  log?.warn(`model file refused: ${problem}`);
  return (await vscode.window.showErrorMessage(`Draftline: ${problem}`, CHOOSE_AGAIN)) === CHOOSE_AGAIN;
}

/** Where a model file's bytes come from (downloadIndex.ts describeProvenance), the embedded pairs known. */
export function provenanceOf(context: vscode.ExtensionContext, file: string) {
  const pairs = Object.keys(EMBEDDED_PAIRS) as EmbeddedPairName[];
  const embedded = pairs.flatMap((pair) => Object.values(embeddedPairPaths(context.extensionPath, pair)));
  return describeProvenance(modelsDir(context), file, embedded);
}

/** A model's name with "local file, not verified" after it when it is one (the tooltip's, the picker's way). */
export function nameWithProvenance(context: vscode.ExtensionContext, file: string, name = path.basename(file)): string {
  return provenanceOf(context, file).short === LOCAL_FILE ? `${name} (${LOCAL_FILE})` : name;
}
