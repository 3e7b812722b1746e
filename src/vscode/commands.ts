import * as vscode from 'vscode';
import type { DraftlineController } from './controller';
import { pickModel } from './modelPicker';
import { toggleSetting } from './settings';

interface MenuItem extends vscode.QuickPickItem {
  command: string;
}

const MENU: MenuItem[] = [
  { label: '$(circle-slash) Toggle Completions', command: 'draftline.toggleCompletions' },
  { label: '$(rocket) Toggle Speculation', command: 'draftline.toggleSpeculation' },
  { label: '$(references) Toggle N-gram Reuse', command: 'draftline.toggleNgram' },
  { label: '$(server-process) Select Target Model', command: 'draftline.selectTargetModel' },
  { label: '$(server) Select Draft Model', command: 'draftline.selectDraftModel' },
  { label: '$(graph) Show Stats', command: 'draftline.showStats' },
  { label: '$(output) Show Log', command: 'draftline.showLog' },
];

export function registerCommands(controller: DraftlineController): vscode.Disposable[] {
  const { context } = controller;
  const toggle = (key: string, name: string) => async () => {
    const on = await toggleSetting(key);
    controller.applyLiveSettings();
    vscode.window.setStatusBarMessage(`Draftline: ${name} ${on ? 'on' : 'off'} (mode: ${controller.engine.mode})`, 3000);
  };
  return [
    vscode.commands.registerCommand('draftline.toggleCompletions', toggle('enable', 'completions')),
    vscode.commands.registerCommand('draftline.toggleSpeculation', toggle('speculation.enabled', 'speculation')),
    vscode.commands.registerCommand('draftline.toggleNgram', toggle('speculation.ngramReuse', 'n-gram reuse')),
    vscode.commands.registerCommand('draftline.selectTargetModel', () => pickModel(context, 'target')),
    vscode.commands.registerCommand('draftline.selectDraftModel', () => pickModel(context, 'draft')),
    vscode.commands.registerCommand('draftline.showStats', async () => {
      controller.refreshStats();
      const doc = await vscode.workspace.openTextDocument(controller.statsUri);
      await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: false });
    }),
    vscode.commands.registerCommand('draftline.showLog', () => controller.log.show()),
    vscode.commands.registerCommand('draftline.showMenu', async () => {
      const choice = await vscode.window.showQuickPick(MENU, { title: `Draftline (mode: ${controller.engine.mode})` });
      if (choice) await vscode.commands.executeCommand(choice.command);
    }),
    // Internal: the user accepted ghost text; remember it as n-gram material.
    vscode.commands.registerCommand('draftline.accepted', (key: string, text: string) => {
      controller.worker.notify({ kind: 'accepted', key, text });
    }),
  ];
}
