// scripts/check-node-llama-cpp-platforms.mjs: a node-llama-cpp version is fit for Draftline only if
// every platform binary package it declares is published at that very version (the library loads
// binaries of its own version only). The registry is stubbed here: no network.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';

// The script is an ES module (it runs with node alone); the tests are compiled to CommonJS.
const loadScript = () => import('../../scripts/check-node-llama-cpp-platforms.mjs');

const ROOT = path.resolve(__dirname, '../..');

/** A registry that has `versions` of each package (a package left out does not exist). */
const registry = (versions: Record<string, string[]>) => {
  const asked: string[] = [];
  return { asked, lookup: async (name: string) => (asked.push(name), versions[name] ?? null) };
};

describe('check-node-llama-cpp-platforms', () => {
  let checkPlatformPackages: Awaited<ReturnType<typeof loadScript>>['checkPlatformPackages'];
  let describeCheck: Awaited<ReturnType<typeof loadScript>>['describeCheck'];
  before(async () => {
    ({ checkPlatformPackages, describeCheck } = await loadScript());
  });

  it('passes when every declared platform package is published at the declared version', async () => {
    const declared = { '@node-llama-cpp/win-x64': '3.21.1', '@node-llama-cpp/linux-x64': '3.21.1', 'some-other-optional': '1.0.0' };
    const { asked, lookup } = registry({ '@node-llama-cpp/linux-x64': ['3.20.0', '3.21.1'], '@node-llama-cpp/win-x64': ['3.21.1', '3.22.0'] });
    const result = await checkPlatformPackages(declared, lookup);
    assert.equal(result.ok, true);
    // Sorted, and only the platform packages (another optional dependency is not node-llama-cpp's binary).
    assert.deepEqual(
      result.rows.map((r) => [r.name, r.published]),
      [
        ['@node-llama-cpp/linux-x64', true],
        ['@node-llama-cpp/win-x64', true],
      ],
    );
    assert.deepEqual(asked.sort(), ['@node-llama-cpp/linux-x64', '@node-llama-cpp/win-x64']);
    assert.match(describeCheck('3.21.1', result), /all 2 platform packages are published/);
  });

  it('fails, naming each missing package and its newest version, when one is not published at that version (3.22.1 as it was)', async () => {
    const declared = { '@node-llama-cpp/linux-x64': '3.22.1', '@node-llama-cpp/win-x64': '3.22.1', '@node-llama-cpp/mac-arm64-metal': '3.22.1', '@node-llama-cpp/new-platform': '3.22.1' };
    const { lookup } = registry({
      '@node-llama-cpp/linux-x64': ['3.21.1', '3.22.0', '3.22.1'],
      '@node-llama-cpp/win-x64': ['3.21.0', '3.21.1'],
      '@node-llama-cpp/mac-arm64-metal': ['3.21.1'],
    });
    const result = await checkPlatformPackages(declared, lookup);
    assert.equal(result.ok, false);
    const text = describeCheck('3.22.1', result);
    assert.match(text, /@node-llama-cpp\/win-x64 +MISSING at 3\.22\.1 \(newest: 3\.21\.1\)/);
    assert.match(text, /@node-llama-cpp\/mac-arm64-metal +MISSING at 3\.22\.1 \(newest: 3\.21\.1\)/);
    assert.match(text, /@node-llama-cpp\/new-platform +MISSING at 3\.22\.1 \(no version at all\)/);
    assert.match(text, /@node-llama-cpp\/linux-x64 +published/);
    assert.match(text, /3 of 4 platform packages are not published at 3\.22\.1/);
  });

  it('a newer version published is not the declared one: only the exact version counts', async () => {
    const { lookup } = registry({ '@node-llama-cpp/linux-x64': ['3.21.1', '3.23.0'] });
    const result = await checkPlatformPackages({ '@node-llama-cpp/linux-x64': '3.22.0' }, lookup);
    assert.equal(result.ok, false);
  });

  it('refuses a package that declares no platform packages rather than pass it', async () => {
    await assert.rejects(
      checkPlatformPackages({ other: '1.0.0' }, async () => []),
      /declares no @node-llama-cpp\/\* platform packages/,
    );
  });

  it('the installed node-llama-cpp declares its platform packages at its own version (what the script reads)', async () => {
    const installed = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', 'node-llama-cpp', 'package.json'), 'utf8'));
    const declared: Record<string, string> = installed.optionalDependencies;
    const platforms = Object.keys(declared).filter((n) => n.startsWith('@node-llama-cpp/'));
    assert.ok(platforms.length >= 3, `only ${platforms.length} platform packages declared`);
    for (const name of platforms) assert.equal(declared[name], installed.version, name);
    // Stubbed as all published: it passes; one taken away: it fails.
    const all = Object.fromEntries(platforms.map((n) => [n, [installed.version]]));
    assert.equal((await checkPlatformPackages(declared, registry(all).lookup)).ok, true);
    const { [platforms[0]]: _gone, ...rest } = all;
    assert.equal((await checkPlatformPackages(declared, registry(rest).lookup)).ok, false);
  });
});
