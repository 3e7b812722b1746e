// Proves testbed/editorHarness.ts end to end on a tiny stand-in extension that this test writes itself:
// package it with vsce, install the .vsix into a fresh code-server, and check ghost text, Tab accept,
// save to disk, the status bar item and a palette command's notification. Screenshots go to
// test-output/e2e-smoke/. Skips (with the install command) when code-server is not installed.
//
//   node --import tsx --test test/e2e/harness.smoke.test.ts

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  closeWorkbench,
  e2eUnavailableReason,
  gotoLineEnd,
  openFile,
  openWorkbench,
  quickPickRows,
  readGhostText,
  readNotifications,
  readStatusBarItem,
  repoRoot,
  runCommand,
  runProcess,
  saveActiveFile,
  screenshot,
  startCodeServer,
  typeLikeAPerson,
  waitFor,
  waitForGhostText,
  waitForNotification,
  type CodeServer,
  type Workbench,
} from '../../testbed/editorHarness';
import { freshOutput } from '../support/editorSession';

const PUBLISHER = 'draftline-e2e';
const NAME = 'smoke';
const STATUS_ID = `${PUBLISHER}.${NAME}.status`;

const EXTENSION_JS = String.raw`
const vscode = require('vscode');

function activate(context) {
  context.subscriptions.push(
    vscode.languages.registerInlineCompletionItemProvider({ pattern: '**' }, {
      provideInlineCompletionItems(document, position) {
        const before = document.lineAt(position.line).text.slice(0, position.character);
        // Nothing right after an accepted ghost text: else VS Code shows it again at once, racing the
        // test's check that Tab took it away.
        if (before.endsWith('HELLO_GHOST') || before.endsWith('SECOND_LINE')) return [];
        const text = before.endsWith('multi') ? 'HELLO_GHOST\nSECOND_LINE' : 'HELLO_GHOST';
        return [new vscode.InlineCompletionItem(text, new vscode.Range(position, position))];
      },
    }),
  );
  const item = vscode.window.createStatusBarItem('status', vscode.StatusBarAlignment.Right, 100);
  item.text = 'smoke 1';
  item.tooltip = 'Smoke tooltip';
  item.show();
  context.subscriptions.push(item);
  context.subscriptions.push(
    vscode.commands.registerCommand('smoke.sayHi', () => vscode.window.showInformationMessage('Hi from smoke')),
  );
}

function deactivate() {}

module.exports = { activate, deactivate };
`;

function writeStandInExtension(dir: string): void {
  fs.mkdirSync(dir, { recursive: true });
  const pkg = {
    name: NAME,
    displayName: 'Draftline e2e smoke',
    description: 'Stand-in extension for the e2e harness smoke test',
    version: '0.0.1',
    publisher: PUBLISHER,
    license: 'MIT',
    repository: { type: 'git', url: 'https://example.invalid/draftline-e2e-smoke.git' },
    engines: { vscode: '^1.100.0' },
    main: './extension.js',
    activationEvents: ['onStartupFinished'],
    contributes: { commands: [{ command: 'smoke.sayHi', title: 'Say Hi', category: 'Smoke' }] },
  };
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  fs.writeFileSync(path.join(dir, 'extension.js'), EXTENSION_JS);
  fs.writeFileSync(path.join(dir, 'README.md'), '# Draftline e2e smoke\n\nStand-in extension written by test/e2e/harness.smoke.test.ts.\n');
  fs.writeFileSync(path.join(dir, 'LICENSE'), 'MIT License\n\nCopyright (c) Draftline contributors\n');
}

