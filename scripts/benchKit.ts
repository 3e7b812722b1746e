// npm run bench:kit [-- --out DIR] [--no-archive] [--with-vulkan] [--with-tiny]
//
// Writes a self-contained folder (and DIR/draftline-bench-kit.tar.xz with
// DIR/draftline-bench-kit-models.tar.xz, each at most KIT_LIMIT_BYTES) that runs `npm run bench`
// unchanged on a Linux x64 machine with a GPU driver but no network and no Node: a GPU machine reached
// with an upload limit and a time limit (scripts/bench-kit/README.md). Inside: this Node binary, the benches
// bundled with esbuild, node-llama-cpp with its prebuilt CPU binary and its CUDA one less
// libggml-cuda.so (159 MB for every architecture: too big to carry), the llama.cpp source
// node-llama-cpp was built from, build-cuda.sh (compiles ggml-cuda, llama-server and llama-quantize
// for the local GPU only), the v3 pair, the bench corpus and the one tokenizer the random next-edit
// shapes use. `run.sh [bench args]` builds what is missing and runs the bench; `run.sh lease` runs
// every GPU step in one command, within a lease's time. Results land in the kit's bench/results/. A bench artefact
// only: nothing here goes into the extension's install or package.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as esbuild from 'esbuild';
import { CORPUS_PACKAGES, ensureCorpus } from '../bench/corpus';
import { EDIT_PAIRS, EDIT_TARBALLS, packageVersionFiles, parsePair, tarballName } from '../bench/editCorpus';
import { REAL_VOCABS, realVocabDir } from '../testbed/realVocab';
import { type EmbeddedPairName, embeddedPairPaths } from '../src/models/embedded';

const ROOT = path.resolve(__dirname, '..');
const argv = process.argv.slice(2);
const opt = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const OUT = path.resolve(opt('out', path.join(ROOT, '.cache', 'bench-kit')));
const KIT = path.join(OUT, 'draftline-bench-kit');
const withVulkan = argv.includes('--with-vulkan');
// The tiny pair is this repository's fast test pair; a GPU run measures the v3 pair (and random
// targets written on the machine). Left out by default: the kit's size is the point.
const withTiny = argv.includes('--with-tiny');
const archive = !argv.includes('--no-archive');
const log = (message: string) => process.stderr.write(`[bench:kit] ${message}\n`);

/** An upload limit of 64 MiB, less room for the command's own files: each archive fits it. */
const KIT_LIMIT_BYTES = 60 * 2 ** 20;
const VOCAB_MODEL = 'tiny-code-draft.gguf';
/**
 * ggml's CPU variants for processors no H100/H200 server has (older ones, and Alder Lake's desktop
 * parts; the loader takes the best one the CPU supports, x64 stays as the fallback): left out.
 */
const OLD_CPU_VARIANTS = ['sandybridge', 'ivybridge', 'piledriver', 'sse42', 'cannonlake', 'cascadelake', 'cooperlake', 'alderlake'].map((v) => `libggml-cpu-${v}.so`);

const sh = (cmd: string, args: string[], options: { cwd?: string; input?: Buffer } = {}) => execFileSync(cmd, args, { maxBuffer: 1 << 30, ...options });
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
function sizeOf(p: string): number {
  const st = fs.lstatSync(p);
  if (!st.isDirectory()) return st.size;
  return fs.readdirSync(p).reduce((n, e) => n + sizeOf(path.join(p, e)), 0);
}

/**
 * The benches bundled. esbuild gives every module of a bundle the bundle's own __dirname, but the
 * bench's modules find models, caches and the native addon relative to their own folders: each
 * module's __dirname is rewritten to its folder under the kit's root (the bundle sits in bench/).
 */
