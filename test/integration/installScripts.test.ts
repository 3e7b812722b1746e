// Issue #41 item 6: npm 11 skips the install scripts of dependencies that package.json's allowScripts does
// not name, and ends `npm install` with a warning listing them. Each of ours is declared in allowScripts,
// and each is one Draftline does not need (a reason here, and a check of that reason where it can be made):
// npm then skips them quietly, and nothing breaks because it did.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(__dirname, '../..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));

/** Why Draftline does without each dependency's install script. */
const NOT_NEEDED: Record<string, string> = {
  'node-llama-cpp':
    "its postinstall builds llama.cpp from source where no prebuilt binary loads; the worker loads prebuilt binaries only (getLlama with build: 'never'), and each .vsix carries exactly its target's @node-llama-cpp/* binary packages",
  esbuild:
    "its install.js swaps bin/esbuild's JavaScript launcher for the native binary (a faster CLI); esbuild.mjs uses the JavaScript API, which finds the binary in the @esbuild/<platform> package by itself (tsx's own esbuild likewise)",
  '@vscode/vsce-sign': 'its postinstall copies a signing binary for `vsce sign` / Marketplace signature checks; `vsce package` never signs',
  keytar: 'an optional dependency of vsce that keeps Marketplace tokens for `vsce publish` (its script builds a native module); `vsce package` does not use it',
};

/** The dependencies whose install scripts an install would run, by package name (from the lockfile). */
function withInstallScripts(): string[] {
  const names = new Set<string>();
  for (const [where, entry] of Object.entries<{ hasInstallScript?: boolean }>(lock.packages)) {
    if (where && entry.hasInstallScript) names.add(where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length));
  }
  return [...names].sort();
}

test('every dependency with an install script is declared in allowScripts, as not needed, with the reason', () => {
  const scripts = withInstallScripts();
  assert.ok(scripts.includes('node-llama-cpp'), `the lockfile lists node-llama-cpp's postinstall (else this test reads the wrong file): ${scripts.join(', ')}`);
  const declared = manifest.allowScripts ?? {};
  for (const name of scripts) {
    assert.ok(NOT_NEEDED[name], `${name} has an install script: decide whether Draftline needs it, say why here, and declare it in package.json's allowScripts`);
    assert.equal(declared[name], false, `package.json's allowScripts declares ${name} (false: npm skips its script without a warning)`);
  }
  // No stale declaration either (npm install-scripts prune would remove it).
  assert.deepEqual(Object.keys(declared).sort(), scripts);
});

test("the reasons hold: the worker never builds llama.cpp, esbuild's binary comes from its platform package", () => {
  const runtime = fs.readFileSync(path.join(ROOT, 'src/inference/llamaRuntime.ts'), 'utf8');
  assert.match(runtime, /getLlama\(\{[^}]*build: 'never'/s, "the worker's getLlama never builds from source");
  const platformPackage = `@esbuild/${process.platform}-${process.arch}`;
  assert.ok(lock.packages[`node_modules/${platformPackage}`], `${platformPackage} is in the lockfile: esbuild's binary is installed without its script`);
  assert.ok(fs.existsSync(path.join(ROOT, 'node_modules', platformPackage, 'package.json')), `${platformPackage} is installed`);
});

test('npm finds no install script left to review (it would warn after every npm install)', (t) => {
  const listed = spawnSync('npm', ['install-scripts', 'ls'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  if (listed.status !== 0 && /Unknown command|install-scripts/.test(`${listed.stderr}`) && !/unreviewed/.test(`${listed.stdout}`)) {
    return t.skip(`this npm (${spawnSync('npm', ['--version'], { encoding: 'utf8' }).stdout.trim()}) has no allowScripts (npm 11.16+)`);
  }
  assert.equal(listed.status, 0, listed.stderr);
  assert.match(listed.stdout, /No packages with unreviewed install scripts/, listed.stdout);
});
