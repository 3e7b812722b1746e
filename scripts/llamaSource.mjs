// The llama.cpp source node-llama-cpp ships (node_modules/node-llama-cpp/llama/gitRelease.bundle, a git
// bundle of the release its binaries were built from): files taken out of it once into a cache folder
// keyed by that release, with no network. build-native.mjs takes llama.cpp's public headers from it;
// the tokenizer conformance tests (testbed/realVocab.ts) its vocabulary-only GGUFs of real models.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** node-llama-cpp's folder and the llama.cpp release it ships (llama/llama.cpp.info.json `tag`). */
export function llamaSourceInfo(repo) {
  const library = join(repo, 'node_modules', 'node-llama-cpp');
  if (!existsSync(join(library, 'package.json'))) throw new Error('node-llama-cpp is not installed (npm install)');
  const release = JSON.parse(readFileSync(join(library, 'llama', 'llama.cpp.info.json'), 'utf8')).tag;
  return { library, release, bundle: join(library, 'llama', 'gitRelease.bundle') };
}

/**
 * `paths` (files or folders of the llama.cpp tree) extracted from the bundle into `dir`, once: a
 * later call finds `marker` (a path inside dir) and returns at once. Extracted under a temporary name
 * and renamed, so an interrupted or concurrent run never leaves a half-filled folder behind.
 */
export function extractFromLlamaBundle(repo, dir, paths, marker) {
  if (existsSync(join(dir, marker))) return dir;
  const { bundle } = llamaSourceInfo(repo);
  if (!existsSync(bundle)) throw new Error('node-llama-cpp ships no llama.cpp source bundle');
  const unique = `${process.pid}-${Date.now().toString(36)}`;
  const clone = `${dir}.clone-${unique}`;
  const staged = `${dir}.partial-${unique}`;
  try {
    mkdirSync(staged, { recursive: true });
    execFileSync('git', ['clone', '--quiet', '--no-checkout', bundle, clone]);
    const archive = execFileSync('git', ['-C', clone, 'archive', 'HEAD', ...paths], { maxBuffer: 256 << 20 });
    execFileSync('tar', ['-x', '-C', staged], { input: archive, maxBuffer: 64 << 20 });
    if (!existsSync(join(dir, marker))) {
      rmSync(dir, { recursive: true, force: true });
      renameSync(staged, dir);
    }
  } finally {
    rmSync(clone, { recursive: true, force: true });
    rmSync(staged, { recursive: true, force: true });
  }
  return dir;
}
