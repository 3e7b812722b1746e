// Builds per-platform .vsix files: node-llama-cpp with only that platform's prebuilt binaries (npm
// installs all of them: a naive package is ~400 MB), no llama.cpp source bundle, no dev tooling.
//
// Usage: node scripts/package.mjs [--target linux-x64|...|all] [--gpu vulkan|cuda|none] [--out file.vsix | folder for all]
//   --target  a VS Code target (scripts/platforms.mjs: linux-x64, linux-arm64, win32-x64, win32-arm64,
//             darwin-arm64, darwin-x64), or all: the six, each with its default GPU binary, built from this
//             one machine. Default: this machine's.
//   --gpu  the GPU binary carried next to the CPU one. Default: vulkan on linux-x64 and win32-x64 (NVIDIA,
//          AMD and Intel GPUs; node-llama-cpp falls back to the CPU binary without a Vulkan driver), none
//          elsewhere (darwin-arm64's one binary is Metal already; no other target has a GPU binary
//          published). cuda is opt-in: its library alone is 159 MB. none: a CPU-only package.
//
// A package is built in a staging folder (.cache/vsix-stage/, hard links, removed afterwards) holding the
// extension, its production dependencies and exactly the binary packages wanted. A binary package that npm
// did not install here (another OS: npm skips it for its os/cpu fields) is fetched with `npm pack` into
// .cache/prebuilt/ once. node-llama-cpp only uses a binary package of exactly its own version, found
// with import('@node-llama-cpp/<name>') from its own folder: node_modules/@node-llama-cpp/<name> in the package.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, extname, join, posix, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALL_TARGETS, binariesFor, TARGETS, vsixName } from './platforms.mjs';

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
const targetArg = opt('target', `${process.platform}-${process.arch}`);
const gpuArg = opt('gpu', 'default');
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const llamaVersion = JSON.parse(readFileSync(join(repo, 'node_modules', 'node-llama-cpp', 'package.json'), 'utf8')).version;
const targets = targetArg === 'all' ? ALL_TARGETS : [targetArg];
if (targetArg === 'all' && gpuArg !== 'default') fail('--gpu is for one --target: --target all builds each target with its default GPU binary');
const plans = targets.map((target) => ({ target, ...binariesFor(target, gpuArg) }));
for (const plan of plans) if (plan.error) fail(plan.error);
// One target: --out is the file. All: --out is the folder the six files go to (default: here).
const outFor = (target) => (targetArg === 'all' ? join(resolve(opt('out', '.')), vsixName(pkg, target)) : resolve(opt('out', vsixName(pkg, target))));

// Links in the README (docs/) become absolute against the repository, as the Marketplace shows them;
// vsce guesses that only for GitHub and GitLab URLs.
const repositoryWeb = String(pkg.repository?.url ?? pkg.repository ?? '')
  .replace(/^git\+/, '')
  .replace(/\.git$/, '');
if (!/^https:\/\//.test(repositoryWeb)) fail(`package.json's repository (${repositoryWeb || 'none'}) must be an https URL: the packaged README's links are made absolute against it`);

/** The picture types a README may embed (vsce refuses SVG there: no SVG data URI either). */
const IMAGE_TYPES = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp' };

/**
 * A relative picture of the README as a data: URI. VS Code shows an installed extension's README
 * (Extensions → Details) in a webview whose Content-Security-Policy allows `img-src https: data:`
 * only, with no base for relative paths (they resolve inside VS Code's own webview folder): a data:
 * URI is the one kind of picture it shows offline, in VS Code desktop and in a browser alike.
 */
function embeddedImage(link) {
  const file = join(repo, posix.normalize(decodeURI(link)));
  const type = IMAGE_TYPES[extname(file).toLowerCase()];
  if (!type) fail(`README.md's picture ${link} cannot be embedded: PNG, JPEG, GIF or WebP only`);
  if (!existsSync(file)) fail(`README.md's picture ${link} does not exist`);
  return `data:${type};base64,${readFileSync(file).toString('base64')}`;
}

/**
 * The README for the package: relative links that are no image become absolute against the
 * repository (`blob/HEAD/`); relative images are embedded as data: URIs (embeddedImage). The
 * repository's README keeps its relative paths (GitHub shows them as they are).
 */
function packagedReadme(text) {
  const markdownLink = /(!?)\[([^\][]*|!\[[^\][]*]\([^)]+\))\]\(([^)]+)\)/g;
  const relative = (link) => !/^\w+:/.test(link) && !link.startsWith('#') && !link.startsWith('/');
  const rewrite = (_all, image, title, link) => {
    const inner = title.replace(markdownLink, rewrite);
    if (!relative(link)) return `${image}[${inner}](${link})`;
    if (image) return `![${inner}](${embeddedImage(link)})`;
    return `[${inner}](${repositoryWeb}/blob/HEAD/${posix.normalize(link)})`;
  };
  const html = /<img\b[^>]*\bsrc=["']([^"']+)["']/i.exec(text);
  if (html && relative(html[1])) fail(`README.md's <img src="${html[1]}">: write pictures as Markdown images (![alt](path)), which packaging embeds`);
  return text.replace(markdownLink, rewrite);
}

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

// Not linked into the stage at all (large, or written there): .vscodeignore leaves them out as well.
const topLevelSkip = new Set(['.git', 'node_modules', '.cache', '.ci', 'test', 'test-output', 'bench', 'testbed', 'scripts', 'src', 'docs', 'README.md', '.vscodeignore']);
// What a package leaves out: the repository's .vscodeignore (`npx vsce ls` there lists what a package keeps),
// less its line for the binary packages: the stage holds exactly the target's.
const BINARY_PACKAGES = 'node_modules/@node-llama-cpp/**';
const ignore = readFileSync(join(repo, '.vscodeignore'), 'utf8')
  .split(/\r?\n/)
  .filter((line) => line.trim() && !line.startsWith('#') && line.trim() !== BINARY_PACKAGES);

