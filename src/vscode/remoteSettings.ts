import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { DECLARATIONS, SECTION } from '../settings/declaredSettings';
import { type IgnoredSetting, ignoredInRemoteWindow, ignoredSettingsMessage, parseJsonc, remoteWindowNote } from '../settings/settingPlaces';

const COPY = 'Copy to Remote';
const OPEN = 'Open Remote';

/**
 * In a remote window (vscode.env.remoteName), says where Draftline runs and reads its machine settings
 * (the log), and tells the user when a machine setting they set in the User settings is ignored there,
 * with a button that copies it to the Remote settings. VS Code itself says so only in a hover of the
 * settings editor, and a machine setting that was in the User settings at startup may even apply until
 * VS Code next reads them, then silently stop (src/settings/settingPlaces.ts).
 */
export function watchRemoteSettings(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): vscode.Disposable {
  const remoteName = vscode.env.remoteName;
  const note = remoteWindowNote(remoteName);
  if (!remoteName || !note) return new vscode.Disposable(() => undefined);
  log.info(note);
  // The User settings file, where the extension host can read it (code-server keeps it on the server
  // beside the extension's global storage: <user data>/User/globalStorage/<id>). Elsewhere (Remote-SSH,
  // WSL, containers) it is on the other machine and inspect() is all there is.
  const userSettingsFile = context.globalStorageUri.scheme === 'file' ? path.join(context.globalStorageUri.fsPath, '..', '..', 'settings.json') : undefined;
  let shown = '[]';
  const check = (): void => {
    const ignored = ignoredInRemoteWindow({
      remoteName,
      section: SECTION,
      declarations: DECLARATIONS,
      userSettingsFile: readUserSettings(userSettingsFile, log),
      inspect: (key) => vscode.workspace.getConfiguration(SECTION).inspect(key),
    });
    const signature = JSON.stringify(ignored);
    if (signature === shown) return;
    shown = signature;
    if (ignored.length === 0) return;
    const message = ignoredSettingsMessage(remoteName, ignored);
    log.warn(message);
    void vscode.window.showWarningMessage(message, COPY, OPEN).then(async (choice) => {
      if (choice === COPY) await copyToRemote(ignored, log);
      else if (choice === OPEN) await vscode.commands.executeCommand('workbench.action.openRemoteSettingsFile');
    });
  };
  check();
  const subscriptions = [vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration(SECTION) && check())];
  // An ignored value's edit raises no configuration event: the file itself is watched.
  if (userSettingsFile) {
    const listener = () => check();
    fs.watchFile(userSettingsFile, { interval: 1000 }, listener);
    subscriptions.push(new vscode.Disposable(() => fs.unwatchFile(userSettingsFile, listener)));
  }
  return vscode.Disposable.from(...subscriptions);
}

function readUserSettings(file: string | undefined, log: vscode.LogOutputChannel): Record<string, unknown> | undefined {
  if (!file || !fs.existsSync(file)) return undefined;
  try {
    const parsed = parseJsonc(fs.readFileSync(file, 'utf8'));
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch (error) {
    log.debug(`User settings (${file}) not read: ${(error as Error).message}`);
    return undefined;
  }
}

/** A Global write of a machine setting in a remote window goes to the Remote settings (checked in code-server). */
async function copyToRemote(ignored: readonly IgnoredSetting[], log: vscode.LogOutputChannel): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  for (const { key, value } of ignored) await config.update(key.slice(SECTION.length + 1), value, vscode.ConfigurationTarget.Global);
  log.info(`copied to the Remote settings: ${ignored.map((s) => s.key).join(', ')}`);
  vscode.window.setStatusBarMessage(`Draftline: ${ignored.length === 1 ? 'setting' : `${ignored.length} settings`} copied to the Remote settings`, 4000);
}
