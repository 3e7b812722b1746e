// Builds dist/draftline-native.node from src/llama/native/ (addon.cpp says what it does and why, each
// other file one part of it): the greedy reader that gives the decode loop several positions' tokens in
// one synchronous call, the direct decode, persistent CPU threadpools and the device greedy sampler.
//
// It is compiled against the very headers node-llama-cpp's prebuilt binary was built from: the
// library's own addon headers (node_modules/node-llama-cpp/llama/addon) for the C++ context's
// layout, and llama.cpp's public headers of the release the library ships, taken from the git bundle
// inside the package (nothing is downloaded). Linux only (it finds the loaded libllama with
// dl_iterate_phdr); needs g++ and Node's headers.
//
// Optional: when it cannot be built, the extension reads tokens through node-llama-cpp's sampleToken
// as before (slower, same tokens) and this prints why. DRAFTLINE_REQUIRE_NATIVE=1 (the test suite)
// makes a failed build an error instead.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { extractFromLlamaBundle } from './llamaSource.mjs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const nativeAddonPath = join(repo, 'dist', 'draftline-native.node');
const sourceDir = join(repo, 'src', 'llama', 'native');

/** The addon's sources (compiled together, in name order) and its headers: every file of src/llama/native/. */
function sourceFiles() {
  const names = readdirSync(sourceDir)
    .filter((name) => /\.(cpp|h)$/.test(name))
    .sort();
  return { sources: names.filter((name) => name.endsWith('.cpp')).map((name) => join(sourceDir, name)), all: names.map((name) => join(sourceDir, name)) };
}

function inputs() {
  const library = join(repo, 'node_modules', 'node-llama-cpp');
  const libraryPackage = join(library, 'package.json');
  if (!existsSync(libraryPackage)) throw new Error('node-llama-cpp is not installed (npm install)');
  const version = JSON.parse(readFileSync(libraryPackage, 'utf8')).version;
  const release = JSON.parse(readFileSync(join(library, 'llama', 'llama.cpp.info.json'), 'utf8')).tag;
  const addonHeaders = join(library, 'llama', 'addon');
  if (!existsSync(join(addonHeaders, 'AddonContext.h'))) throw new Error(`node-llama-cpp ${version} ships no addon headers`);
  const addonApi = createRequire(libraryPackage)('node-addon-api').include_dir;
  const nodeHeaders = process.env.npm_config_nodedir ? join(process.env.npm_config_nodedir, 'include', 'node') : join(dirname(dirname(process.execPath)), 'include', 'node');
  if (!existsSync(join(nodeHeaders, 'node_api.h'))) throw new Error(`Node's headers are not at ${nodeHeaders}`);
  return { library, version, release, addonHeaders, addonApi, nodeHeaders };
}

/** llama.cpp's public headers of the release node-llama-cpp ships, extracted once from its git bundle. */
function llamaHeaders(release) {
  const dir = join(repo, '.cache', 'native', `llama.cpp-${release}`);
  return extractFromLlamaBundle(repo, dir, ['include', 'ggml/include', 'LICENSE'], join('include', 'llama.h'));
}

export function buildNative({ quiet = false } = {}) {
  const log = (m) => quiet || console.log(`[native] ${m}`);
  if (process.platform !== 'linux') {
    log(`skipped on ${process.platform}: the greedy reader is Linux-only; decoding reads tokens through node-llama-cpp`);
    return false;
  }
  const { version, release, addonHeaders, addonApi, nodeHeaders } = inputs();
  const compiler = process.env.CXX || 'g++';
  const headers = llamaHeaders(release);
  mkdirSync(dirname(nativeAddonPath), { recursive: true });
  const partial = `${nativeAddonPath}.partial`;
  const { sources, all } = sourceFiles();
  // -O3 without -ffast-math: the probability sum must add in the library's order.
  const args = [
    '-std=c++17',
    '-O3',
    '-fPIC',
    '-shared',
    '-fvisibility=hidden',
    // Loads on any glibc Linux the prebuilt node-llama-cpp binaries load on, whatever libstdc++ it has.
    '-static-libstdc++',
    '-DNAPI_VERSION=7',
    '-DNAPI_CPP_EXCEPTIONS',
    `-DDRAFTLINE_LLAMA_CPP_RELEASE="${release}"`,
    `-DDRAFTLINE_NODE_LLAMA_CPP_VERSION="${version}"`,
    `-I${addonHeaders}`,
    `-I${join(headers, 'include')}`,
    `-I${join(headers, 'ggml', 'include')}`,
    `-I${addonApi}`,
    `-I${nodeHeaders}`,
    ...sources,
    '-o',
    partial,
    '-ldl',
  ];
  // Rebuilt when a source or header, the flags (versions, header paths), or the compiler change.
  const hash = createHash('sha256');
  for (const file of all) hash.update(file).update(readFileSync(file));
  const stamp = hash.update(JSON.stringify([compiler, args])).digest('hex');
  const stampFile = `${nativeAddonPath}.stamp`;
  if (existsSync(nativeAddonPath) && existsSync(stampFile) && readFileSync(stampFile, 'utf8') === stamp) return true;
  // A failed build must not leave an older addon behind to be loaded.
  rmSync(nativeAddonPath, { force: true });
  rmSync(stampFile, { force: true });
  execFileSync(compiler, args, { stdio: quiet ? 'pipe' : 'inherit' });
  renameSync(partial, nativeAddonPath);
  writeFileSync(stampFile, stamp);
  log(`built ${nativeAddonPath} for node-llama-cpp ${version} (llama.cpp ${release})`);
  return true;
}

/** buildNative for esbuild.mjs and the command line: a failure is explained, and fatal only with DRAFTLINE_REQUIRE_NATIVE=1. */
export function buildNativeOrExplain() {
  try {
    return buildNative();
  } catch (error) {
    console.error(`[native] not built: ${error instanceof Error ? error.message : error}`);
    if (process.env.DRAFTLINE_REQUIRE_NATIVE === '1') process.exit(1);
    return false;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) buildNativeOrExplain();
