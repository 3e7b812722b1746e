// Issue #41 item 3: in a remote window (code-server, Remote-SSH, WSL, Dev Containers) VS Code applies
// Draftline's machine settings only from the Remote settings, and a command that writes a setting must
// write it where it takes effect. src/settings/settingPlaces.ts decides both from what the editor says.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DECLARATIONS, SECTION } from '../../src/settings/declaredSettings';
import { ignoredInRemoteWindow, ignoredSettingsMessage, type PlacedValues, parseJsonc, placeName, remoteWindowNote, savedMessage, writeTarget } from '../../src/settings/settingPlaces';

const declared = (key: string) => DECLARATIONS[`${SECTION}.${key}`];

describe('where a command writes a setting', () => {
  it('a toggle goes where the workspace or folder already sets it, or the user settings would be overridden', () => {
    assert.equal(writeTarget(declared('speculation.enabled'), { defaultValue: true }), 'global');
    assert.equal(writeTarget(declared('speculation.enabled'), { defaultValue: true, globalValue: false }), 'global');
    assert.equal(writeTarget(declared('speculation.enabled'), { defaultValue: true, globalValue: true, workspaceValue: false }), 'workspace');
    assert.equal(writeTarget(declared('enable'), { workspaceValue: true, workspaceFolderValue: false }), 'workspaceFolder');
    assert.equal(placeName('workspace', declared('enable'), 'ssh-remote'), 'workspace settings');
    assert.equal(placeName('global', declared('enable'), 'ssh-remote'), 'user settings', 'a window setting applies from the User settings in a remote window too');
  });

  it('a machine setting always goes to the user settings, which are the Remote settings in a remote window', () => {
    // Draftline ignores a workspace's value of these (settingsReader): writing there would change nothing.
    assert.equal(writeTarget(declared('targetModel'), { workspaceValue: '/x.gguf' }), 'global');
    assert.equal(writeTarget(declared('backend'), {}), 'global');
    assert.equal(placeName('global', declared('targetModel'), undefined), 'user settings');
    assert.equal(placeName('global', declared('targetModel'), 'ssh-remote'), 'Remote settings (ssh-remote)');
  });

  it("every machine setting's description says where it lives in a remote window", () => {
    const silent = Object.entries(DECLARATIONS as Record<string, { scope?: string; description?: string; markdownDescription?: string }>)
      .filter(([, d]) => d.scope === 'machine' && !/the Remote settings in a remote window/.test(d.markdownDescription ?? d.description ?? ''))
      .map(([key]) => key);
    assert.deepEqual(silent, []);
  });

  it('every setting a command writes is declared (its scope decides where it goes)', () => {
    for (const key of ['enable', 'speculation.enabled', 'speculation.ngramReuse', 'targetModel', 'draftModel', 'backend', 'server.endpoint']) {
      assert.ok(declared(key), `${SECTION}.${key} is declared in package.json`);
    }
  });
});

describe('the confirmation of a command that wrote settings', () => {
  const savedIn = (key: string, values: PlacedValues, remoteName: string | undefined) => placeName(writeTarget(declared(key), values), declared(key), remoteName);

  it('"No next-edit model" in a remote window: the model path went to the Remote settings, the toggle to the User settings, and it says so', () => {
    const model = savedIn('nextEdit.model', {}, 'code-server');
    const enabled = savedIn('nextEdit.enabled', {}, 'code-server');
    assert.equal(model, 'Remote settings (code-server)');
    assert.equal(enabled, 'user settings', 'nextEdit.enabled is a window setting: it applies from the User settings');
    assert.equal(
      savedMessage([
        { what: 'no next-edit model', place: model },
        { what: 'next-edit suggestions off', place: enabled },
      ]),
      'Draftline: no next-edit model saved in the Remote settings (code-server), next-edit suggestions off in the user settings',
    );
  });

  it('both in one place (a local window): named once', () => {
    const saved = [
      { what: 'no next-edit model', place: savedIn('nextEdit.model', {}, undefined) },
      { what: 'next-edit suggestions off', place: savedIn('nextEdit.enabled', {}, undefined) },
    ];
    assert.equal(savedMessage(saved), 'Draftline: no next-edit model and next-edit suggestions off saved in the user settings');
  });

  it('the toggle goes where a workspace already sets it, and the message names that place', () => {
    const enabled = savedIn('nextEdit.enabled', { workspaceValue: true }, 'code-server');
    assert.equal(enabled, 'workspace settings');
    assert.match(
      savedMessage([
        { what: 'no next-edit model', place: 'Remote settings (code-server)' },
        { what: 'next-edit suggestions off', place: enabled },
      ]),
      /next-edit suggestions off in the workspace settings$/,
    );
  });

  it('one setting', () => assert.equal(savedMessage([{ what: 'draft model', place: 'user settings' }]), 'Draftline: draft model saved in the user settings'));
});