async function packageVsix(extDir: string, outFile: string): Promise<void> {
  const vsce = path.join(repoRoot(), 'node_modules', '.bin', 'vsce');
  const r = await runProcess(vsce, ['package', '--no-dependencies', '--out', outFile], {
    cwd: extDir,
    env: { ...process.env, npm_config_yes: 'false' } as Record<string, string>,
    timeoutMs: 120_000,
  });
  if (r.code !== 0 || !fs.existsSync(outFile)) {
    throw new Error(`vsce package failed (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
}

test('e2e harness: stand-in extension in code-server shows, accepts and saves ghost text', { timeout: 300_000 }, async (t) => {
  const reason = e2eUnavailableReason();
  if (reason) {
    console.log(`[e2e-smoke] skipped: ${reason}`);
    t.skip(reason);
    return;
  }

  const { out, workspace: ws } = freshOutput('e2e-smoke', { 'hello.txt': 'first line\n' });
  const shots = out;
  const extDir = path.join(out, 'extension');
  const vsix = path.join(out, `${NAME}-0.0.1.vsix`);

  const t0 = Date.now();
  const lap = (what: string) => console.log(`[e2e-smoke] ${((Date.now() - t0) / 1000).toFixed(1)} s: ${what}`);

  writeStandInExtension(extDir);
  await packageVsix(extDir, vsix);
  lap(`packaged ${path.relative(repoRoot(), vsix)}`);

  let server: CodeServer | undefined;
  let wb: Workbench | undefined;
  t.after(async () => {
    await closeWorkbench(wb);
    await server?.stop();
  });

  server = await startCodeServer({ workspaceDir: ws, outDir: path.join(out, 'server') });
  lap(`code-server listening on ${server.url}`);
  const installOut = await server.installExtension(vsix);
  assert.match(installOut, /successfully installed/i);
  lap('extension installed');

  wb = await openWorkbench(server, { folder: ws });
  const { page } = wb;
  lap('workbench ready');

  try {
    // The extension activates onStartupFinished: its status bar item shows up.
    const status = await waitFor(async () => (await readStatusBarItem(page, STATUS_ID)) ?? undefined, {
      timeoutMs: 60_000,
      what: `status bar item ${STATUS_ID}`,
      describe: () => server!.logTail(),
    });
    assert.equal(status.text, 'smoke 1');
    lap('extension active');

    await openFile(page, 'hello.txt');
    await gotoLineEnd(page, 1);
    assert.equal(await readGhostText(page), '', 'no ghost text before typing');
    await typeLikeAPerson(page, ' ab', 80);
    const ghost = await waitForGhostText(page, { timeoutMs: 20_000 });
    assert.equal(ghost, 'HELLO_GHOST');
    await screenshot(page, shots, '01-ghost-text');
    lap('ghost text shown');

    await page.keyboard.press('Tab');
    await waitFor(async () => (await readGhostText(page)) === '' || undefined, { timeoutMs: 5000, what: 'ghost text gone after Tab' });
    await saveActiveFile(page);
    assert.equal(fs.readFileSync(path.join(ws, 'hello.txt'), 'utf8'), 'first line abHELLO_GHOST\n');
    lap('accepted with Tab and saved');

    // Multi-line ghost text: cursor line + view-zone lines.
    await page.keyboard.press('End');
    await typeLikeAPerson(page, '\nmulti', 60);
    const multi = await waitForGhostText(page, { timeoutMs: 20_000, predicate: (g) => g.includes('\n') });
    await screenshot(page, shots, '02-multiline-ghost');
    assert.equal(multi, 'HELLO_GHOST\nSECOND_LINE');
    await page.keyboard.press('Tab');
    await saveActiveFile(page);
    assert.equal(fs.readFileSync(path.join(ws, 'hello.txt'), 'utf8'), 'first line abHELLO_GHOST\nmultiHELLO_GHOST\nSECOND_LINE\n');
    lap('multi-line ghost text read, accepted and saved');

    const withTooltip = await readStatusBarItem(page, STATUS_ID, { hover: true });
    assert.ok(withTooltip);
    assert.equal(withTooltip.text, 'smoke 1');
    console.log(`[e2e-smoke] status bar item: ${JSON.stringify(withTooltip)}`);

    await runCommand(page, 'Smoke: Say Hi');
    const note = await waitForNotification(page, 'Hi from smoke');
    assert.equal(note, 'Hi from smoke');
    assert.ok((await readNotifications(page)).includes('Hi from smoke'));
    assert.deepEqual(await quickPickRows(page), [], 'palette closed after running the command');
    await new Promise((r) => setTimeout(r, 400)); // let the toast finish fading in for the picture
    await screenshot(page, shots, '03-notification');
    lap('command ran, notification shown');
  } catch (e) {
    await screenshot(page, shots, '99-failure').catch(() => undefined);
    throw e;
  }
});
