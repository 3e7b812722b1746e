// Next-edit models (issue #39, item 7): the catalog entries and what they are pinned to, the
// recommendation by memory, the settings, the format a model's GGUF says, whether it shares the
// completion target's file, and its download over a loopback hub (pinned sha256 checked).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import manifest from '../../package.json';
import { nextEditSettingsFrom } from '../../src/settings/declaredSettings';
import { SettingsReader, type SettingDeclaration, type SettingValues } from '../../src/settings/settingsReader';
import { readGgufMetadata } from '../../src/gguf/ggufReader';
import { downloadModels } from '../../src/inference/modelDownloader';
import { modelFileUrl } from '../../src/inference/modelVerification';
import { CATALOG, catalogModelByUri, NEXT_EDIT_CATALOG, NEXT_EDIT_CONTEXT, recommendNextEditModel } from '../../src/models/catalog';
import { DownloadError, describeProvenance, downloadedPath, readDownloadIndex } from '../../src/models/downloadIndex';
import { planNextEditModel, sameModelFile } from '../../src/models/nextEditModel';
import { formatFromName, identityFromGguf, nextEditFormatOf } from '../../src/nextEdit/modelFormat';
import { type ServedFile, sha256Of, startModelServer } from '../support/modelServer';
import { ensureTestModel } from '../../testbed/models';

const ROOT = path.resolve(__dirname, '../..');
const OUT = path.join(ROOT, 'test-output/next-edit-models');
const GB = 1e9;
const DECLARATIONS = manifest.contributes.configuration.properties as Record<string, SettingDeclaration>;

