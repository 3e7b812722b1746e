// What the editor says about a load: the log line for the first models ready, the warnings a
// successful load still carries, and the error notification of a failed one with the actions
// that can fix it.
import * as vscode from 'vscode';
import type { QuarantinedModelError } from '../backend/modelQuarantine';
import { describeLoadTimings } from '../stats/loadTimings';
import type { ModelFilesProvenance } from '../stats/statsReport';
import { LOCAL_FILE } from '../models/downloadIndex';
import { modelNameOf } from '../models/embedded';
import type { ModelFileNotes } from '../stats/statusText';
import { nameWithProvenance, provenanceOf } from './localModelFile';
import type { LoadedModelsInfo } from '../shared/backendInfo';
import type { BackendKind } from '../shared/settings';

/** The log line for the first models ready, `ms` after activation, and how they came to be. */
export function readyMessage(ms: number, local: LoadedModelsInfo | undefined): string {
  const t = local?.loadTimings;
  const others = local?.sharedWith;
  const how =
    others !== undefined
      ? ` (the models were already loaded in the shared worker, ${others === 0 ? 'kept from a window that closed' : `for ${others} other window${others === 1 ? '' : 's'}`})`
      : t
        ? ` (worker up at ${t.workerAgeMs} ms of its life, then ${describeLoadTimings(t)})`
        : '';
  return `ready ${ms} ms after activation${how}`;
}

/** A load that serves, but not as asked: no draft, the CPU instead of the GPU, no fill-in-the-middle. */
export function showLoadWarnings(local: LoadedModelsInfo): void {
  if (local.draftProblem) void vscode.window.showWarningMessage(`Draftline: ${local.draftProblem}`);
  if (local.gpuFallback) void vscode.window.showWarningMessage(`Draftline runs on the CPU: ${local.gpuFallback}.`);
  if (local.promptFormat === 'prefix-only') {
    void vscode.window.showWarningMessage(`Draftline: ${local.target.name} has no fill-in-the-middle tokens; completions see only the text before the cursor.`);
  }
}

/** What a failure notification's actions do that only the controller can. */
export interface LoadFailureActions {
  /** Load the quarantined `files` after all. */
  loadAnyway(files: string[]): void;
  showLog(): void;
}

/** The notification of a failed load (`error`, whose `code` may say more), with the actions that can fix it. */
export function showLoadFailure(error: Error & { code?: string }, backendKind: BackendKind, actions: LoadFailureActions): void {
  const message = error.message;
  const code = error.code;
  if (code === 'quarantined') {
    // The user may know better (a driver updated, more memory free): one click loads it again.
    const files = (error as QuarantinedModelError).entries.flatMap((e) => Object.keys(e.files));
    void vscode.window.showErrorMessage(`Draftline: ${message}`, 'Load It Anyway', 'Select Target Model', 'Show Log').then((choice) => {
      if (choice === 'Load It Anyway') actions.loadAnyway(files);
      if (choice === 'Select Target Model') void vscode.commands.executeCommand('draftline.selectTargetModel');
      if (choice === 'Show Log') actions.showLog();
    });
  } else if (backendKind === 'local') {
    void vscode.window.showErrorMessage(`Draftline: cannot load the model. ${message}`, 'Select Target Model', 'Show Log').then((choice) => {
      if (choice === 'Select Target Model') void vscode.commands.executeCommand('draftline.selectTargetModel');
      if (choice === 'Show Log') actions.showLog();
    });
  } else {
    const choices = code === 'unauthorized' ? ['Set Server API Key', 'Show Log'] : ['Select Backend', 'Show Log'];
    void vscode.window.showErrorMessage(`Draftline: cannot use the ${backendKind} server. ${message}`, ...choices).then((choice) => {
      if (choice === 'Set Server API Key') void vscode.commands.executeCommand('draftline.setServerApiKey');
      if (choice === 'Select Backend') void vscode.commands.executeCommand('draftline.selectBackend');
      if (choice === 'Show Log') actions.showLog();
    });
  }
}

/** Whether the loaded model files were verified (downloads) or not (files from disk), for Show Stats and the log. */
export function modelFilesProvenance(context: vscode.ExtensionContext, local: LoadedModelsInfo | undefined, nextEditFile?: string): ModelFilesProvenance | null {
  if (!local) return null;
  return {
    target: provenanceOf(context, local.target.path).text,
    draft: local.draft ? provenanceOf(context, local.draft.path).text : null,
    nextEdit: nextEditFile ? provenanceOf(context, nextEditFile).text : null,
  };
}

let notesFor: { key: string; notes: ModelFileNotes } | null = null;

/**
 * "local file, not verified" after the name of each model that is one, and the next-edit model's name
 * once resolved, for the status bar tooltip (asked after every completion: read again only when
 * the files change).
 */
export function modelFileNotes(context: vscode.ExtensionContext, local: LoadedModelsInfo | undefined, nextEditFile?: string): ModelFileNotes {
  const key = JSON.stringify([local?.target.path, local?.draft?.path, nextEditFile]);
  if (notesFor?.key === key) return notesFor.notes;
  const note = (file?: string) => (file && provenanceOf(context, file).short === LOCAL_FILE ? LOCAL_FILE : undefined);
  const notes: ModelFileNotes = {
    ...(note(local?.target.path) ? { target: LOCAL_FILE } : {}),
    ...(note(local?.draft?.path) ? { draft: LOCAL_FILE } : {}),
    ...(nextEditFile ? { nextEdit: nameWithProvenance(context, nextEditFile, modelNameOf(nextEditFile)) } : {}),
  };
  notesFor = { key, notes };
  return notes;
}
