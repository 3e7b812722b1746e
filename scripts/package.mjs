// Builds a per-platform .vsix: node-llama-cpp with only that platform's prebuilt binaries (npm
// installs all of them: a naive package is ~400 MB), no llama.cpp source bundle, no dev tooling.
//
// Usage: node scripts/package.mjs [--target linux-x64] [--gpu vulkan|cuda|none] [--out file.vsix]
//   --gpu  the GPU binary carried next to the CPU one. Default: vulkan on linux-x64 and win32-x64 (NVIDIA,
//          AMD and Intel GPUs; node-llama-cpp falls back to the CPU binary without a Vulkan driver), none
//          elsewhere (darwin-arm64's binary is Metal already). cuda is opt-in: its library alone is 159 MB.
//          none: a CPU-only package.
//
// The package is built in a staging folder (.cache/vsix-stage/, hard links, removed afterwards) holding the
// extension, its production dependencies and exactly the binary packages wanted. A binary package that npm
// did not install here (another OS: npm skips it for its os/cpu fields) is fetched with `npm pack` into
// .cache/prebuilt/ once. node-llama-cpp only uses a binary package of exactly its own version, found
// with import('@node-llama-cpp/<name>') from its own folder: node_modules/@node-llama-cpp/<name> in the package.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const fail = (message) => {
  console.error(message);
  process.exit(1);
};
const target = opt('target', `${process.platform}-${process.arch}`);
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const out = resolve(opt('out', `${pkg.name}-${target}-${pkg.version}.vsix`));

// VS Code target names -> node-llama-cpp binary package names, and the GPU variants published for each.
const platformOf = {
  'linux-x64': 'linux-x64',
  'linux-arm64': 'linux-arm64',
  'linux-armhf': 'linux-armv7l',
  'darwin-arm64': 'mac-arm64-metal',
  'darwin-x64': 'mac-x64',
  'win32-x64': 'win-x64',
  'win32-arm64': 'win-arm64',
};
const gpuVariants = { 'linux-x64': ['vulkan', 'cuda'], 'win32-x64': ['vulkan', 'cuda'] };
const base = platformOf[target];
if (!base) fail(`unknown target ${target}; one of ${Object.keys(platformOf).join(', ')}`);
const variants = gpuVariants[target] ?? [];
const gpu = opt('gpu', variants.includes('vulkan') ? 'vulkan' : 'none');
if (gpu !== 'none' && !variants.includes(gpu)) {
  fail(`--gpu ${gpu}: node-llama-cpp has no such binary for ${target} (${variants.length ? `one of ${variants.join(', ')} or none` : 'only none'})`);
}
const binaries = [base, ...(gpu === 'none' ? [] : [`${base}-${gpu}`])];
const llamaVersion = JSON.parse(readFileSync(join(repo, 'node_modules', 'node-llama-cpp', 'package.json'), 'utf8')).version;

/** Hard-links a file or a tree (copies where linking fails), leaving out the top-level names in `skip`. */
function link(from, to, skip = new Set()) {
  const st = lstatSync(from);
  if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
  else if (!st.isDirectory()) {
    try {
      linkSync(from, to);
    } catch {
      copyFileSync(from, to);
    }
  } else {
    mkdirSync(to, { recursive: true });
    for (const name of readdirSync(from)) if (!skip.has(name)) link(join(from, name), join(to, name));
  }
}

