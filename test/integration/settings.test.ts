// Settings as declared in package.json and as read (src/settings/settingsReader.ts, used by
// src/vscode/settings.ts): bounded, never taken from a workspace where they cost resources or reach
// the network, and every problem a sentence rather than a stuck worker.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import manifest from '../../package.json';
import { backendSettingsFrom, DEFAULT_ENGINE_SETTINGS, DEFAULT_SPECULATION, type LoadInputs, modelSettingsFrom, reloadOnChange } from '../../src/settings/declaredSettings';
import { SettingsReader, type SettingDeclaration, type SettingValues } from '../../src/settings/settingsReader';
import { resolveThreads } from '../../src/inference/llamaRuntime';
import { resolveModelPath } from '../../src/models/modelPath';

const DECLARATIONS = manifest.contributes.configuration.properties as Record<string, SettingDeclaration>;
const isNumeric = (d: SettingDeclaration) => ([] as string[]).concat(d.type ?? []).some((t) => t === 'number' || t === 'integer');

/** A configuration as VS Code would hand it over: values per level, `get` the effective one. */
function configuration(values: Record<string, SettingValues>) {
  return {
    inspect: <T>(key: string) => ({ defaultValue: DECLARATIONS[`draftline.${key}`]?.default, ...values[key] }) as SettingValues<T>,
    get: <T>(key: string) => {
      const v = values[key] ?? {};
      return (v.workspaceFolderValue ?? v.workspaceValue ?? v.globalValue ?? DECLARATIONS[`draftline.${key}`]?.default) as T;
    },
  };
}

function reader(values: Record<string, SettingValues>) {
  const problems: string[] = [];
  return { settings: new SettingsReader('draftline', DECLARATIONS, configuration(values), (m) => problems.push(m)), problems };
}

describe('settings declared in package.json', () => {
  it('every numeric setting has a minimum and a maximum', () => {
    const unbounded = Object.entries(DECLARATIONS)
      .filter(([, d]) => isNumeric(d) && (d.minimum === undefined || d.maximum === undefined))
      .map(([key]) => key);
    assert.deepEqual(unbounded, []);
  });

  it('settings that cost resources or reach the network are machine or application scoped', () => {
    for (const key of ['threads', 'gpu', 'gpuLayers', 'contextSize', 'kvSequences', 'flashAttention', 'huggingFaceEndpoint', 'targetModel', 'draftModel']) {
      assert.ok(['machine', 'application'].includes(DECLARATIONS[`draftline.${key}`]!.scope ?? 'window'), `draftline.${key}`);
    }
  });

  it('declares what runs in Restricted Mode', () => {
    const untrusted = (manifest as { capabilities?: { untrustedWorkspaces?: { supported: unknown; description?: string; restrictedConfigurations?: string[] } } }).capabilities?.untrustedWorkspaces;
    assert.ok(untrusted, 'capabilities.untrustedWorkspaces');
    assert.equal(untrusted.supported, 'limited');
    assert.match(untrusted.description ?? '', /Restricted Mode/);
    for (const key of untrusted.restrictedConfigurations ?? []) assert.ok(DECLARATIONS[key], `${key} is a declared setting`);
  });
});

