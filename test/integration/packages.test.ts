// Every per-platform .vsix (`npm run package -- --target all`, issue #24) holds exactly what its
// platform needs: node-llama-cpp's binary packages for that target and no other (checked down to the
// binaries' own headers: ELF / PE / Mach-O and the CPU they are for), the embedded v3 models, the
// bundles, nothing from test/, bench/, testbed/, .cache/, src/ or docs/; its manifest names its target; and the
// node-llama-cpp inside it, asked as draftline.gpu makes the worker ask (llamaGpuOption), finds the
// binary in the package.
//
// The packages are built once per change of their inputs and kept in .cache/package-test/<hash>/
// (a fresh build of all six takes minutes on 2 cores; the other platforms' binaries come from the npm
// registry with `npm pack`, cached in .cache/prebuilt/). The .vsix files are read with yauzl, the zip
// reader vsce itself depends on.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { llamaGpuOption } from '../../src/inference/llamaRuntime';
import type { ModelSettings } from '../../src/shared/settings';
// @ts-expect-error: a plain ES module of the scripts, without type declarations
import { ALL_TARGETS, TARGETS, binariesFor, vsixName } from '../../scripts/platforms.mjs';

const ROOT = path.resolve(__dirname, '../..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

interface ZipEntry {
  fileName: string;
  uncompressedSize: number;
}
interface ZipFile {
  readEntry(): void;
  on(event: 'entry', listener: (entry: ZipEntry) => void): void;
  on(event: 'end' | 'close', listener: () => void): void;
  on(event: 'error', listener: (error: Error) => void): void;
  openReadStream(entry: ZipEntry, callback: (error: Error | null, stream: NodeJS.ReadableStream) => void): void;
  close(): void;
}
const yauzl = createRequire(path.join(ROOT, 'node_modules', '@vscode', 'vsce', 'package.json'))('yauzl') as {
  open(file: string, options: { lazyEntries: boolean; autoClose?: boolean }, callback: (error: Error | null, zip: ZipFile) => void): void;
};

interface Vsix {
  entries: Map<string, ZipEntry>;
  /** The first bytes (or all, up to `limit`) of an entry. */
  read(name: string, limit?: number): Promise<Buffer>;
  /** Writes the entries under `prefix` into `dir` (paths kept). */
  extract(prefix: string, dir: string): Promise<void>;
  close(): void;
}

function openVsix(file: string): Promise<Vsix> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: false }, (error, zip) => {
      if (error) return reject(error);
      const entries = new Map<string, ZipEntry>();
      zip.on('error', reject);
      zip.on('entry', (entry) => {
        entries.set(entry.fileName, entry);
        zip.readEntry();
      });
      zip.on('end', () => {
        const read = (name: string, limit = Number.POSITIVE_INFINITY) =>
          new Promise<Buffer>((res, rej) => {
            const entry = entries.get(name);
            if (!entry) return rej(new Error(`${name} is not in ${file}`));
            zip.openReadStream(entry, (err, stream) => {
              if (err) return rej(err);
              const chunks: Buffer[] = [];
              let size = 0;
              stream.on('data', (chunk: Buffer) => {
                if (size < limit) chunks.push(chunk);
                size += chunk.length;
              });
              stream.on('end', () => res(Buffer.concat(chunks).subarray(0, limit)));
              stream.on('error', rej);
            });
          });
        const extract = async (prefix: string, dir: string) => {
          for (const name of entries.keys()) {
            if (!name.startsWith(prefix) || name.endsWith('/')) continue;
            const to = path.join(dir, name);
            fs.mkdirSync(path.dirname(to), { recursive: true });
            fs.writeFileSync(to, await read(name));
          }
        };
        resolve({ entries, read, extract, close: () => zip.close() });
      });
      zip.readEntry();
    });
  });
}