/** The folder of @node-llama-cpp/<name> at node-llama-cpp's version (installed, cached, or fetched with npm pack), or why there is none. */
function binaryPackage(name) {
  const installed = join(repo, 'node_modules', '@node-llama-cpp', name);
  const versionOf = (dir) => (existsSync(join(dir, 'package.json')) ? JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version : null);
  if (versionOf(installed) === llamaVersion) return { name, dir: installed };
  const cacheDir = join(repo, '.cache', 'prebuilt');
  const unpacked = join(cacheDir, `${name}-${llamaVersion}`, 'package');
  if (versionOf(unpacked) === llamaVersion) return { name, dir: unpacked };
  const spec = `@node-llama-cpp/${name}@${llamaVersion}`;
  console.log(`${spec} is not installed here (npm installs only this machine's binaries): npm pack ${spec}`);
  mkdirSync(cacheDir, { recursive: true });
  const packed = spawnSync('npm', ['pack', spec, '--pack-destination', cacheDir, '--json', '--loglevel=error'], { cwd: cacheDir, encoding: 'utf8', shell: process.platform === 'win32' });
  if (packed.status !== 0) {
    let reason = (packed.stderr || packed.error?.message || '')
      .trim()
      .split('\n')[0]
      .replace(/^npm error /, '');
    if (/ETARGET|E404/.test(packed.stderr ?? '')) {
      const published = spawnSync('npm', ['view', `@node-llama-cpp/${name}`, 'versions', '--json', '--loglevel=error'], { encoding: 'utf8', shell: process.platform === 'win32' });
      let newest = '';
      try {
        newest = [].concat(JSON.parse(published.stdout)).at(-1) ?? '';
      } catch {
        /* not published at all */
      }
      reason = `not published on npm${newest ? `; its newest version is ${newest}` : ''}`;
    }
    return { name, spec, missing: reason };
  }
  const tgz = join(cacheDir, JSON.parse(packed.stdout)[0].filename.replace(/^@/, '').replace(/\//g, '-'));
  mkdirSync(dirname(unpacked), { recursive: true });
  execFileSync('tar', ['-xzf', tgz, '-C', dirname(unpacked)]);
  rmSync(tgz);
  if (versionOf(unpacked) !== llamaVersion) throw new Error(`${tgz} did not unpack to a ${spec} package`);
  return { name, dir: unpacked };
}

const topLevelSkip = new Set(['.git', 'node_modules', '.cache', '.ci', 'test', 'test-output', 'bench', 'scripts', 'src', 'README.md', '.vscodeignore']);
const ignore = [
  '**/*.ts',
  '**/*.map',
  'tsconfig.json',
  'esbuild.mjs',
  '*.vsix',
  '.gitignore',
  'models/recipe/**',
  'models/tiny-*',
  'dist/desktop-suite.js*',
  'dist/*.stamp',
  'dist/*.partial',
  'node_modules/node-llama-cpp/llama/gitRelease.bundle',
  'node_modules/node-llama-cpp/llama/xpack/**',
  'node_modules/node-llama-cpp/templates/**',
  'node_modules/typescript/**',
  'node_modules/.bin/**',
];

// The native greedy reader is built for this machine; another target reads tokens through node-llama-cpp.
if (target !== `${process.platform}-${process.arch}`) ignore.push('dist/*.node');

const sources = binaries.map(binaryPackage);
const missing = sources.filter((s) => s.missing);
if (missing.length) {
  fail(
    `Cannot package ${target} (GPU: ${gpu}): node-llama-cpp ${llamaVersion} loads only binary packages of exactly its own version, and ` +
      `${missing.map((m) => `${m.spec} (${m.missing})`).join(', ')} ${missing.length > 1 ? 'are' : 'is'} neither installed here nor to be fetched with npm pack. ` +
      `A ${target} package needs a node-llama-cpp version whose ${target} binaries were published.`,
  );
}
execFileSync(process.execPath, ['esbuild.mjs'], { cwd: repo, stdio: 'inherit' });
const stage = join(repo, '.cache', 'vsix-stage', `${target}-${process.pid}`);
rmSync(stage, { recursive: true, force: true });
try {
  // The extension's own files (what .vscodeignore lets through is decided below, as before).
  link(repo, stage, new Set([...topLevelSkip, ...readdirSync(repo).filter((name) => name.endsWith('.vsix'))]));
  // The packaged README is the user part of ours: the benchmark section links repository files (SVG
  // charts) that a .vsix cannot carry. A new file, not a link: the repository's README stays as it is.
  writeFileSync(join(stage, 'README.md'), readFileSync(join(repo, 'README.md'), 'utf8').split('\n## Benchmark')[0]);
  writeFileSync(join(stage, '.vscodeignore'), `${ignore.join('\n')}\n`);
  // Production dependencies as npm resolved them here (vsce lists them again with npm in the stage),
  // without any @node-llama-cpp binary package: those are exactly the ones chosen above.
  const listed = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: repo, encoding: 'utf8', shell: process.platform === 'win32' }).stdout ?? '';
  const deps = listed.split(/\r?\n/).filter((dir) => dir && resolve(dir) !== repo && relative(repo, dir).startsWith(`node_modules${sep}`));
  if (!deps.some((dir) => relative(repo, dir) === join('node_modules', 'node-llama-cpp'))) throw new Error(`npm ls found no node-llama-cpp in ${repo}: run npm install first`);
  for (const dir of deps) {
    const rel = relative(repo, dir);
    if (rel.startsWith(join('node_modules', '@node-llama-cpp') + sep)) continue;
    link(dir, join(stage, rel), new Set(['node_modules', '.bin']));
  }
  for (const { name, dir } of sources) link(dir, join(stage, 'node_modules', '@node-llama-cpp', name));

  const vsce = join(repo, 'node_modules', '@vscode', 'vsce', 'vsce');
  execFileSync(process.execPath, [vsce, 'package', '--target', target, '--out', out, '--allow-missing-repository', '--skip-license'], { cwd: stage, stdio: ['ignore', 'inherit', 'inherit'] });
} finally {
  rmSync(stage, { recursive: true, force: true });
}
console.log(`${out}: ${(statSync(out).size / 1e6).toFixed(1)} MB (${target}; node-llama-cpp ${llamaVersion} binaries: ${binaries.join(', ')})`);
