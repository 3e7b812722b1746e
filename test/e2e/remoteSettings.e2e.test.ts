// Issue #41 item 3 in a real editor. code-server is a remote window (vscode.env.remoteName is its
// host:port): VS Code applies Draftline's machine settings there only from the Remote settings
// (<user data>/Machine/settings.json) and ignores them in the User settings, saying so only in a hover.
// Draftline says so in a notification whose button copies them where they apply; and a toggle writes
// where it takes effect (here the workspace's settings, which set it), not into the User settings
// under a workspace value that overrides them.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parseJsonc } from '../../src/settings/settingPlaces';
import { clickNotificationButton, e2eUnavailableReason, runCommand, screenshot, waitFor, waitForNotification } from '../../testbed/editorHarness';
import { editorSession, ROOT } from '../support/editorSession';

const TARGET = path.join(ROOT, 'models', 'tiny-code-target.gguf');
const DRAFT = path.join(ROOT, 'models', 'tiny-code-draft.gguf');

const readJson = (file: string): Record<string, unknown> => (fs.existsSync(file) ? (parseJsonc(fs.readFileSync(file, 'utf8')) as Record<string, unknown>) : {});

describe('machine settings in a remote window (code-server)', { skip: e2eUnavailableReason() ?? false }, () => {
  const editor = editorSession({
    name: 'e2e-remote-settings',
    extension: 'development',
    build: true,
    files: { 'main.ts': 'export const answer = 42;\n', '.vscode/settings.json': JSON.stringify({ 'draftline.speculation.enabled': true }, null, 2) },
    // Where a user of the README's demo sets them: the User settings.
    server: { userSettingsVerbatim: { 'draftline.targetModel': TARGET, 'draftline.draftModel': DRAFT } },
  });
  const { out: OUT, workspace } = editor;
  const workspaceSettings = path.join(workspace, '.vscode', 'settings.json');

  it('says the User settings are ignored here, and copies them to the Remote settings', async () => {
    const { page, server } = editor;
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
    const { log } = editor;
    await waitFor(() => (/copied to the Remote settings: draftline\.targetModel, draftline\.draftModel/.test(log()) ? true : undefined), { timeoutMs: 15_000, what: 'the copy in the log' });
    assert.match(log(), /remote window \(127\.0\.0\.1:\d+\): Draftline and its inference worker run on the remote machine/);
  });

  it('a toggle writes where it takes effect: the workspace settings that set it', async () => {
    const { page, server } = editor;
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
