// node scripts/check-node-llama-cpp-platforms.mjs [VERSION]
//
// Lists every platform binary package (@node-llama-cpp/*) that node-llama-cpp declares at VERSION
// (default: the installed one) and whether npm has it published at exactly that version; exits 1 if
// any is missing. node-llama-cpp loads prebuilt binaries of its own version only, so a version with
// one unpublished platform package cannot run on that platform at all (3.22.0/3.22.1 declare Windows
// and macOS packages that were never published): run this before moving Draftline to a version
// (docs/DEVELOPMENT.md, "Moving node-llama-cpp up"). Asks the registry with `npm view` (one query per package).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PLATFORM_SCOPE = '@node-llama-cpp/';

/**
 * Each declared platform package with what the registry has of it.
 * @param {Record<string, string>} declared node-llama-cpp's optionalDependencies (name → version)
 * @param {(name: string) => Promise<string[] | null>} publishedVersions the versions npm has of a package (null: no such package)
 * @returns {Promise<{ ok: boolean, rows: { name: string, version: string, published: boolean, newest: string | null }[] }>}
 */
export async function checkPlatformPackages(declared, publishedVersions) {
  const names = Object.keys(declared)
    .filter((name) => name.startsWith(PLATFORM_SCOPE))
    .sort();
  if (names.length === 0) throw new Error('node-llama-cpp declares no @node-llama-cpp/* platform packages: is this node-llama-cpp?');
  const rows = await Promise.all(
    names.map(async (name) => {
      const versions = (await publishedVersions(name)) ?? [];
      return { name, version: declared[name], published: versions.includes(declared[name]), newest: versions.at(-1) ?? null };
    }),
  );
  return { ok: rows.every((r) => r.published), rows };
}

/** The table printed for the rows, and the verdict. */
export function describeCheck(version, { ok, rows }) {
  const width = Math.max(...rows.map((r) => r.name.length));
  const lines = rows.map((r) => `${r.name.padEnd(width)}  ${r.published ? 'published' : `MISSING at ${r.version}${r.newest ? ` (newest: ${r.newest})` : ' (no version at all)'}`}`);
  const missing = rows.filter((r) => !r.published).length;
  lines.push(
    ok
      ? `node-llama-cpp ${version}: all ${rows.length} platform packages are published.`
      : `node-llama-cpp ${version}: ${missing} of ${rows.length} platform packages are not published at ${version}; it would not run on those platforms. Stay on a version where this check passes.`,
  );
  return lines.join('\n');
}

const run = promisify(execFile);
const npm = async (args) => (await run('npm', [...args, '--json', '--loglevel=error'], { encoding: 'utf8', shell: process.platform === 'win32', maxBuffer: 16 << 20 })).stdout;

/** `npm view <name> versions`: every published version (npm prints a bare string when there is one). */
async function registryVersions(name) {
  try {
    const parsed = JSON.parse(await npm(['view', name, 'versions']));
    return Array.isArray(parsed) ? parsed : [parsed];
  } catch (error) {
    if (/E404|404 Not Found/.test(`${error.stdout ?? ''}${error.stderr ?? ''}`)) return null;
    throw new Error(`npm view ${name} failed: ${(error.stderr || error.message).trim()}`);
  }
}

/** node-llama-cpp's declared packages: from the installed package, or from the registry for another version. */
async function declaredPackages(version) {
  const installed = JSON.parse(readFileSync(join(repo, 'node_modules', 'node-llama-cpp', 'package.json'), 'utf8'));
  if (!version || version === installed.version) return { version: installed.version, declared: installed.optionalDependencies ?? {} };
  const out = await npm(['view', `node-llama-cpp@${version}`, 'optionalDependencies']);
  if (!out.trim()) throw new Error(`npm has no node-llama-cpp@${version}`);
  return { version, declared: JSON.parse(out) };
}

async function main() {
  try {
    const { version, declared } = await declaredPackages(process.argv[2]);
    const result = await checkPlatformPackages(declared, registryVersions);
    console.log(describeCheck(version, result));
    process.exitCode = result.ok ? 0 : 1;
  } catch (error) {
    console.error(`check failed: ${error instanceof Error ? error.message : error}`);
    process.exitCode = 2;
  }
}

// No top-level await: the unit test imports this file through tsx's CommonJS transform.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