async function bundleBenches(): Promise<void> {
  const ownDirname: esbuild.Plugin = {
    name: 'own-dirname',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, async (args) => {
        const relative = path.relative(ROOT, path.dirname(args.path)).split(path.sep).join('/');
        const text = await fs.promises.readFile(args.path, 'utf8');
        return { contents: text.replace(/\b__dirname\b/g, `__kitDir(${JSON.stringify(relative)})`), loader: 'ts' };
      });
    },
  };
  await esbuild.build({
    entryPoints: {
      run: path.join(ROOT, 'bench/run.ts'),
      profile: path.join(ROOT, 'bench/profile.ts'),
      targets: path.join(ROOT, 'bench/writeTargets.ts'),
      'server-check': path.join(ROOT, 'bench/serverCheck.ts'),
      'kv-branches': path.join(ROOT, 'bench/kvBranches.ts'),
    },
    outdir: path.join(KIT, 'bench'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    // ESM-only with native binaries: loaded at run time from the kit's node_modules, as in the repo.
    external: ['node-llama-cpp', 'esbuild'],
    banner: { js: 'const __kitDir = (dir) => require("node:path").join(__dirname, "..", dir);' },
    plugins: [ownDirname],
    logLevel: 'warning',
  });
}

/** node-llama-cpp and everything it needs at run time, as npm laid them out (without other platforms' binaries). */
/** Files of a later binary package identical to the CPU package's (ggml's CPU variants): relative links instead. */
function linkIdenticalBinaries(scope: string, names: string[]): void {
  const base = path.join(scope, names[0], 'bins', names[0]);
  for (const name of names.slice(1)) {
    const dir = path.join(scope, name, 'bins', name);
    for (const file of fs.readdirSync(dir)) {
      const same = path.join(base, file);
      const here = path.join(dir, file);
      if (!fs.existsSync(same) || fs.lstatSync(here).isSymbolicLink()) continue;
      if (!fs.readFileSync(same).equals(fs.readFileSync(here))) continue;
      fs.rmSync(here);
      fs.symlinkSync(path.relative(dir, same), here);
    }
  }
}

function copyRuntimePackages(): void {
  const listed = sh('npm', ['ls', '--all', '--parseable', '--omit=dev'], { cwd: ROOT }).toString().trim().split('\n').slice(1);
  const wanted = listed.filter((dir) => {
    const rel = path.relative(path.join(ROOT, 'node_modules'), dir);
    // Binaries are picked below; typescript is an optional peer of node-llama-cpp the bench never loads.
    return !rel.startsWith('@node-llama-cpp') && !/(^|\/)typescript$/.test(rel);
  });
  for (const dir of wanted) {
    const rel = path.relative(ROOT, dir);
    fs.cpSync(dir, path.join(KIT, rel), {
      recursive: true,
      // The llama.cpp source bundle (34 MB with its history) travels as a trimmed archive instead.
      filter: (src) => !src.endsWith(`${path.sep}gitRelease.bundle`) && !src.includes(`${path.sep}node_modules${path.sep}.bin`),
    });
  }
  const scope = path.join(ROOT, 'node_modules', '@node-llama-cpp');
  const binaries = ['linux-x64', 'linux-x64-cuda', ...(withVulkan ? ['linux-x64-vulkan'] : [])];
  for (const name of binaries) {
    if (!fs.existsSync(path.join(scope, name))) throw new Error(`@node-llama-cpp/${name} is not installed (npm install on Linux x64 installs it)`);
    fs.cpSync(path.join(scope, name), path.join(KIT, 'node_modules', '@node-llama-cpp', name), {
      recursive: true,
      // build-cuda.sh compiles it for the local GPU.
      filter: (src) => path.basename(src) !== 'libggml-cuda.so' && !OLD_CPU_VARIANTS.includes(path.basename(src)),
    });
  }
  linkIdenticalBinaries(path.join(KIT, 'node_modules', '@node-llama-cpp'), binaries);
}

