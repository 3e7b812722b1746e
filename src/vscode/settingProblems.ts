import * as vscode from 'vscode';
import type { SettingProblemReport } from './settings';

/**
 * How the editor reports a setting that was out of bounds, mistyped or set where it is not read:
 * each problem logged once a session, and the new ones of one read of the settings (they come in
 * the same tick) in one notification, with a way to the extension's settings.
 */
export function settingProblemReporter(log: vscode.LogOutputChannel, extensionId: () => string): SettingProblemReport {
  const reported = new Set<string>();
  let pending: string[] = [];
  return (message) => {
    if (reported.has(message)) return;
    reported.add(message);
    log.warn(`settings: ${message}`);
    if (pending.push(message) > 1) return;
    setTimeout(() => {
      const messages = pending;
      pending = [];
      void vscode.window.showWarningMessage(`Draftline: ${messages.join(' ')}`, 'Open Settings').then((choice) => {
        if (choice === 'Open Settings') void vscode.commands.executeCommand('workbench.action.openSettings', `@ext:${extensionId()}`);
      });
    }, 0);
  };
}
