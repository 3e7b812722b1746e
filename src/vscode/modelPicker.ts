import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { checkVocabularyCompatible, inspectModelFile } from '../gguf/modelFileCheck';
import { CATALOG, type CatalogModel, NEXT_EDIT_CATALOG } from '../models/catalog';
import { describeProvenance, downloadedPath } from '../models/downloadIndex';
import { modelNameOf } from '../models/embedded';
import { type SavedSetting, savedMessage } from '../settings/settingPlaces';
import { embeddedModels, readModelSettings, readNextEditSettings, writeSetting } from './settings';

interface ModelPick extends vscode.QuickPickItem {
  value?: string;
  action?: 'browse' | 'enter';
}

/** Folder where downloaded models live. */
export function modelsDir(context: vscode.ExtensionContext): string {
  return path.join(context.globalStorageUri.fsPath, 'models');
}

function listGguf(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir)
      .filter((f) => f.toLowerCase().endsWith('.gguf'))
      .map((f) => path.join(dir, f));
  } catch {
    return [];
  }
}

function sizeLabel(file: string): string {
  try {
    return `${(fs.statSync(file).size / 1e6).toFixed(1)} MB`;
  } catch {
    return 'missing';
  }
}

type ModelRole = 'target' | 'draft' | 'nextEdit';

const PICKER_TITLES: Record<ModelRole, string> = {
  target: 'Draftline: Select Target Model',
  draft: 'Draftline: Select Draft Model',
  nextEdit: 'Draftline: Select Next-Edit Model',
};

const SETTING_KEYS: Record<ModelRole, string> = { target: 'targetModel', draft: 'draftModel', nextEdit: 'nextEdit.model' };

/** What a recommended model says beside its name: size, and for next-edit models the memory it takes and its licence. */
function recommendedDescription(m: CatalogModel, role: ModelRole): string {
  const size = `${(m.sizeBytes / 1e9).toFixed(2)} GB`;
  if (role !== 'nextEdit') return size;
  const entry = Object.values(NEXT_EDIT_CATALOG).find((e) => e.uri === m.uri);
  return entry ? `${size}, needs ~${(entry.memoryBytes / 1e9).toFixed(1)} GB memory, ${entry.licence}` : size;
}

/**
 * "Select Target / Draft / Next-Edit Model": embedded, recommended, downloaded, browse, or a typed
 * path/URI. A next-edit model has no embedded one; the completion target's own file serves when it is a
 * next-edit model.
 */
export async function pickModel(context: vscode.ExtensionContext, role: ModelRole): Promise<void> {
  const embedded = embeddedModels(context.extensionPath);
  const current = readModelSettings(context.extensionPath);
  const currentPath = role === 'target' ? current.targetModel : role === 'draft' ? current.draftModel : readNextEditSettings().model;
  const targetInfo = role === 'draft' ? await inspectModelFile(current.targetModel).catch(() => null) : null;
  const items: ModelPick[] = [];
  const add = async (file: string, label: string, value: string) => {
    let description = sizeLabel(file);
    // Downloads say whether their sha256 was verified; the embedded pair ships with the extension.
    if (file.startsWith(modelsDir(context))) description += ` — ${describeProvenance(modelsDir(context), file).short}`;
    if (targetInfo) {
      const info = await inspectModelFile(file).catch((e: Error) => e);
      if (info instanceof Error) description += ' — unreadable';
      else {
        const check = checkVocabularyCompatible(targetInfo, info);
        if (!check.compatible) description += ` — incompatible vocabulary (${check.reason})`;
      }
    }
    items.push({ label: `${file === currentPath ? '$(check) ' : ''}${label}`, description, detail: file, value });
  };
  if (role !== 'nextEdit') {
    items.push({ label: 'Embedded demo models', kind: vscode.QuickPickItemKind.Separator });
    const embeddedFile = role === 'target' ? embedded.target : embedded.draft;
    await add(embeddedFile, `${modelNameOf(embeddedFile)} (embedded)`, '');
  }
  items.push({ label: 'Recommended (downloaded on first use)', kind: vscode.QuickPickItemKind.Separator });
  const recommended: CatalogModel[] =
    role === 'target' ? [CATALOG.target15, CATALOG.target3, CATALOG.target7] : role === 'draft' ? [CATALOG.draft05] : [NEXT_EDIT_CATALOG.sweep15, NEXT_EDIT_CATALOG.zeta7];
  for (const m of recommended) {
    const have = downloadedPath(modelsDir(context), m.uri);
    items.push({
      label: `${currentPath === m.uri || (have && currentPath === have) ? '$(check) ' : ''}${m.name}`,
      description: `${recommendedDescription(m, role)}${have ? ` — downloaded, ${describeProvenance(modelsDir(context), have).short}` : ''}`,
      detail: m.uri,
      value: m.uri,
    });
  }
  const downloaded = listGguf(modelsDir(context));
  if (downloaded.length) {
    items.push({ label: 'Downloaded', kind: vscode.QuickPickItemKind.Separator });
    for (const file of downloaded) await add(file, path.basename(file), file);
  }
  items.push({ label: 'Other', kind: vscode.QuickPickItemKind.Separator });
  if (role === 'draft') items.push({ label: 'No draft model', description: 'n-gram speculation only', value: 'none' });
  if (role === 'nextEdit') items.push({ label: 'No next-edit model', description: 'next-edit suggestions off', value: '' });
  items.push({ label: '$(folder-opened) Browse for a .gguf file…', action: 'browse' });
  items.push({ label: '$(edit) Enter a path or hub URI…', action: 'enter' });

  const choice = await vscode.window.showQuickPick(items, {
    title: PICKER_TITLES[role],
    placeHolder: `current: ${currentPath || 'none'}`,
    matchOnDetail: true,
  });
  if (!choice) return;
  let value = choice.value;
  if (choice.action === 'browse') {
    const picked = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { 'GGUF models': ['gguf'] }, title: 'Choose a GGUF model' });
    value = picked?.[0]?.fsPath;
  } else if (choice.action === 'enter') {
    value = await vscode.window.showInputBox({ title: 'Model path or hub URI', placeHolder: '/path/to/model.gguf or hf:user/repo:Q4_K_M', value: currentPath });
  }
  if (value === undefined) return;
  // Model paths live in user settings only (never a workspace's): the Remote settings in a remote window.
  const saved: SavedSetting[] = [{ what: role === 'nextEdit' ? (value ? 'next-edit model' : 'no next-edit model') : `${role} model`, place: await writeSetting(SETTING_KEYS[role], value) }];
  // "No next-edit model — next-edit suggestions off" says what it does. That toggle is a window
  // setting: the User settings (or a workspace that sets it), wherever the model path went.
  if (role === 'nextEdit' && value === '') saved.push({ what: 'next-edit suggestions off', place: await writeSetting('nextEdit.enabled', false) });
  vscode.window.setStatusBarMessage(savedMessage(saved), 4000);
}