/** The llama.cpp source node-llama-cpp's binaries were built from, without history, docs or test models. */
function llamaSource(): void {
  const library = path.join(ROOT, 'node_modules', 'node-llama-cpp');
  const clone = path.join(OUT, 'llama.cpp.clone');
  fs.rmSync(clone, { recursive: true, force: true });
  sh('git', ['clone', '--quiet', '--no-checkout', path.join(library, 'llama', 'gitRelease.bundle'), clone]);
  const entries = sh('git', ['-C', clone, 'ls-tree', '--name-only', 'HEAD']).toString().trim().split('\n');
  const skip = new Set(['docs', 'examples', 'models', 'tests', 'gguf-py', 'media', 'benches', 'pocs', '.github', '.devops', 'grammars', 'prompts', 'requirements', 'ci', 'conversion', 'skills']);
  const keep = entries.filter((e) => !skip.has(e));
  // ggml's other backends are only added to the build when switched on: build-cuda.sh builds the CPU
  // and CUDA ones (HIP and MUSA reuse ggml-cuda's sources from its own folder).
  const otherBackends = ['cann', 'et', 'hexagon', 'hip', 'metal', 'musa', 'opencl', 'openvino', 'sycl', 'virtgpu', 'vulkan', 'webgpu', 'zdnn', 'zendnn'].map((b) => `:(exclude)ggml/src/ggml-${b}`);
  // The web UI's sources and test media: llama-server builds without an embedded UI when it has no
  // assets (build-cuda.sh turns the UI's npm build and download off), and the bench never opens it.
  const unused = ['tools/ui/src', 'tools/ui/tests', 'tools/ui/static', 'tools/ui/package-lock.json', 'tools/mtmd/test-*'].map((p) => `:(exclude,glob)${p}`);
  const tar = sh('git', ['-C', clone, 'archive', '--format=tar', '--prefix=llama.cpp/', 'HEAD', '--', ...keep, ...otherBackends, ...unused]);
  fs.writeFileSync(path.join(KIT, 'llama.cpp.tar.xz'), sh('xz', ['-6', '-T2', '-c'], { input: tar }));
  const info = JSON.parse(fs.readFileSync(path.join(library, 'llama', 'llama.cpp.info.json'), 'utf8'));
  fs.writeFileSync(path.join(KIT, 'llama.cpp.json'), `${JSON.stringify({ ...info, commit: sh('git', ['-C', clone, 'rev-parse', 'HEAD']).toString().trim() }, null, 2)}\n`);
  fs.rmSync(clone, { recursive: true, force: true });
}

function copyNode(): void {
  const target = path.join(KIT, 'node', 'bin', 'node');
  fs.mkdirSync(path.dirname(target), { recursive: true });
  // Debian's node carries its debug info (99 MB): stripped it is 82 MB, 21 MB in the archive.
  try {
    sh('strip', ['-o', target, process.execPath]);
  } catch {
    fs.copyFileSync(process.execPath, target);
  }
  fs.chmodSync(target, 0o755);
}

function writeScripts(commit: string): void {
  const version = JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', 'node-llama-cpp', 'package.json'), 'utf8')).version;
  for (const file of ['run.sh', 'build-cuda.sh', 'lease.sh', 'README.md']) {
    const text = fs.readFileSync(path.join(ROOT, 'scripts', 'bench-kit', file), 'utf8');
    fs.writeFileSync(path.join(KIT, file), text, { mode: file.endsWith('.sh') ? 0o755 : 0o644 });
  }
  fs.writeFileSync(
    path.join(KIT, 'KIT.json'),
    `${JSON.stringify({ commit, nodeLlamaCpp: version, node: process.version, corpus: CORPUS_PACKAGES, pairs: withTiny ? ['v3', 'tiny'] : ['v3'], vulkan: withVulkan, created: new Date().toISOString() }, null, 2)}\n`,
  );
}

/**
 * The kit's parts that change only with Node, the models, node-llama-cpp or the corpus (nearly all of
 * the archives' bytes, and minutes of xz -9e on 2 cores), then the rest (the bundled benches, the
 * scripts, KIT.json). The models (the v3 pair, hardly compressible) are an archive of their own: with
 * Node and the rest they would not fit in one upload (sizes: scripts/bench-kit/README.md), and a
 * checkout of the repository holds them where one reaches the machine.
 */
const STABLE_PARTS: Record<string, string[]> = {
  node: ['node'],
  models: ['models/draftline-code-target.gguf', 'models/draftline-code-draft.gguf'],
  runtime: ['node_modules', '.cache', 'bench/cache', 'llama.cpp.tar.xz', 'llama.cpp.json', `models/${VOCAB_MODEL}`],
};
const MODELS_ARCHIVE = 'draftline-bench-kit-models.tar.xz';
// Content-addressed, so one folder can serve every checkout on the machine (DRAFTLINE_MACHINE_CACHE, set
// by scripts/test.sh: a fresh CI clone then compresses nothing that an earlier run compressed).
const PART_CACHE = process.env.DRAFTLINE_MACHINE_CACHE ? path.join(process.env.DRAFTLINE_MACHINE_CACHE, 'bench-kit-parts') : path.join(ROOT, '.cache', 'bench-kit-parts');
/**
 * xz settings a part: the runtime's CPU and CUDA libraries are near copies of each other, far apart in
 * the tar (a 64 MiB dictionary stores them once); Node and the models are single files that a larger
 * dictionary or preset hardly shrinks, while the first run on a fresh checkout pays for it.
 */
