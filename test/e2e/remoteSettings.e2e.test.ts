// Issue #41 item 3 in a real editor. code-server is a remote window (vscode.env.remoteName is its
// host:port): VS Code applies Draftline's machine settings there only from the Remote settings
// (<user data>/Machine/settings.json) and ignores them in the User settings, saying so only in a hover.
// Draftline says so in a notification whose button copies them where they apply; and a toggle writes
// where it takes effect (here the workspace's settings, which set it), not into the User settings
// under a workspace value that overrides them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseJsonc } from '../../src/settings/settingPlaces';
import {
  clickNotificationButton,
  closeWorkbench,
  draftlineLogs,
  e2eUnavailableReason,
  openWorkbench,
  repoRoot,
  runCommand,
  screenshot,
  startCodeServer,
  waitFor,
  waitForNotification,
  type CodeServer,
  type Workbench,
} from '../../testbed/editorHarness';

const ROOT = repoRoot();
const OUT = path.join(ROOT, 'test-output', 'e2e-remote-settings');
const TARGET = path.join(ROOT, 'models', 'tiny-code-target.gguf');
const DRAFT = path.join(ROOT, 'models', 'tiny-code-draft.gguf');

const readJson = (file: string): Record<string, unknown> => (fs.existsSync(file) ? (parseJsonc(fs.readFileSync(file, 'utf8')) as Record<string, unknown>) : {});

describe('machine settings in a remote window (code-server)', { skip: e2eUnavailableReason() ?? false }, () => {
  let server: CodeServer;
  let wb: Workbench;
  const workspace = path.join(OUT, 'workspace');
  const workspaceSettings = path.join(workspace, '.vscode', 'settings.json');

  before(async () => {
    fs.rmSync(OUT, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(workspaceSettings), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'main.ts'), 'export const answer = 42;\n');
    fs.writeFileSync(workspaceSettings, JSON.stringify({ 'draftline.speculation.enabled': true }, null, 2));
    execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT, stdio: 'ignore' });
    server = await startCodeServer({
      workspaceDir: workspace,
      outDir: path.join(OUT, 'server'),
      // Where a user of the README's demo sets them: the User settings.
      userSettingsVerbatim: { 'draftline.targetModel': TARGET, 'draftline.draftModel': DRAFT },
    });
    wb = await openWorkbench(server, { extensionDevelopmentPath: ROOT });
  });

  after(async () => {
    await closeWorkbench(wb);
    await server?.stop();
  });

  it('says the User settings are ignored here, and copies them to the Remote settings', async () => {
    const page = wb.page;
    const message = await waitForNotification(page, /set in your User settings, which this remote window/, 90_000);
    assert.match(message, /draftline\.targetModel, draftline\.draftModel are set/);
    assert.match(message, /Remote settings/);
    await screenshot(page, OUT, '01-ignored-settings');
    await clickNotificationButton(page, /^Copy to Remote$/);
    const machine = path.join(server.userDataDir, 'Machine', 'settings.json');
    const copied = await waitFor(
      () => {
        const json = readJson(machine);
        return json['draftline.targetModel'] === TARGET && json['draftline.draftModel'] === DRAFT ? json : undefined;
      },
      { timeoutMs: 30_000, what: 'the models in the Remote settings (Machine/settings.json)', describe: () => fs.readFileSync(machine, 'utf8') },
    );
    assert.ok(copied);
    const log = () =>
      draftlineLogs(server.userDataDir)
        .map((f) => fs.readFileSync(f, 'utf8'))
        .join('\n');
    await waitFor(() => (/copied to the Remote settings: draftline\.targetModel, draftline\.draftModel/.test(log()) ? true : undefined), { timeoutMs: 15_000, what: 'the copy in the log' });
    assert.match(log(), /remote window \(127\.0\.0\.1:\d+\): Draftline and its inference worker run on the remote machine/);
  });

  it('a toggle writes where it takes effect: the workspace settings that set it', async () => {
    const page = wb.page;
    const userSettings = path.join(server.userDataDir, 'User', 'settings.json');
    await runCommand(page, 'Draftline: Toggle Speculation');
    await waitFor(() => (readJson(workspaceSettings)['draftline.speculation.enabled'] === false ? true : undefined), {
      timeoutMs: 15_000,
      what: 'speculation off in the workspace settings',
      describe: () => `workspace: ${fs.readFileSync(workspaceSettings, 'utf8')}\nuser: ${fs.readFileSync(userSettings, 'utf8')}`,
    });
    assert.equal(readJson(userSettings)['draftline.speculation.enabled'], undefined, 'nothing written where the workspace overrides it');
    await screenshot(page, OUT, '02-toggled-in-workspace');
  });
});