/** The inputs of the packages: a change to any of them builds the six again. */
function inputsHash(): string {
  const hash = createHash('sha256');
  const add = (rel: string) => {
    const file = path.join(ROOT, rel);
    if (!fs.existsSync(file)) return;
    if (fs.statSync(file).isDirectory()) {
      for (const name of fs.readdirSync(file).sort()) add(path.join(rel, name));
      return;
    }
    hash.update(rel).update(fs.readFileSync(file));
  };
  for (const rel of [
    'package.json',
    'package-lock.json',
    'esbuild.mjs',
    'scripts/package.mjs',
    'scripts/platforms.mjs',
    'scripts/build-native.mjs',
    'scripts/llamaSource.mjs',
    '.vscodeignore',
    'src',
    'README.md',
    'LICENSE',
    'CHANGELOG.md',
    'media',
    'models/README.md',
  ])
    add(rel);
  for (const model of ['draftline-code-target.gguf', 'draftline-code-draft.gguf']) {
    const st = fs.statSync(path.join(ROOT, 'models', model));
    hash.update(`${model} ${st.size} ${st.mtimeMs}`);
  }
  return hash.digest('hex').slice(0, 16);
}

/** What a native binary is for, from its header: the OS family and the CPU. */
function binaryKind(head: Buffer): { os: 'linux' | 'win' | 'mac'; arch: 'x64' | 'arm64' } | string {
  if (head.readUInt32BE(0) === 0x7f454c46) {
    const machine = head.readUInt16LE(18);
    return { os: 'linux', arch: machine === 0x3e ? 'x64' : machine === 0xb7 ? 'arm64' : (`ELF machine ${machine}` as never) };
  }
  if (head.toString('latin1', 0, 2) === 'MZ') {
    const pe = head.readUInt32LE(0x3c);
    const machine = head.readUInt16LE(pe + 4);
    return { os: 'win', arch: machine === 0x8664 ? 'x64' : machine === 0xaa64 ? 'arm64' : (`PE machine ${machine.toString(16)}` as never) };
  }
  if (head.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = head.readUInt32LE(4);
    return { os: 'mac', arch: cpu === 0x01000007 ? 'x64' : cpu === 0x0100000c ? 'arm64' : (`Mach-O cpu ${cpu.toString(16)}` as never) };
  }
  return `unknown header ${head.subarray(0, 4).toString('hex')}`;
}

const NATIVE = /\.(node|so|dll|dylib|exe|lib)$/;
const OUT = path.join(ROOT, '.cache', 'package-test');
let dir = '';
let skipReason: string | false = false;