const XZ: Record<string, string> = { node: 'preset=6', models: 'preset=6', runtime: 'preset=9,dict=64MiB', rest: 'preset=9,dict=64MiB' };

/** A tar of `members` (paths in the kit), its bytes the same for the same files (no mtimes, owners or order of their own). */
function tarOf(members: string[], extra: string[] = []): Buffer {
  const flags = ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-b1'];
  return sh('tar', ['-C', OUT, '-cf', '-', ...flags, ...extra, ...members.map((m) => `draftline-bench-kit/${m}`)]);
}

function xz(input: Buffer, settings: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('xz', ['-T1', `--lzma2=${settings}`, '-c'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`xz exited ${code}`))));
    child.stdin.end(input);
  });
}

/**
 * draftline-bench-kit.tar.xz (all but the models) and draftline-bench-kit-models.tar.xz, each of
 * which `tar -xJf` unpacks as usual. Written as concatenated xz streams (xz reads them as one): a tar
 * of each stable part without its end-of-archive blocks (-b1: exactly two zero blocks of 512 bytes;
 * tar stops at the end of the data without them), then the rest with them. So `cat` of the models
 * archive and the kit's is one archive of the whole kit too. Each stable part's stream is kept in
 * .cache/bench-kit-parts/ under its tar's hash, so that only a changed part is compressed again (the
 * kit test makes the archives on every run); parts no longer made are deleted. Returns the files.
 */
async function writeArchives(): Promise<string[]> {
  fs.mkdirSync(PART_CACHE, { recursive: true });
  const used = new Set<string>();
  const stable = Object.entries(STABLE_PARTS).map(async ([name, members]) => {
    const tar = tarOf(members);
    const body = tar.subarray(0, tar.length - 1024);
    if (tar.length < 1024 || body.length % 512 !== 0 || tar.subarray(body.length).some((b) => b !== 0)) throw new Error(`tar of ${name}: no end-of-archive blocks where expected`);
    const cached = path.join(PART_CACHE, `${name}-${createHash('sha256').update(XZ[name]!).update(body).digest('hex').slice(0, 16)}.xz`);
    used.add(path.basename(cached));
    if (!fs.existsSync(cached)) {
      const t0 = Date.now();
      fs.writeFileSync(`${cached}.partial`, await xz(body, XZ[name]!));
      fs.renameSync(`${cached}.partial`, cached);
      log(`compressed ${name} in ${Math.round((Date.now() - t0) / 1000)} s (${mib(fs.statSync(cached).size)}; kept in ${path.relative(ROOT, PART_CACHE)})`);
    }
    return cached;
  });
  const cachedParts = await Promise.all(stable);
  const stableMembers = Object.values(STABLE_PARTS).flat();
  const members = fs.readdirSync(KIT).filter((entry) => !stableMembers.includes(entry));
  const excludes = stableMembers.filter((m) => m.includes('/')).map((m) => `--exclude=draftline-bench-kit/${m}`);
  const rest = await xz(tarOf(members, excludes), XZ.rest!);
  const names = Object.keys(STABLE_PARTS);
  const write = (file: string, parts: Buffer[]) => {
    fs.writeFileSync(`${file}.partial`, Buffer.concat(parts));
    fs.renameSync(`${file}.partial`, file);
    return file;
  };
  const kit = write(path.join(OUT, 'draftline-bench-kit.tar.xz'), [...cachedParts.filter((_, i) => names[i] !== 'models').map((p) => fs.readFileSync(p)), rest]);
  const models = write(path.join(OUT, MODELS_ARCHIVE), [fs.readFileSync(cachedParts[names.indexOf('models')]!)]);
  for (const old of fs.readdirSync(PART_CACHE)) if (!used.has(old)) fs.rmSync(path.join(PART_CACHE, old), { force: true });
  return [kit, models];
}

