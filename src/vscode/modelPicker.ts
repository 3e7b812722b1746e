import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { checkVocabularyCompatible, inspectModelFile } from '../gguf/modelFileCheck';
import { CATALOG, type CatalogModel, NEXT_EDIT_CATALOG } from '../models/catalog';
import { downloadedPath, isModelUri, LOCAL_FILE } from '../models/downloadIndex';
import { modelNameOf } from '../models/embedded';
import type { ModelRole } from '../models/modelRole';
import { resolveModelPath } from '../models/modelPath';
import { checkChosenFile, chooseModelFile, modelsDir, provenanceOf, refused } from './localModelFile';
import { type SavedSetting, savedMessage } from '../settings/settingPlaces';
import { embeddedModels, readModelSettings, readNextEditSettings, writeSetting } from './settings';

interface ModelPick extends vscode.QuickPickItem {
  value?: string;
  action?: 'browse' | 'enter';
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

const PICKER_TITLES: Record<ModelRole, string> = {
  target: 'Draftline: Select Target Model',
  draft: 'Draftline: Select Draft Model',
  nextEdit: 'Draftline: Select Next-Edit Model',
};

const SETTING_KEYS: Record<ModelRole, string> = { target: 'targetModel', draft: 'draftModel', nextEdit: 'nextEdit.model' };

/** What a recommended model says of its file when there is one: a download's check, or a file from disk chosen in its place. */
function haveDescription(provenance: string): string {
  return provenance === LOCAL_FILE ? provenance : `downloaded, ${provenance}`;
}

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
export async function pickModel(context: vscode.ExtensionContext, role: ModelRole, log?: vscode.LogOutputChannel): Promise<void> {
  const embedded = embeddedModels(context.extensionPath);
  const current = readModelSettings(context.extensionPath);
  const currentPath = role === 'target' ? current.targetModel : role === 'draft' ? current.draftModel : readNextEditSettings().model;
  const targetInfo = role === 'draft' ? await inspectModelFile(current.targetModel).catch(() => null) : null;
  const items: ModelPick[] = [];
  const add = async (file: string, label: string, value: string) => {
    let description = sizeLabel(file);
    // Downloads say whether their sha256 was verified, a file from disk that it is a local file; the embedded pair ships with the extension.
    const provenance = provenanceOf(context, file).short;
    if (provenance !== 'embedded') description += ` — ${provenance}`;
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
  // The current model when it is a file from disk (nowhere else in the list).
  if (currentPath && currentPath !== 'none' && !isModelUri(currentPath) && !currentPath.startsWith(modelsDir(context)) && !Object.values(embedded).includes(currentPath)) {
    items.push({ label: 'Current', kind: vscode.QuickPickItemKind.Separator });
    await add(currentPath, path.basename(currentPath), currentPath);
  }
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
      description: `${recommendedDescription(m, role)}${have ? ` — ${haveDescription(provenanceOf(context, have).short)}` : ''}`,
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
    value = await chooseModelFile(context, role, { filters: { 'GGUF models': ['gguf'] }, title: `${PICKER_TITLES[role]}: choose a GGUF file` }, {}, log);
  } else if (choice.action === 'enter') {
    value = await vscode.window.showInputBox({ title: 'Model path or hub URI', placeHolder: '/path/to/model.gguf or hf:user/repo:Q4_K_M', value: currentPath });
    // A path is checked for the role at once, as a browsed file is (a hub URI when it is downloaded).
    const file = value && value !== 'none' && !isModelUri(value) ? resolveModelPath(SETTING_KEYS[role], value, os.homedir()).path : undefined;
    const check = file ? await checkChosenFile(context, file, role) : undefined;
    if (check && !check.ok) return (await refused(check.problem, log)) ? pickModel(context, role, log) : undefined;
  }
  if (value === undefined) return;
  // Model paths live in user settings only (never a workspace's): the Remote settings in a remote window.
  const saved: SavedSetting[] = [{ what: role === 'nextEdit' ? (value ? 'next-edit model' : 'no next-edit model') : `${role} model`, place: await writeSetting(SETTING_KEYS[role], value) }];
  // "No next-edit model — next-edit suggestions off" says what it does. That toggle is a window
  // setting: the User settings (or a workspace that sets it), wherever the model path went.
  if (role === 'nextEdit' && value === '') saved.push({ what: 'next-edit suggestions off', place: await writeSetting('nextEdit.enabled', false) });
  vscode.window.setStatusBarMessage(savedMessage(saved), 4000);
}