describe('per-platform packages (npm run package -- --target all)', { timeout: 30 * 60_000 }, () => {
  before(() => {
    dir = path.join(OUT, inputsHash());
    const files = ALL_TARGETS.map((t: string) => path.join(dir, vsixName(manifest, t)));
    if (files.every((f: string) => fs.existsSync(f))) return;
    fs.rmSync(OUT, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    const built = spawnSync(process.execPath, ['scripts/package.mjs', '--target', 'all', '--out', dir], { cwd: ROOT, encoding: 'utf8' });
    if (built.status !== 0) {
      const reachable = spawnSync('npm', ['ping', '--loglevel=error'], { encoding: 'utf8', timeout: 30_000 }).status === 0;
      if (!reachable && /npm pack/.test(built.stdout + built.stderr)) {
        skipReason = 'the npm registry is unreachable: the other platforms’ binary packages cannot be fetched with npm pack';
        return;
      }
      assert.fail(`npm run package -- --target all failed:\n${built.stdout.slice(-3000)}\n${built.stderr.slice(-3000)}`);
    }
  });
  after(() => undefined);

  for (const target of ALL_TARGETS as string[]) {
    it(`${target}: its binaries only, the models, the bundles, its manifest, and node-llama-cpp finds its binary`, async (t) => {
      if (skipReason) return t.skip(skipReason);
      const spec = TARGETS[target] as { platform: 'linux' | 'win' | 'mac'; arch: 'x64' | 'arm64'; builtInGpu?: string };
      const { packages, gpu } = binariesFor(target) as { packages: string[]; gpu: string };
      const file = path.join(dir, vsixName(manifest, target));
      const vsix = await openVsix(file);
      let unpacked = '';
      try {
        const names = [...vsix.entries.keys()];
        // The manifest names the target (VS Code installs a package only on its own platform).
        const xml = (await vsix.read('extension.vsixmanifest')).toString('utf8');
        assert.match(xml, new RegExp(`<Identity [^>]*TargetPlatform="${target}"`));
        const pkg = JSON.parse((await vsix.read('extension/package.json')).toString('utf8'));
        assert.equal(pkg.name, manifest.name);
        assert.equal(pkg.main, './dist/extension.js');

        // The extension's own files: bundles, the v3 models, icon, README, CHANGELOG, LICENSE.
        for (const needed of [
          'extension/dist/extension.js',
          'extension/dist/worker.js',
          'extension/models/draftline-code-target.gguf',
          'extension/models/draftline-code-draft.gguf',
          'extension/media/icon.png',
          'extension/readme.md',
          'extension/changelog.md',
          'extension/LICENSE.txt',
        ]) {
          assert.ok(vsix.entries.has(needed), `${needed} missing from ${target}`);
        }
        assert.equal(vsix.entries.get('extension/models/draftline-code-target.gguf')!.uncompressedSize, fs.statSync(path.join(ROOT, 'models/draftline-code-target.gguf')).size);
        const top = new Set(names.filter((n) => n.startsWith('extension/')).map((n) => n.split('/')[1]));
        for (const never of ['test', 'bench', 'testbed', '.cache', 'src', 'docs', 'scripts', 'test-output', '.git']) assert.ok(!top.has(never), `${target} carries ${never}/`);
        const stray = names.filter((n) => /\.(ts|map)$/.test(n) || /\/models\/tiny-/.test(n) || /desktop-suite/.test(n) || /gitRelease\.bundle$/.test(n) || /\.vsix$/.test(n));
        assert.deepEqual(stray, [], `${target} carries files it does not need`);

        // Exactly the target's binary packages, and every native file in them built for the target.
        const binaryPackages = new Set(names.map((n) => /^extension\/node_modules\/@node-llama-cpp\/([^/]+)\//.exec(n)?.[1]).filter(Boolean));
        assert.deepEqual([...binaryPackages].sort(), [...packages].sort(), `${target}'s node-llama-cpp binary packages`);
        const natives = names.filter((n) => NATIVE.test(n) && !n.endsWith('.lib'));
        assert.ok(natives.length > 0);
        for (const native of natives) {
          // Every native file is built for the target (its own header says so), node-llama-cpp's in the target's binary packages.
          if (native.startsWith('extension/node_modules/@node-llama-cpp/')) {
            assert.ok(
              packages.some((p) => native.startsWith(`extension/node_modules/@node-llama-cpp/${p}/bins/${p}/`)),
              `${native} in ${target} is no binary of its packages`,
            );
          }
          const kind = binaryKind(await vsix.read(native, 4096));
          assert.deepEqual(kind, { os: spec.platform, arch: spec.arch }, `${native} in the ${target} package`);
        }
        // Draftline's own native addon is built for Linux x64 only.
        if (target !== 'linux-x64') assert.ok(!vsix.entries.has('extension/dist/draftline-native.node'), `${target} carries the Linux x64 addon`);
        else if (fs.existsSync(path.join(ROOT, 'dist/draftline-native.node')))
          assert.ok(vsix.entries.has('extension/dist/draftline-native.node'), 'linux-x64 carries the native addon it was built with');
        // The GPU backend each carries, by its library.
        const gpuLibrary = { vulkan: spec.platform === 'win' ? /ggml-vulkan\.dll$/ : /libggml-vulkan\.so$/, metal: /libggml-metal\.so$|ggml-metal/, none: null }[gpu];
        if (gpuLibrary)
          assert.ok(
            natives.some((n) => gpuLibrary.test(n)),
            `${target}: no ${gpu} library`,
          );
        for (const other of ['vulkan', 'metal', 'cuda'].filter((g) => g !== gpu)) assert.ok(!natives.some((n) => n.includes(`ggml-${other}`)), `${target} carries a ${other} library`);

        // node-llama-cpp in the package, asked for each draftline.gpu value the way the worker asks
        // (llamaGpuOption; "auto" tries the detected GPUs, then the CPU), imports a binary inside the package.
        // Outside the repository: a binary package missing from the .vsix must not be found in ours by Node's walk up the folders.
        unpacked = fs.mkdtempSync(path.join(os.tmpdir(), `draftline-${target}-`));
        await vsix.extract('extension/node_modules/', unpacked);
        const lib = path.join(unpacked, 'extension', 'node_modules', 'node-llama-cpp', 'dist');
        const { getPrebuiltBinaryPath } = await import(pathToFileURL(path.join(lib, 'bindings/utils/compileLLamaCpp.js')).href);
        const { getBuildFolderNameForBuildOptions } = await import(pathToFileURL(path.join(lib, 'bindings/utils/getBuildFolderNameForBuildOptions.js')).href);
        const { builtinLlamaCppRelease } = await import(pathToFileURL(path.join(lib, 'bindings/utils/binariesGithubRelease.js')).href);
        const { builtinLlamaCppGitHubRepo } = await import(pathToFileURL(path.join(lib, 'config.js')).href);
        const find = async (llamaGpu: string | false) => {
          const buildOptions = {
            platform: spec.platform,
            arch: spec.arch,
            gpu: llamaGpu,
            customCmakeOptions: new Map(),
            llamaCpp: { repo: builtinLlamaCppGitHubRepo, release: builtinLlamaCppRelease },
          };
          const folder = await getBuildFolderNameForBuildOptions(buildOptions);
          return (await getPrebuiltBinaryPath(buildOptions, folder.withoutCustomCmakeOptions)) as { binaryPath: string } | null;
        };
        const nodePlatform = { linux: 'linux', win: 'win32', mac: 'darwin' }[spec.platform] as NodeJS.Platform;
        const settings: ModelSettings['gpu'][] = ['cpu', ...(gpu === 'none' ? [] : [gpu as ModelSettings['gpu']])];
        for (const setting of settings) {
          const found = await find(llamaGpuOption(setting, nodePlatform, spec.arch));
          assert.ok(found, `${target}, draftline.gpu ${setting}: node-llama-cpp finds no binary in the package`);
          const rel = path.relative(unpacked, found.binaryPath).split(path.sep).join('/');
          // The GPU's own package (linux-x64-vulkan…), else the CPU one (macOS arm64's is Metal either way).
          const expected = packages.find((p) => p.endsWith(`-${setting}`)) ?? packages[0];
          assert.equal(rel, `extension/node_modules/@node-llama-cpp/${expected}/bins/${expected}/llama-addon.node`, `${target}, draftline.gpu ${setting}`);
        }
        // A GPU backend the package does not carry is not found: node-llama-cpp's "auto" then falls back to the next (the CPU).
        for (const absent of ['cuda', 'vulkan'].filter((g) => g !== gpu && spec.platform !== 'mac')) assert.equal(await find(absent), null, `${target} finds a ${absent} binary`);
      } finally {
        vsix.close();
        if (unpacked) fs.rmSync(unpacked, { recursive: true, force: true });
      }
    });
  }

  it('the sizes, for the record', (t) => {
    if (skipReason) return t.skip(skipReason);
    for (const target of ALL_TARGETS as string[]) t.diagnostic(`${target}: ${(fs.statSync(path.join(dir, vsixName(manifest, target))).size / 1e6).toFixed(1)} MB`);
  });
});
