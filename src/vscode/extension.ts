import type * as vscode from 'vscode';
import { registerCommands } from './commands';
import { DraftlineController } from './controller';
import { watchRemoteSettings } from './remoteSettings';

let controller: DraftlineController | undefined;

export function activate(context: vscode.ExtensionContext): { controller: DraftlineController } {
  controller = new DraftlineController(context);
  context.subscriptions.push(controller, ...registerCommands(controller), watchRemoteSettings(context, controller.log));
  controller.start();
  // Exposed for the extension-host test suite.
  return { controller };
}

export function deactivate(): void {
  controller?.dispose();
  controller = undefined;
}