async function main(): Promise<void> {
  const started = Date.now();
  fs.rmSync(KIT, { recursive: true, force: true });
  fs.mkdirSync(KIT, { recursive: true });
  let commit = 'unknown';
  try {
    commit = sh('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
  } catch {}
  log(`bundling the benches (commit ${commit})`);
  await bundleBenches();
  // The worker (the startup regime runs it) and the native greedy reader, as `npm run build` made them.
  for (const file of ['worker.js', 'draftline-native.node']) {
    const built = path.join(ROOT, 'dist', file);
    if (fs.existsSync(built)) fs.cpSync(built, path.join(KIT, 'dist', file));
    else log(`no dist/${file} (npm run bench:kit builds it first)`);
  }
  log('copying node-llama-cpp and its binaries');
  copyRuntimePackages();
  log('the embedded pairs and the corpus');
  const pairs: EmbeddedPairName[] = withTiny ? ['v3', 'tiny'] : ['v3'];
  for (const pair of pairs) {
    for (const file of Object.values(embeddedPairPaths(ROOT, pair))) fs.cpSync(file, path.join(KIT, 'models', path.basename(file)));
  }
  fs.cpSync(path.join(ROOT, 'models', 'README.md'), path.join(KIT, 'models', 'README.md'));
  // The random targets' vocabulary (testbed/ggufWriter.ts embeddedVocabFile) where the v3 pair has
  // not arrived yet: the tiny draft, small and with the same tokenizer, travels with the kit.
  fs.cpSync(path.join(ROOT, 'models', VOCAB_MODEL), path.join(KIT, 'models', VOCAB_MODEL));
  const corpus = path.dirname(ensureCorpus());
  fs.cpSync(corpus, path.join(KIT, 'bench', 'cache', 'corpus'), { recursive: true });
  // The edits regime (--regimes edits) offline: its npm version pairs' tarballs (unpacked there on
  // first use), and llama.cpp's vocabulary files its Qwen2.5-Coder-tokenizer models are written with
  // (the kit has no llama.cpp source bundle to extract them from). ../shared/nes-cases/ is not carried:
  // the regime runs on the npm corpus alone where it is absent.
  for (const spec of EDIT_PAIRS) {
    const { name, from, to } = parsePair(spec);
    for (const version of [from, to]) {
      packageVersionFiles(name, version);
      fs.cpSync(path.join(EDIT_TARBALLS, tarballName(name, version)), path.join(KIT, 'bench', 'cache', 'edit-corpus', 'tarballs', tarballName(name, version)));
    }
  }
  // Of llama.cpp's vocabulary files, Qwen2's alone: the random next-edit shapes carry Qwen2.5-Coder's
  // tokenizer (realVocabModel's 'qwen2.5-coder-*' variants). The folder's marker file (the last
  // vocabulary, which says it was extracted whole) is written empty: the kit never reads it.
  const vocab = await realVocabDir();
  const kitVocab = path.join(KIT, path.relative(ROOT, vocab));
  for (const file of fs.readdirSync(path.join(vocab, 'models')).filter((f) => f.startsWith('ggml-vocab-qwen2.gguf'))) {
    fs.cpSync(path.join(vocab, 'models', file), path.join(kitVocab, 'models', file));
  }
  fs.writeFileSync(path.join(kitVocab, 'models', `ggml-vocab-${REAL_VOCABS[REAL_VOCABS.length - 1]}.gguf`), '');
  log("llama.cpp's source");
  llamaSource();
  copyNode();
  writeScripts(commit);
  log(`kit: ${KIT} (${mib(sizeOf(KIT))})`);
  if (archive) {
    for (const file of await writeArchives()) {
      const size = fs.statSync(file).size;
      log(`archive: ${file} (${mib(size)})`);
      if (size > KIT_LIMIT_BYTES) throw new Error(`${path.basename(file)} is ${mib(size)}, over the ${mib(KIT_LIMIT_BYTES)} an archive may take: leave something out`);
    }
  }
  log(`done in ${Math.round((Date.now() - started) / 1000)} s`);
}

main().catch((error) => {
  log(`failed: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
});