/** Production dependencies as npm resolved them here, without any @node-llama-cpp binary package (each target gets exactly its own). */
function productionDependencies() {
  const listed = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: repo, encoding: 'utf8', shell: process.platform === 'win32' }).stdout ?? '';
  // Paths inside node_modules, relative to the repository (node_modules may be a link to another folder's).
  const modules = realpathSync(join(repo, 'node_modules'));
  const deps = listed
    .split(/\r?\n/)
    .filter((dir) => dir && existsSync(dir) && !relative(modules, realpathSync(dir)).startsWith('..'))
    .map((dir) => join('node_modules', relative(modules, realpathSync(dir))))
    .filter((rel) => rel !== 'node_modules');
  if (!deps.includes(join('node_modules', 'node-llama-cpp'))) throw new Error(`npm ls found no node-llama-cpp in ${repo}: run npm install first`);
  return deps.filter((rel) => !rel.startsWith(join('node_modules', '@node-llama-cpp') + sep));
}

/** Whether a package's os/cpu fields (npm's: a list, entries negated with "!") let it run on the target. */
function fitsTarget(dir, os, cpu) {
  const manifestFile = join(dir, 'package.json');
  if (!existsSync(manifestFile)) return true;
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  const allows = (list, value) => !Array.isArray(list) || (!list.includes(`!${value}`) && (list.every((v) => v.startsWith('!')) || list.includes(value)));
  return allows(manifest.os, os) && allows(manifest.cpu, cpu);
}

/** Builds one target's .vsix from the staged extension, its dependencies and the binary packages in `sources`. */
function packageTarget({ target, gpu, packages }, sources, deps, out) {
  const stage = join(repo, '.cache', 'vsix-stage', `${target}-${process.pid}`);
  rmSync(stage, { recursive: true, force: true });
  // The native addon (greedy reader, threadpool) is built for this machine only (Linux x64, g++): any other
  // target runs on node-llama-cpp's own path, and its status bar says so.
  const targetIgnore = target === `${process.platform}-${process.arch}` ? ignore : [...ignore, 'dist/*.node'];
  try {
    link(repo, stage, new Set([...topLevelSkip, ...readdirSync(repo).filter((name) => name.endsWith('.vsix'))]));
    // The README as the extension's page shows it (a new file, not a link): its links to docs/ and other
    // files the package leaves out point at the repository; its pictures are in it, as data: URIs, so
    // the page shows them offline (vsce's rewriting would make them https: links to the repository).
    writeFileSync(join(stage, 'README.md'), packagedReadme(readFileSync(join(repo, 'README.md'), 'utf8')));
    writeFileSync(join(stage, '.vscodeignore'), `${targetIgnore.join('\n')}\n`);
    // A dependency built for one OS or CPU (npm's os/cpu fields, e.g. ipull's optional @reflink/reflink-linux-x64-gnu)
    // goes only into that target's package; the code that loads it does without it elsewhere.
    const { nodePlatform, nodeArch } = TARGETS[target];
    for (const rel of deps) if (fitsTarget(join(repo, rel), nodePlatform, nodeArch)) link(join(repo, rel), join(stage, rel), new Set(['node_modules', '.bin']));
    for (const { name, dir } of sources) link(dir, join(stage, 'node_modules', '@node-llama-cpp', name));
    const vsce = join(repo, 'node_modules', '@vscode', 'vsce', 'vsce');
    execFileSync(process.execPath, [vsce, 'package', '--target', target, '--out', out, '--no-rewrite-relative-links'], {
      cwd: stage,
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
  console.log(`${out}: ${(statSync(out).size / 1e6).toFixed(1)} MB (${target}; GPU: ${gpu}; node-llama-cpp ${llamaVersion} binaries: ${packages.join(', ')})`);
}

// vsce advises bundling whenever a package holds over 100 .js files. Draftline's own code is bundled; the
// rest is node-llama-cpp with its dependencies, which ships as installed (it finds its prebuilt binaries and
// its llama/ files relative to its own folder) and which only the inference worker process loads.
const BUNDLE_NOTE =
  'About vsce\'s "you should bundle your extension": Draftline is bundled (dist/extension.js, the one file VS Code loads, and dist/worker.js); ' +
  "the other .js files are node-llama-cpp and its dependencies, loaded only by the inference worker, a process of its own, never by VS Code's extension host.";

// Every binary package first: a target whose binaries cannot be had stops the run before anything is built.
const sourcesOf = new Map();
for (const plan of plans) {
  const sources = plan.packages.map(binaryPackage);
  const missing = sources.filter((s) => s.missing);
  if (missing.length) {
    fail(
      `Cannot package ${plan.target} (GPU: ${plan.gpu}): node-llama-cpp ${llamaVersion} loads only binary packages of exactly its own version, and ` +
        `${missing.map((m) => `${m.spec} (${m.missing})`).join(', ')} ${missing.length > 1 ? 'are' : 'is'} neither installed here nor to be fetched with npm pack. ` +
        `A ${plan.target} package needs a node-llama-cpp version whose ${plan.target} binaries were published.`,
    );
  }
  sourcesOf.set(plan.target, sources);
}
execFileSync(process.execPath, ['esbuild.mjs'], { cwd: repo, stdio: 'inherit' });
const deps = productionDependencies();
for (const plan of plans) packageTarget(plan, sourcesOf.get(plan.target), deps, outFor(plan.target));
console.log(BUNDLE_NOTE);