describe('machine settings a remote window ignores', () => {
  const inspectFrom =
    (values: Record<string, PlacedValues>) =>
    (key: string): PlacedValues | undefined =>
      values[key] ?? {};

  it('none in a local window, whatever the User settings hold', () => {
    const ignored = ignoredInRemoteWindow({
      remoteName: undefined,
      section: SECTION,
      declarations: DECLARATIONS,
      userSettingsFile: { 'draftline.targetModel': '/m.gguf' },
      inspect: inspectFrom({ targetModel: { globalValue: '/m.gguf' } }),
    });
    assert.deepEqual(ignored, []);
  });

  it('a machine setting in the User settings file and not in the Remote settings (code-server)', () => {
    const ignored = ignoredInRemoteWindow({
      remoteName: '127.0.0.1:8080',
      section: SECTION,
      declarations: DECLARATIONS,
      userSettingsFile: { 'draftline.targetModel': '/m.gguf', 'draftline.gpu': 'cpu', 'draftline.debounceMs': 50, 'editor.tabSize': 2 },
      // VS Code has already dropped the User value of targetModel; gpu is set in the Remote settings too.
      inspect: inspectFrom({ gpu: { globalRemoteValue: 'vulkan', globalValue: 'vulkan' } }),
    });
    assert.deepEqual(ignored, [{ key: 'draftline.targetModel', value: '/m.gguf' }], 'debounceMs is window-scoped and applies; gpu has its Remote value');
  });

  it('a machine value VS Code still reports from the local User settings (it drops it at its next read)', () => {
    const ignored = ignoredInRemoteWindow({
      remoteName: 'ssh-remote',
      section: SECTION,
      declarations: DECLARATIONS,
      userSettingsFile: undefined,
      inspect: inspectFrom({ draftModel: { globalLocalValue: 'none', globalValue: 'none' } }),
    });
    assert.deepEqual(ignored, [{ key: 'draftline.draftModel', value: 'none' }]);
  });

  it('the message names the settings, the window, and where they belong; the log says where Draftline runs', () => {
    const message = ignoredSettingsMessage('ssh-remote', [
      { key: 'draftline.targetModel', value: '/m.gguf' },
      { key: 'draftline.gpu', value: 'cpu' },
    ]);
    assert.match(message, /draftline\.targetModel, draftline\.gpu are set in your User settings/);
    assert.match(message, /remote window \(ssh-remote\)/);
    assert.match(message, /Remote settings/);
    assert.equal(remoteWindowNote(undefined), null);
    assert.match(remoteWindowNote('wsl') ?? '', /run on the remote machine \(models and GPU must be there\)/);
  });
});

describe('settings.json as VS Code writes it (comments, trailing commas)', () => {
  it('reads it like VS Code', () => {
    const text = `{
  // a comment with "quotes", and a comma,
  "draftline.targetModel": "/models/a//b.gguf", /* inline */
  "draftline.server.endpoint": "http://gpu-box:8080/*not a comment*/",
  "editor.rulers": [80, 120,],
  "escaped": "a \\" , }",
}`;
    assert.deepEqual(parseJsonc(text), {
      'draftline.targetModel': '/models/a//b.gguf',
      'draftline.server.endpoint': 'http://gpu-box:8080/*not a comment*/',
      'editor.rulers': [80, 120],
      escaped: 'a " , }',
    });
    assert.throws(() => parseJsonc('{ "a": }'));
  });
});
