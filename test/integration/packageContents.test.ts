// Issue #41 item 6: what this machine's .vsix carries beyond what runs. node-llama-cpp ships the means to
// build llama.cpp from source (C++ sources, CMake files, toolchains, headers) and its dependencies their
// documentation; the worker only loads prebuilt binaries, so the package leaves them out (.vscodeignore).
// Then the package is proven to work without them: unpacked outside the repository (so that nothing
// missing is found in ours by Node's walk up the folders), its own worker loads its own embedded models,
// completes, and downloads a model through node-llama-cpp's downloader from a local hub.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { builtinModules } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import { CATALOG } from '../../src/models/catalog';
import { downloadInWorker } from '../../src/backend/downloadInWorker';
import { WorkerClient } from '../../src/worker/workerClient';
import { startModelServer } from '../support/modelServer';

const ROOT = path.resolve(__dirname, '../..');
const OUT = path.join(ROOT, 'test-output', 'package-contents');
/** What only building llama.cpp from source needs (node-llama-cpp's llama/ folder, node-api-headers). */
const BUILD_ONLY = [
  /^extension\/node_modules\/node-llama-cpp\/llama\/(addon|cmake|toolchains|profiles|patches)\//,
  /^extension\/node_modules\/node-llama-cpp\/llama\/CMakeLists\.txt$/,
  /^extension\/node_modules\/node-api-headers\/include\//,
  /\.(cpp|cmake)$/,
];
/** Modules only node-llama-cpp's and ipull's command lines load (the worker imports node-llama-cpp's library). */
const COMMAND_LINE_ONLY = [
  /^extension\/node_modules\/node-llama-cpp\/dist\/cli\/(cli|startCreateCli)\.js$/,
  /^extension\/node_modules\/node-llama-cpp\/dist\/cli\/commands\//,
  /^extension\/node_modules\/ipull\/dist\/(cli|settings)\//,
];
/** Imports that find nothing in a package by design: it carries its own target's node-llama-cpp binaries only; debug asks for supports-color inside a try. */
const ABSENT_BY_DESIGN = [/^@node-llama-cpp\//, /^supports-color$/];
const LICENCE = /\/(licen[cs]e)[^/]*$/i;
/** Dependencies' documentation and lock files. */
const DOCUMENTATION = (name: string) => name.startsWith('extension/node_modules/') && !LICENCE.test(name) && /(\.md|\.markdown|\/yarn\.lock|\/package-lock\.json)$/i.test(name);

describe("this machine's package carries what runs, and runs", { timeout: 10 * 60_000 }, () => {
  const vsix = path.join(OUT, 'draftline-linux-x64-cpu.vsix');
  let unpacked = '';
  let names: string[] = [];

  before(() => {
    fs.rmSync(OUT, { recursive: true, force: true });
    fs.mkdirSync(OUT, { recursive: true });
    // CPU only: the GPU binary package is a package of binaries, the same either way for what is checked here.
    execFileSync(process.execPath, ['scripts/package.mjs', '--target', 'linux-x64', '--gpu', 'none', '--out', vsix], { cwd: ROOT, stdio: 'pipe' });
    unpacked = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-package-contents-'));
    execFileSync('unzip', ['-q', vsix, '-d', unpacked]);
    const walk = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
    names = walk(unpacked).map((f) => path.relative(unpacked, f).split(path.sep).join('/'));
  });
  after(() => {
    if (unpacked) fs.rmSync(unpacked, { recursive: true, force: true });
  });

  it("shows the README's screenshots offline: each picture is in the README, as the extension's page allows (a data: URI)", () => {
    const readme = fs.readFileSync(path.join(unpacked, 'extension', 'readme.md'), 'utf8');
    const source = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const imagesOf = (text: string) => [...text.matchAll(/!\[[^\]]*\]\(([^)\s]+)\)|<img[^>]+src=["']([^"']+)["']/g)].map((m) => m[1] ?? m[2]!);
    const images = imagesOf(readme);
    const pictures = imagesOf(source);
    assert.ok(pictures.length >= 10, `the README's screenshots (${pictures.length})`);
    assert.equal(images.length, pictures.length);
    images.forEach((image, i) => {
      // VS Code's extension page: Content-Security-Policy `img-src https: data:`, relative paths unresolved.
      assert.match(image, /^data:image\/png;base64,/, `${pictures[i]} is embedded`);
      assert.ok(Buffer.from(image.slice(image.indexOf(',') + 1), 'base64').equals(fs.readFileSync(path.join(ROOT, pictures[i]!))), `${pictures[i]}: its bytes`);
    });
    // Carried once: the files themselves stay out of the package.
    assert.deepEqual(
      names.filter((n) => /^extension\/media\/screenshot-/.test(n)),
      [],
    );
    // Its other relative links (docs/, left out of the package) point at the repository.
    const links = [...readme.matchAll(/(?<!!)\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
    for (const link of links) if (!/^(\w+:|#)/.test(link)) assert.ok(names.includes(`extension/${path.posix.normalize(link.split('#')[0]!)}`), `${link} is in the package`);
  });

  it("leaves out llama.cpp's build inputs and the dependencies' documentation, keeps their licences", (t) => {
    const buildOnly = names.filter((n) => BUILD_ONLY.some((re) => re.test(n)));
    assert.deepEqual(buildOnly, [], 'files only a build of llama.cpp from source reads');
    assert.deepEqual(names.filter(DOCUMENTATION), [], "the dependencies' documentation");
    // What node-llama-cpp reads at run time from its llama/ folder stays.
    for (const kept of ['binariesGithubRelease.json', 'llama.cpp.info.json', 'package.json']) {
      assert.ok(names.includes(`extension/node_modules/node-llama-cpp/llama/${kept}`), `node-llama-cpp/llama/${kept} is kept`);
    }
    // Every licence file the staged dependencies have is in the package.
    const dependencies = new Set(names.map((n) => /^extension\/(node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(n)?.[1]).filter((d): d is string => !!d));
    const missing: string[] = [];
    for (const dependency of dependencies) {
      const source = path.join(ROOT, dependency);
      if (!fs.existsSync(source)) continue; // a binary package fetched for another platform
      for (const entry of fs.readdirSync(source)) if (LICENCE.test(`/${entry}`) && !names.includes(`extension/${dependency}/${entry}`)) missing.push(`${dependency}/${entry}`);
    }
    assert.deepEqual(missing, [], 'licence files left out');
    const js = names.filter((n) => n.endsWith('.js')).length;
    t.diagnostic(`${names.length} files (${js} .js), ${(fs.statSync(vsix).size / 1e6).toFixed(1)} MB`);
  });

  it('every import its files leave unresolved, the full install leaves unresolved too, or is in a command-line tool', () => {
    // A bare import in a packaged file must find its package in the package, like Node's walk up the
    // node_modules folders, unless the repository's own node_modules does not have it either (optional
    // dependencies: other platforms' binaries, supports-color, electron...) or the file belongs to a command
    // line the extension never runs (COMMAND_LINE_ONLY): then what the package leaves out breaks nothing.
    const specifier = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)["']((?:@[\w.-]+\/)?[\w.-]+)(?:\/[^"']*)?["']/g;
    const builtins = new Set(builtinModules);
    const resolves = (fromFile: string, name: string, top: string) => {
      for (let dir = path.dirname(fromFile); dir.startsWith(top); dir = path.dirname(dir)) if (fs.existsSync(path.join(dir, 'node_modules', name))) return true;
      return false;
    };
    const broken: string[] = [];
    for (const name of names.filter((n) => /^extension\/node_modules\/.*\.(c|m)?js$/.test(n) && !COMMAND_LINE_ONLY.some((re) => re.test(n)))) {
      const text = fs.readFileSync(path.join(unpacked, name), 'utf8');
      for (const [, dependency] of text.matchAll(specifier)) {
        if (builtins.has(dependency!) || dependency!.startsWith('node:') || ABSENT_BY_DESIGN.some((re) => re.test(dependency!))) continue;
        if (resolves(path.join(unpacked, name), dependency!, unpacked)) continue;
        const inRepository = path.join(ROOT, name.slice('extension/'.length));
        if (fs.existsSync(inRepository) && !resolves(inRepository, dependency!, ROOT)) continue;
        broken.push(`${name} imports ${dependency}`);
      }
    }
    assert.deepEqual([...new Set(broken)], []);
  });

  it('its worker loads its embedded models, completes, and downloads a model', async () => {
    const extension = path.join(unpacked, 'extension');
    const client = new WorkerClient({ workerPath: path.join(extension, 'dist', 'worker.js'), onCrash: () => undefined, onRestart: () => undefined });
    const hubPath = (uri: string) => {
      const [, user, repo, file, revision = 'main'] = /^hf:([^/]+)\/([^/]+)\/([^#]+)(?:#(.+))?$/.exec(uri)!;
      return `/${user}/${repo}/resolve/${revision}/${file}`;
    };
    const hub = await startModelServer({ [hubPath(CATALOG.draft05.uri)]: { file: path.join(ROOT, 'models/tiny-code-draft.gguf') } });
    try {
      // auto: node-llama-cpp's GPU detection runs (no GPU binary in a CPU package: it settles on the CPU).
      const auto = await client.request('load', {
        models: {
          targetModel: path.join(extension, 'models', 'draftline-code-target.gguf'),
          draftModel: path.join(extension, 'models', 'draftline-code-draft.gguf'),
          gpu: 'auto',
          gpuLayers: 'auto',
          threads: 1,
          contextSize: 512,
        },
        speculation: DEFAULT_SPECULATION,
      });
      assert.equal(auto.backend, 'cpu');
      const info = await client.request('load', {
        models: {
          targetModel: path.join(extension, 'models', 'draftline-code-target.gguf'),
          draftModel: path.join(extension, 'models', 'draftline-code-draft.gguf'),
          gpu: 'cpu',
          gpuLayers: 0,
          threads: 1,
          contextSize: 512,
        },
        speculation: DEFAULT_SPECULATION,
      });
      assert.equal(info.backend, 'cpu');
      const result = await client.request('complete', {
        request: { prefix: 'export function sum(values: number[]): number {\n  let total = 0;\n  for (let i = 0; i < values.length; i', suffix: '\n}\n', maxTokens: 16, mode: 'hybrid' },
      });
      assert.ok(result.tokens.length > 0, 'a completion from the packaged worker');
      const [downloaded] = await downloadInWorker(client, [CATALOG.draft05.uri], { dirPath: path.join(unpacked, 'downloads'), huggingFaceEndpoint: `${hub.url}/` });
      assert.equal(fs.statSync(downloaded).size, fs.statSync(path.join(ROOT, 'models/tiny-code-draft.gguf')).size);
    } finally {
      client.dispose();
      await hub.close();
    }
  });
});
