// Extension-host test suite: runs INSIDE VS Code (desktop through @vscode/test-electron:
// `npm run test:desktop`). Plain node:assert, no test framework: run() rejects on the first failure.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { DraftlineController } from '../../src/vscode/controller';
import { readVocabFromGguf, writeRandomLlamaModel } from '../../testbed/ggufWriter';

const COMMANDS = [
  'toggleCompletions',
  'toggleSpeculation',
  'toggleNgram',
  'showNextSuggestion',
  'showPreviousSuggestion',
  'selectTargetModel',
  'selectDraftModel',
  'showStats',
  'showLog',
  'showMenu',
].map((c) => `draftline.${c}`);

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

  checks.push([
    'activates and exposes its controller',
    async () => {
      assert.ok(extension, 'extension installed');
      controller = (await extension.activate()).controller;
      assert.ok(controller);
    },
  ]);
  checks.push([
    'registers every command',
    async () => {
      const all = await vscode.commands.getCommands(true);
      for (const c of COMMANDS) assert.ok(all.includes(c), c);
    },
  ]);
  checks.push([
    'loads the embedded models',
    async () => {
      const models = await until(() => controller.models ?? undefined, 60_000, 'models');
      assert.equal(models.target.name, 'draftline-code-target');
    },
  ]);
  checks.push([
    'the provider returns an item for a document',
    async () => {
      const doc = await vscode.workspace.openTextDocument({
        language: 'typescript',
        content: 'export function sum(values: number[]): number {\n  let total = 0;\n  for (let i = 0; i < values.length; i\n}\n',
      });
      await vscode.window.showTextDocument(doc);
      const position = new vscode.Position(2, doc.lineAt(2).text.length);
      const ask = async (triggerKind: vscode.InlineCompletionTriggerKind) =>
        (await controller.provider.provideInlineCompletionItems(doc, position, { triggerKind, selectedCompletionInfo: undefined }, new vscode.CancellationTokenSource().token)) ?? [];
      const typed = await ask(vscode.InlineCompletionTriggerKind.Automatic);
      assert.equal(typed.length, 1, 'typing gets one suggestion');
      assert.ok(String(typed[0].insertText).length > 0);
      // An Invoke no one asked to cycle for (a trigger: Draftline's own after an accept, Alt+\): the one suggestion.
      const triggered = await ask(vscode.InlineCompletionTriggerKind.Invoke);
      assert.deepEqual(
        triggered.map((i) => String(i.insertText)),
        [String(typed[0].insertText)],
      );
      // Alt+] (Draftline: Show Next Suggestion) marks the cursor, and VS Code asks with Invoke: the same
      // greedy suggestion first, then up to two distinct alternatives.
      controller.provider.userCycles(doc, position);
      const cycled = await ask(vscode.InlineCompletionTriggerKind.Invoke);
      const texts = cycled.map((i) => String(i.insertText));
      assert.ok(texts.length >= 1 && texts.length <= 3, JSON.stringify(texts));
      assert.equal(texts[0], String(typed[0].insertText));
      assert.equal(new Set(texts).size, texts.length, JSON.stringify(texts));
      for (const item of cycled) assert.deepEqual(item.command?.arguments, [doc.uri.toString(), String(item.insertText)], 'accepting reports its own text');
    },
  ]);
  checks.push([
    'settings changes apply live',
    async () => {
      const config = vscode.workspace.getConfiguration('draftline');
      await config.update('speculation.enabled', false, vscode.ConfigurationTarget.Global);
      await until(() => (controller.engine.mode === 'plain' ? true : undefined), 5000, 'plain mode');
      await config.update('speculation.enabled', undefined, vscode.ConfigurationTarget.Global);
      await until(() => (controller.engine.mode === 'hybrid' ? true : undefined), 5000, 'hybrid mode');
    },
  ]);

  checks.push([
    'a model with Qwen-style repo tokens gets repo-level prompts, with a file the user left as extra context',
    async () => {
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
      assert.ok(folder, 'a workspace folder');
      const config = vscode.workspace.getConfiguration('draftline');
      const model = path.join(folder, 'qwen-repo-tokens.gguf');
      const vocab = await readVocabFromGguf(path.join(extension!.extensionPath, 'models', 'tiny-code-target.gguf'));
      await writeRandomLlamaModel(model, {
        seed: 3,
        dModel: 32,
        nLayers: 1,
        nHeads: 2,
        ffn: 64,
        vocab,
        fim: false,
        specialTokens: ['<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>'],
        fimTokens: { prefix: '<|fim_prefix|>', suffix: '<|fim_suffix|>', middle: '<|fim_middle|>' },
      });
      try {
        await config.update('targetModel', model, vscode.ConfigurationTarget.Global);
        await config.update('draftModel', 'none', vscode.ConfigurationTarget.Global);
        const models = await until(() => (controller.models?.target.path === model ? controller.models : undefined), 60_000, 'the repo-token model');
        assert.equal(models.promptTemplate, 'Qwen2.5-Coder (repo-level)');
        fs.writeFileSync(path.join(folder, 'util.ts'), 'export function twice(x: number): number {\n  return 2 * x;\n}\n');
        fs.writeFileSync(path.join(folder, 'main.ts'), "import { twice } from './util';\n\nexport const four = twice(");
        // Open util.ts, then leave it for main.ts: the code around its cursor joins the ring.
        await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(path.join(folder, 'util.ts')));
        const main = await vscode.workspace.openTextDocument(path.join(folder, 'main.ts'));
        await vscode.window.showTextDocument(main);
        const end = main.lineAt(main.lineCount - 1).range.end;
        await controller.provider.provideInlineCompletionItems(
          main,
          end,
          { triggerKind: vscode.InlineCompletionTriggerKind.Invoke, selectedCompletionInfo: undefined },
          new vscode.CancellationTokenSource().token,
        );
        const extra = controller.engine.stats.last?.stats?.extraContext;
        assert.ok(extra, 'the completion had extra context');
        assert.equal(extra.repoLevel, true, JSON.stringify(extra));
        assert.ok(extra.files >= 1 && extra.tokens > 0, JSON.stringify(extra));
      } finally {
        await config.update('targetModel', undefined, vscode.ConfigurationTarget.Global);
        await config.update('draftModel', undefined, vscode.ConfigurationTarget.Global);
        await until(() => (controller.models?.target.name === 'draftline-code-target' ? true : undefined), 60_000, 'the embedded models back');
      }
    },
  ]);

  // Results also go to a file when asked: in code-server the extension host's console is not ours.
  const report = (line: string) => {
    console.log(line);
    if (process.env.DRAFTLINE_SUITE_RESULTS) fs.appendFileSync(process.env.DRAFTLINE_SUITE_RESULTS, `${line}\n`);
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