describe('next-edit catalog entries', () => {
  const entries = Object.values(NEXT_EDIT_CATALOG);

  it('each is pinned by repository commit and sha256, with its size, licence and layout', () => {
    for (const m of entries) {
      assert.match(m.uri, /^hf:[^/]+\/[^/]+\/[^#]+\.gguf#[0-9a-f]{40}$/, m.id);
      assert.ok(m.uri.endsWith(`#${m.revision}`), m.id);
      assert.match(m.sha256, /^[0-9a-f]{64}$/, m.id);
      assert.ok(Number.isInteger(m.sizeBytes) && m.sizeBytes > 1e9, m.id);
      assert.equal(m.licence, 'Apache-2.0', m.id);
      assert.equal(catalogModelByUri(m.uri, { exact: true }), m, 'the downloader finds its pin');
    }
    assert.equal(NEXT_EDIT_CATALOG.sweep15.format, 'sweep');
    assert.equal(NEXT_EDIT_CATALOG.zeta7.format, 'zeta');
    // Ids unique across the whole catalog.
    const ids = [...Object.values(CATALOG), ...entries].map((m) => m.id);
    assert.equal(new Set(ids).size, ids.length);
  });

  it("Sweep's entry is its official Q8_0 file (from its model card's repository)", () => {
    const sweep = NEXT_EDIT_CATALOG.sweep15;
    assert.equal(
      modelFileUrl(sweep.uri, 'https://huggingface.co/'),
      'https://huggingface.co/sweepai/sweep-next-edit-1.5B/resolve/409016591c6c1a94f545f22328a85a3516118f34/sweep-next-edit-1.5b.q8_0.v2.gguf?download=true',
    );
    assert.equal(sweep.sizeBytes, 1_537_269_856);
    assert.equal(sweep.sha256, '1321ea5e5d7529e60f9770c6a0b3a965f89542d16cf4ae51bab267f6a88150da');
  });

  it('the memory figure is the weights, the KV cache of a next-edit context and the compute buffers', () => {
    // Qwen2.5-Coder 1.5B: 28 layers x 2 KV heads x 128; 7B: 28 x 4 x 128 (f16 K and V).
    assert.equal(NEXT_EDIT_CATALOG.sweep15.memoryBytes, 1_537_269_856 + 28 * 2 * 128 * 4 * NEXT_EDIT_CONTEXT + 0.4 * GB);
    assert.equal(NEXT_EDIT_CATALOG.zeta7.memoryBytes, 4_683_071_456 + 28 * 4 * 128 * 4 * NEXT_EDIT_CONTEXT + 0.4 * GB);
    for (const m of entries) assert.ok(m.memoryBytes < m.sizeBytes * 1.5, `${m.id}: ${m.memoryBytes}`);
  });
});

describe('recommended next-edit model for a machine', () => {
  const pair15 = [CATALOG.target15, CATALOG.draft05];
  const cases: [string, { vramBytes: number; ramBytes: number; unifiedMemory?: boolean }, (typeof CATALOG.target15)[], string, string | undefined, RegExp][] = [
    ['no GPU, 8 GB RAM', { vramBytes: 0, ramBytes: 8 * GB }, [], 'sweep', undefined, /tight/],
    ['no GPU, 32 GB RAM', { vramBytes: 0, ramBytes: 32 * GB }, [], 'sweep', undefined, /^fits in 32 GB of RAM and no GPU$/],
    ['no GPU, 128 GB RAM (a 7B is still too slow on a CPU)', { vramBytes: 0, ramBytes: 128 * GB }, [], 'sweep', undefined, /^fits/],
    ['4 GB GPU', { vramBytes: 4 * GB, ramBytes: 16 * GB }, [], 'sweep', undefined, /^fits in 4 GB of GPU memory$/],
    ['8 GB GPU', { vramBytes: 8 * GB, ramBytes: 32 * GB }, [], 'sweep', 'zeta', /^fits/],
    ['8 GB GPU next to the 1.5B pair', { vramBytes: 8 * GB, ramBytes: 32 * GB }, pair15, 'sweep', undefined, /next to the completion models$/],
    ['12 GB GPU next to the 1.5B pair', { vramBytes: 12 * GB, ramBytes: 32 * GB }, pair15, 'sweep', 'zeta', /^fits/],
    ['16 GB unified memory', { vramBytes: 16 * GB, ramBytes: 16 * GB, unifiedMemory: true }, [], 'sweep', 'zeta', /^fits/],
    ['2 GB GPU (tight)', { vramBytes: 2 * GB, ramBytes: 8 * GB }, [], 'sweep', undefined, /the smallest next-edit model; 2 GB of GPU memory is tight/],
  ];
  for (const [name, machine, alongside, format, alternative, reason] of cases) {
    it(`${name} -> ${format}${alternative ? ` (or ${alternative})` : ''}`, () => {
      const r = recommendNextEditModel(machine, alongside);
      assert.equal(r.model.format, format);
      assert.equal(r.alternative?.model.format, alternative);
      assert.match(r.reason, reason);
    });
  }

  it('the next-edit model that is the completion target counts once (it is loaded once)', () => {
    const machine = { vramBytes: 5 * GB, ramBytes: 16 * GB };
    const sweepAsTarget = NEXT_EDIT_CATALOG.sweep15;
    // 5 GB: Sweep (2.2 GB) + the 0.5B draft + headroom fit; beside a 1.5B target of its own they do not.
    assert.match(recommendNextEditModel(machine, [sweepAsTarget, CATALOG.draft05]).reason, /^fits/);
    assert.match(recommendNextEditModel(machine, [CATALOG.target15, CATALOG.draft05]).reason, /tight/);
  });
});

/** A configuration as VS Code would hand it over (as in settings.test.ts). */
function reader(values: Record<string, SettingValues>) {
  const problems: string[] = [];
  const source = {
    inspect: <T>(key: string) => ({ defaultValue: DECLARATIONS[`draftline.${key}`]?.default, ...values[key] }) as SettingValues<T>,
    get: <T>(key: string) => {
      const v = values[key] ?? {};
      return (v.workspaceFolderValue ?? v.workspaceValue ?? v.globalValue ?? DECLARATIONS[`draftline.${key}`]?.default) as T;
    },
  };
  return { settings: new SettingsReader('draftline', DECLARATIONS, source, (m) => problems.push(m)), problems };
}

describe('next-edit settings', () => {
  it('are declared machine-scoped like the completion models, with the layouts the contract knows', () => {
    for (const key of ['draftline.nextEdit.model', 'draftline.nextEdit.format']) assert.equal(DECLARATIONS[key]?.scope, 'machine', key);
    assert.equal(DECLARATIONS['draftline.nextEdit.model']!.default, '');
    assert.deepEqual(DECLARATIONS['draftline.nextEdit.format']!.enum, ['auto', 'sweep', 'zeta']);
    assert.equal(DECLARATIONS['draftline.nextEdit.format']!.default, 'auto');
    // The editor's switch: off until the user picks a next-edit model and turns it on (no demo model ships).
    assert.equal(DECLARATIONS['draftline.nextEdit.enabled']!.default, false);
  });

  it('nothing set: no model, layout from the model', () => {
    const { settings, problems } = reader({});
    assert.deepEqual(
      nextEditSettingsFrom(settings, '/home/me', (m) => problems.push(m)),
      { model: '', format: 'auto' },
    );
    assert.deepEqual(problems, []);
  });

  it('a hub URI or URL passes as it is; a path resolves like the completion models', () => {
    const uri = NEXT_EDIT_CATALOG.sweep15.uri;
    const read = (model: unknown) => {
      const { settings, problems } = reader({ 'nextEdit.model': { globalValue: model } });
      return { ...nextEditSettingsFrom(settings, '/home/me', (m) => problems.push(m)), problems };
    };
    assert.equal(read(` ${uri} `).model, uri);
    assert.equal(read('https://example.org/m.gguf').model, 'https://example.org/m.gguf');
    assert.equal(read('/models/sweep.gguf').model, '/models/sweep.gguf');
    assert.equal(read('~/models/sweep.gguf').model, '/home/me/models/sweep.gguf');
    assert.equal(read('none').model, '');
    const relative = read('models/sweep.gguf');
    assert.equal(relative.model, '/home/me/models/sweep.gguf');
    assert.match(relative.problems[0]!, /^draftline\.nextEdit\.model is a relative path/);
    const wrong = read(42);
    assert.equal(wrong.model, '');
    assert.match(wrong.problems[0]!, /draftline\.nextEdit\.model is 42, not a path or URI/);
  });

  it('a workspace cannot choose the model or the layout (it would download and run what it likes)', () => {
    const { settings, problems } = reader({ 'nextEdit.model': { workspaceValue: 'https://evil.example/m.gguf' }, 'nextEdit.format': { workspaceValue: 'zeta' } });
    assert.deepEqual(nextEditSettingsFrom(settings, '/home/me'), { model: '', format: 'auto' });
    assert.equal(problems.length, 2);
    assert.match(problems[0]!, /draftline\.nextEdit\.model is set in this workspace's settings, which Draftline ignores/);
  });

  it('an unknown layout falls back to auto, and says so', () => {
    const { settings, problems } = reader({ 'nextEdit.format': { globalValue: 'instinct' } });
    assert.equal(nextEditSettingsFrom(settings, '/home/me').format, 'auto');
    assert.deepEqual(problems, ['draftline.nextEdit.format is "instinct": expected one of auto, sweep, zeta; using "auto".']);
  });
});

describe('the prompt layout a next-edit model was trained on', () => {
  const names: [string, 'sweep' | 'zeta' | null][] = [
    ['sweep-next-edit-1.5b.q8_0.v2.gguf', 'sweep'],
    ['sweep-next-edit-0.5b.q8_0.gguf', 'sweep'],
    ['Sweep Next Edit 1.5B', 'sweep'],
    ['sweep_next_edit', 'sweep'],
    ['sweep-next-edit-v2-7B-Q5_K_M', 'sweep'],
    ['zed-industries_zeta-Q4_K_M.gguf', 'zeta'],
    ['zeta-Q8_0.gguf', 'zeta'],
    ['zeta.Q5_K_M.gguf', 'zeta'],
    ['Zeta', 'zeta'],
    ['instinct-Q4_K_M.gguf', null],
    ['Instinct', null],
    ['zeta-2.1.Q8_0.gguf', null],
    ['zed-industries_zeta-2-Q4_K_L.gguf', null],
    ['Qwen2.5 Coder 1.5B', null],
    ['qwen2.5-coder-1.5b-q8_0.gguf', null],
    ['zetamodel', null],
    ['sweep', null],
    ['', null],
  ];
  for (const [name, format] of names) it(`${JSON.stringify(name)} -> ${format}`, () => assert.equal(formatFromName(name), format));

  it('metadata before the file name; a forced layout wins', () => {
    assert.equal(nextEditFormatOf({ name: 'Qwen2.5 Coder 1.5B', file: '/m/sweep-next-edit-1.5b.q8_0.v2.gguf' }), 'sweep', 'a generic name leaves it to the file');
    assert.equal(nextEditFormatOf({ name: 'Zeta', file: '/m/sweep-next-edit.gguf' }), 'zeta', 'the name the publisher wrote comes first');
    assert.equal(nextEditFormatOf({ basename: 'sweep-next-edit', file: 'C:\\models\\zeta.gguf' }), 'sweep');
    assert.equal(nextEditFormatOf({ name: 'Zeta 2', file: '/m/zeta.gguf' }), null, 'Zeta 2 is known and has no layout of ours');
    assert.equal(nextEditFormatOf({ file: 'C:\\models\\zed-industries_zeta-Q4_K_M.gguf' }), 'zeta');
    assert.equal(nextEditFormatOf({ name: 'My fine-tune', file: '/m/mine.gguf' }), null);
    assert.equal(nextEditFormatOf({ name: 'My fine-tune', file: '/m/mine.gguf' }, 'zeta'), 'zeta');
    assert.equal(nextEditFormatOf({ name: 'Sweep Next Edit' }, 'zeta'), 'zeta');
    assert.equal(nextEditFormatOf({ name: 'Sweep Next Edit' }, 'auto'), 'sweep');
    assert.equal(nextEditFormatOf({}), null);
  });

  it("read from a GGUF's own metadata (general.name), as src/gguf/ggufReader.ts reads it", async () => {
    const file = await ensureTestModel('nes-format-sweep', { seed: 71, dModel: 32, nLayers: 1, nHeads: 2, ffn: 64, name: 'Sweep Next Edit 1.5B' });
    const meta = await readGgufMetadata(file);
    const identity = identityFromGguf(meta.kv, file);
    assert.equal(identity.name, 'Sweep Next Edit 1.5B');
    assert.equal(nextEditFormatOf(identity), 'sweep');
    // node-llama-cpp's metadata is a plain record.
    assert.equal(nextEditFormatOf(identityFromGguf({ 'general.name': 'Qwen2.5 Coder', 'general.basename': 'zeta' })), 'zeta');
    assert.equal(identityFromGguf({ 'general.name': 7 }).name, undefined);
  });
});

describe('the next-edit model and the completion target: one file is loaded once', () => {
  it('same resolved path -> share the target; another file -> its own; none -> none', () => {
    assert.deepEqual(planNextEditModel('/m/sweep.gguf', '/m/sweep.gguf', { platform: 'linux' }), { kind: 'shareTarget', file: '/m/sweep.gguf' });
    assert.deepEqual(planNextEditModel('/m/x/../sweep.gguf', '/m/sweep.gguf', { platform: 'linux' }), { kind: 'shareTarget', file: '/m/sweep.gguf' });
    assert.deepEqual(planNextEditModel('/m/sweep.gguf', '/m/qwen.gguf', { platform: 'linux' }), { kind: 'separate', file: '/m/sweep.gguf' });
    assert.deepEqual(planNextEditModel('  ', '/m/qwen.gguf'), { kind: 'none' });
    assert.equal(sameModelFile('/m/Sweep.gguf', '/m/sweep.gguf', { platform: 'linux' }), false, 'case matters on Linux');
    assert.equal(sameModelFile('C:\\M\\Sweep.gguf', 'c:\\m\\sweep.gguf', { platform: 'win32' }), true);
    assert.equal(sameModelFile('/m/Sweep.gguf', '/m/sweep.gguf', { platform: 'darwin' }), true);
    assert.equal(sameModelFile('', ''), false);
  });

  it('sees through symbolic links when given realpath', () => {
    const links: Record<string, string> = { '/home/me/models/current.gguf': '/data/sweep.gguf' };
    const realpath = (f: string) => links[f] ?? f;
    assert.equal(planNextEditModel('/home/me/models/current.gguf', '/data/sweep.gguf', { platform: 'linux', realpath }).kind, 'shareTarget');
    const missing = () => {
      throw new Error('ENOENT');
    };
    assert.equal(planNextEditModel('/a.gguf', '/a.gguf', { platform: 'linux', realpath: missing }).kind, 'shareTarget');
  });
});

describe('downloading a next-edit model from a loopback hub', () => {
  const sweep = NEXT_EDIT_CATALOG.sweep15;
  const sweepRoute = `/sweepai/sweep-next-edit-1.5B/resolve/${sweep.revision}/sweep-next-edit-1.5b.q8_0.v2.gguf`;
  const testUri = 'hf:tester/sweep-next-edit-tiny/sweep-next-edit-tiny.q8_0.gguf';
  const routes: Record<string, ServedFile> = {};
  let server: Awaited<ReturnType<typeof startModelServer>>;
  let model: string;
  const leftovers = (d: string) => (fs.existsSync(d) ? fs.readdirSync(d).filter((f) => f !== 'downloads.json') : []);

  before(async () => {
    fs.rmSync(OUT, { recursive: true, force: true });
    model = await ensureTestModel('nes-download', { seed: 72, dModel: 64, nLayers: 2, nHeads: 4, ffn: 128, name: 'Sweep Next Edit tiny' });
    routes['/tester/sweep-next-edit-tiny/resolve/main/sweep-next-edit-tiny.q8_0.gguf'] = { file: model, hub: true };
    server = await startModelServer(routes);
  });
  after(async () => server?.close());

  it('downloads with progress, verifies the sha256 the hub announced, records it, and its layout is read from the file', async () => {
    const dir = path.join(OUT, 'ok');
    let last: { downloadedBytes: number; totalBytes: number; verifiedBytes?: number } | undefined;
    const [file] = await downloadModels([testUri], { dirPath: dir, huggingFaceEndpoint: server.url, onProgress: (p) => (last = p) });
    assert.ok(fs.readFileSync(file).equals(fs.readFileSync(model)));
    assert.equal(last?.verifiedBytes, fs.statSync(model).size, 'the hash was computed over the whole file');
    const record = readDownloadIndex(dir)[testUri];
    assert.equal(record.sha256, sha256Of(model));
    assert.equal(record.size, fs.statSync(model).size);
    assert.equal(record.verifiedBy, 'hub');
    assert.match(describeProvenance(dir, file).text, /^verified: sha256 [0-9a-f]{12}… matched the hub's/);
    assert.equal(downloadedPath(dir, testUri), file);
    const meta = await readGgufMetadata(file);
    assert.equal(nextEditFormatOf(identityFromGguf(meta.kv, file)), 'sweep');
  });

  it("the catalog's pinned sha256: a hub announcing another one is refused before a byte is fetched", async () => {
    const dir = path.join(OUT, 'announced');
    routes[sweepRoute] = { file: model, hub: true };
    const before = server.requests.length;
    await assert.rejects(downloadModels([sweep.uri], { dirPath: dir, huggingFaceEndpoint: server.url }), (e: DownloadError) => {
      assert.ok(e instanceof DownloadError);
      assert.equal(e.code, 'invalid');
      assert.equal(
        e.message,
        `${sweep.uri} changed upstream: the hub now announces sha256 ${sha256Of(model)}, Draftline pinned ${sweep.sha256} (${sweep.sizeBytes} bytes) in its catalog. Not downloaded; the pinned file is the one Draftline was tested with.`,
      );
      return true;
    });
    assert.ok(!server.requests.slice(before).some((r) => r.startsWith('GET')), server.requests.slice(before).join(' | '));
    assert.deepEqual(leftovers(dir), []);
    assert.equal(downloadedPath(dir, sweep.uri), undefined);
  });

  it("the catalog's pinned sha256: other bytes from a server that announces none are refused after hashing, and deleted", async () => {
    const dir = path.join(OUT, 'unannounced');
    routes[sweepRoute] = { file: model };
    await assert.rejects(downloadModels([sweep.uri], { dirPath: dir, huggingFaceEndpoint: server.url }), (e: DownloadError) => {
      assert.equal(e.code, 'invalid');
      // (node-llama-cpp names the local file after the URI.)
      assert.ok(
        e.message.endsWith(
          ` (${sweep.uri}) is not the file published: its sha256 is ${sha256Of(model)}, the sha256 Draftline pins in its catalog is ${sweep.sha256}. The file was deleted and nothing was loaded; downloading again fetches it whole.`,
        ),
        e.message,
      );
      assert.match(e.message, /^\S*sweep-next-edit-1\.5b\S*\.gguf \(/);
      return true;
    });
    assert.deepEqual(leftovers(dir), []);
    assert.equal(downloadedPath(dir, sweep.uri), undefined);
  });
});
