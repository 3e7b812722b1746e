// Extension-host test suite: runs INSIDE VS Code (desktop through @vscode/test-electron:
// `npm run test:desktop`). Plain node:assert, no test framework: run() rejects on the first failure.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { DraftlineController } from '../../src/vscode/controller';

const COMMANDS = ['toggleCompletions', 'toggleSpeculation', 'toggleNgram', 'selectTargetModel', 'selectDraftModel', 'showStats', 'showLog', 'showMenu'].map((c) => `draftline.${c}`);

async function until<T>(probe: () => T | undefined, ms: number, what: string): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function run(): Promise<void> {
  const checks: [string, () => Promise<void>][] = [];
  const extension = vscode.extensions.getExtension<{ controller: DraftlineController }>('draftline.draftline');
  let controller!: DraftlineController;

  checks.push(['activates and exposes its controller', async () => {
    assert.ok(extension, 'extension installed');
    controller = (await extension.activate()).controller;
    assert.ok(controller);
  }]);
  checks.push(['registers every command', async () => {
    const all = await vscode.commands.getCommands(true);
    for (const c of COMMANDS) assert.ok(all.includes(c), c);
  }]);
  checks.push(['loads the embedded models', async () => {
    const models = await until(() => controller.models ?? undefined, 60_000, 'models');
    assert.equal(models.target.name, 'draftline-code-target');
  }]);
  checks.push(['the provider returns an item for a document', async () => {
    const doc = await vscode.workspace.openTextDocument({ language: 'typescript', content: 'export function sum(values: number[]): number {\n  let total = 0;\n  for (let i = 0; i < values.length; i\n}\n' });
    await vscode.window.showTextDocument(doc);
    const position = new vscode.Position(2, doc.lineAt(2).text.length);
    const items = (await controller.provider.provideInlineCompletionItems(doc, position, { triggerKind: vscode.InlineCompletionTriggerKind.Invoke, selectedCompletionInfo: undefined }, new vscode.CancellationTokenSource().token)) ?? [];
    assert.equal(items.length, 1);
    assert.ok(String(items[0].insertText).length > 0);
  }]);
  checks.push(['settings changes apply live', async () => {
    const config = vscode.workspace.getConfiguration('draftline');
    await config.update('speculation.enabled', false, vscode.ConfigurationTarget.Global);
    await until(() => (controller.engine.mode === 'plain' ? true : undefined), 5000, 'plain mode');
    await config.update('speculation.enabled', undefined, vscode.ConfigurationTarget.Global);
    await until(() => (controller.engine.mode === 'hybrid' ? true : undefined), 5000, 'hybrid mode');
  }]);

  // Results also go to a file when asked: in code-server the extension host's console is not ours.
  const report = (line: string) => {
    console.log(line);
    if (process.env.DRAFTLINE_SUITE_RESULTS) fs.appendFileSync(process.env.DRAFTLINE_SUITE_RESULTS, line + '\n');
  };
  for (const [name, check] of checks) {
    try {
      await check();
      report(`ok - ${name}`);
    } catch (error) {
      report(`not ok - ${name}: ${(error as Error).message}`);
      throw error;
    }
  }
  report('done');
}