describe('reading settings', () => {
  it('ignores a workspace value of a machine setting, and says so', () => {
    const { settings, problems } = reader({ threads: { workspaceValue: 64 }, contextSize: { workspaceValue: 100_000, globalValue: 4096 } });
    assert.equal(settings.threads('threads', 2), 0);
    assert.equal(settings.number('contextSize'), 4096);
    assert.equal(problems.length, 2);
    assert.match(problems[0]!, /draftline\.threads is set in this workspace's settings, which Draftline ignores/);
  });

  it('a window-scoped setting still follows the workspace', () => {
    const { settings, problems } = reader({ maxTokens: { globalValue: 64, workspaceValue: 32 } });
    assert.equal(settings.number('maxTokens'), 32);
    assert.deepEqual(problems, []);
  });

  it('caps threads at the cores, with a message', () => {
    for (const [value, cores, expected] of [
      [64, 2, 2],
      [4096, 2, 2],
      [2, 2, 2],
      [0, 2, 0],
      [3, 16, 3],
    ] as const) {
      const { settings, problems } = reader({ threads: { globalValue: value } });
      assert.equal(settings.threads('threads', cores), expected, `${value} threads on ${cores} cores`);
      assert.equal(problems.length, value > cores ? 1 : 0);
      if (value > cores) assert.equal(problems[0], `draftline.threads is ${value}, more than this machine's ${cores} cores: using ${cores}.`);
    }
    const { settings, problems } = reader({ threads: { globalValue: -3 } });
    assert.equal(settings.threads('threads', 2), 0);
    assert.match(problems[0]!, /below its minimum 0: using 0/);
  });

  it('clamps out-of-range numbers and replaces mistyped ones, one sentence each', () => {
    const { settings, problems } = reader({
      contextSize: { globalValue: 10 },
      maxTokens: { globalValue: 5000 },
      maxLines: { globalValue: 2.6 },
      debounceMs: { globalValue: 'fast' },
      maxPrefixChars: { globalValue: Number.NaN },
      'speculation.draftMinConfidence': { globalValue: 3 },
      gpuLayers: { globalValue: 'lots' },
      gpu: { globalValue: 'tpu' },
    });
    assert.equal(settings.number('contextSize'), 64);
    assert.equal(settings.number('maxTokens'), 1024);
    assert.equal(settings.number('maxLines'), 3);
    assert.equal(settings.number('debounceMs'), 150);
    assert.equal(settings.number('maxPrefixChars'), 3000);
    assert.equal(settings.number('speculation.draftMinConfidence'), 1);
    assert.equal(settings.numberOrKeyword('gpuLayers', ['auto']), 'auto');
    assert.equal(settings.choice('gpu'), 'auto');
    assert.deepEqual(problems, [
      'draftline.contextSize is 10, below its minimum 64: using 64.',
      'draftline.maxTokens is 5000, above its maximum 1024: using 1024.',
      'draftline.maxLines is 2.6, not a whole number: using 3.',
      'draftline.debounceMs is "fast", not a number: using the default 150.',
      'draftline.maxPrefixChars is null, not a number: using the default 3000.',
      'draftline.speculation.draftMinConfidence is 3, above its maximum 1: using 1.',
      'draftline.gpuLayers is "lots": expected a number or "auto"; using "auto".',
      'draftline.gpu is "tpu": expected one of auto, cuda, vulkan, metal, cpu; using "auto".',
    ]);
  });

  it('takes valid values as they are', () => {
    const { settings, problems } = reader({ gpuLayers: { globalValue: 20 }, gpu: { globalValue: 'cpu' }, contextSize: { globalValue: 8192 } });
    assert.equal(settings.numberOrKeyword('gpuLayers', ['auto']), 20);
    assert.equal(settings.choice('gpu'), 'cpu');
    assert.equal(settings.number('contextSize'), 8192);
    assert.deepEqual(problems, []);
  });

  it('the worker keeps any caller to the cores too', () => {
    assert.equal(resolveThreads(64, 2), 2);
    assert.equal(resolveThreads(0, 2), 1);
    assert.equal(resolveThreads(3, 8), 3);
  });
});

describe('model paths', () => {
  const home = path.resolve('/home/someone');
  it('resolves a relative path against the home folder, with a note', () => {
    const resolved = resolveModelPath('draftline.targetModel', 'models/coder.gguf', home);
    assert.equal(resolved.path, path.join(home, 'models/coder.gguf'));
    assert.match(resolved.note ?? '', /draftline\.targetModel is a relative path \("models\/coder\.gguf"\): Draftline reads it from your home folder/);
  });
  it('expands ~ and leaves absolute paths, hub URIs and "none" alone', () => {
    assert.deepEqual(resolveModelPath('k', '~/m.gguf', home), { path: path.join(home, 'm.gguf') });
    assert.deepEqual(resolveModelPath('k', '~', home), { path: home });
    const absolute = path.resolve('/opt/models/m.gguf');
    for (const value of [absolute, 'hf:user/repo:Q8_0', 'https://example.org/m.gguf', 'none', '']) assert.deepEqual(resolveModelPath('k', value, home), { path: value });
    assert.equal(resolveModelPath('k', '~other/m.gguf', home).path, path.join(home, '~other/m.gguf'));
  });
});

describe('the backend and its server', () => {
  it('a workspace cannot switch the backend, point it at a server, or send more of the code there', () => {
    const { settings, problems } = reader({
      backend: { workspaceValue: 'openai-compatible' },
      'server.endpoint': { workspaceValue: 'https://collector.example' },
      'server.model': { workspaceValue: 'theirs' },
      'server.caFile': { workspaceValue: '/tmp/their-ca.pem' },
      'server.sendExtraContext': { workspaceValue: true },
    });
    const read = backendSettingsFrom(settings);
    assert.deepEqual(read, { kind: 'local', endpoint: '', model: '', caFile: '', timeoutMs: DECLARATIONS['draftline.server.timeoutMs']!.default, sendExtraContext: false, sharedWorker: true });
    assert.equal(problems.length, 5, problems.join('\n'));
    assert.ok(problems.every((p) => /workspace's settings, which Draftline ignores/.test(p)));
  });

  it("the user's own settings choose it", () => {
    const { settings, problems } = reader({
      backend: { globalValue: 'llama-server' },
      'server.endpoint': { globalValue: ' https://gpu-box:8080 ' },
      'server.sendExtraContext': { globalValue: true },
    });
    const read = backendSettingsFrom(settings);
    assert.equal(read.kind, 'llama-server');
    assert.equal(read.endpoint, 'https://gpu-box:8080');
    assert.equal(read.sendExtraContext, true);
    assert.deepEqual(problems, []);
  });

  it('every backend and server setting is machine scoped', () => {
    const keys = Object.keys(DECLARATIONS).filter((k) => k === 'draftline.backend' || k.startsWith('draftline.sharedWorker') || k.startsWith('draftline.server.'));
    assert.ok(keys.length >= 6, keys.join());
    for (const key of keys) assert.equal(DECLARATIONS[key]!.scope, 'machine', key);
  });

  it('the defaults the engine and the worker start from are the declared ones', () => {
    for (const [key, value] of Object.entries(DEFAULT_SPECULATION)) assert.equal(value, DECLARATIONS[`draftline.speculation.${key}`]!.default, key);
    assert.equal(DEFAULT_ENGINE_SETTINGS.maxTokens, DECLARATIONS['draftline.maxTokens']!.default);
    assert.deepEqual(DEFAULT_ENGINE_SETTINGS.disabledLanguages, DECLARATIONS['draftline.disabledLanguages']!.default);
    assert.equal(DEFAULT_ENGINE_SETTINGS.maxPrefixChars, DECLARATIONS['draftline.maxPrefixChars']!.default);
  });
});

describe('reloading the models on a settings change (#27 item 3)', () => {
  const EMBEDDED = { target: '/ext/models/draftline-code-target.gguf', draft: '/ext/models/draftline-code-draft.gguf' };
  /** What the controller compares: the load inputs as read from these settings. */
  function inputs(values: Record<string, SettingValues>): LoadInputs {
    const { settings } = reader(values);
    const backend = backendSettingsFrom(settings);
    return { backend, models: backend.kind === 'local' ? modelSettingsFrom(settings, EMBEDDED, '/home/u', 2) : null };
  }
  const user = { threads: { globalValue: 2 }, contextSize: { globalValue: 4096 } };
  /** The decision for a save of a settings file that mentions these keys, with these settings now in effect. */
  const needsReload = (loaded: LoadInputs | null, now: LoadInputs, saved = ['threads', 'contextSize', 'targetModel', 'gpu', 'backend']) =>
    reloadOnChange(
      (key) => saved.some((k) => key === `draftline.${k}`),
      loaded,
      () => now,
    );

  it('saving a workspace settings file that changes no effective value does not reload', () => {
    const loaded = inputs(user);
    // The same values written into .vscode/settings.json (VS Code reports each key as changed).
    assert.equal(needsReload(loaded, inputs({ threads: { globalValue: 2, workspaceValue: 2 }, contextSize: { globalValue: 4096, workspaceValue: 4096 } })), false);
    // A workspace value of a machine-scoped setting is not read: nothing to reload for.
    assert.equal(needsReload(loaded, inputs({ ...user, threads: { globalValue: 2, workspaceValue: 64 }, targetModel: { workspaceValue: '/tmp/other.gguf' } })), false);
    // Only settings the engine reads live (maxTokens) changed.
    assert.equal(needsReload(loaded, inputs({ ...user, maxTokens: { workspaceValue: 64 } }), ['maxTokens']), false);
    // The default written out explicitly.
    assert.equal(needsReload(inputs({}), inputs({ gpu: { globalValue: DECLARATIONS['draftline.gpu']!.default } })), false);
  });

  it('reloads when a setting the load depends on changed, before any load, and after a failed one', () => {
    const loaded = inputs(user);
    assert.equal(needsReload(loaded, inputs({ ...user, threads: { globalValue: 1 } })), true);
    assert.equal(needsReload(loaded, inputs({ ...user, targetModel: { globalValue: '/models/other.gguf' } })), true);
    assert.equal(needsReload(loaded, inputs({ ...user, backend: { globalValue: 'llama-server' } })), true);
    assert.equal(needsReload(null, loaded), true);
    // The target's KV context follows whether a proposer offers token trees.
    assert.equal(needsReload(loaded, inputs({ ...user, 'speculation.suffix': { globalValue: true } }), ['speculation.suffix']), true);
    assert.equal(needsReload(loaded, inputs({ ...user, 'speculation.suffix': { globalValue: false } }), ['speculation.suffix']), false);
  });
});
