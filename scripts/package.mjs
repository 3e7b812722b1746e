// Builds a per-platform .vsix: node-llama-cpp with only that platform's prebuilt binaries (npm
// installs all of them: a naive package is ~400 MB), no llama.cpp source bundle, no dev tooling.
// Usage: node scripts/package.mjs [--target linux-x64] [--gpu vulkan|cuda] [--out file.vsix]
import { execFileSync } from 'node:child_process';
import { readdirSync, statSync, writeFileSync, readFileSync, existsSync, renameSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const opt = (name, fallback) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : fallback; };
const target = opt('target', `${process.platform === 'win32' ? 'win32' : process.platform}-${process.arch}`);
const gpu = opt('gpu', '');
const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const out = opt('out', `${pkg.name}-${target}-${pkg.version}.vsix`);

// VS Code target names -> node-llama-cpp binary package names.
const platformOf = { 'linux-x64': 'linux-x64', 'linux-arm64': 'linux-arm64', 'linux-armhf': 'linux-armv7l', 'darwin-arm64': 'mac-arm64-metal', 'darwin-x64': 'mac-x64', 'win32-x64': 'win-x64', 'win32-arm64': 'win-arm64' };
const base = platformOf[target];
if (!base) throw new Error(`unknown target ${target}; one of ${Object.keys(platformOf).join(', ')}`);
const keep = new Set([base, ...(gpu ? [`${base}-${gpu}`] : [])]);
const present = existsSync('node_modules/@node-llama-cpp') ? readdirSync('node_modules/@node-llama-cpp') : [];
for (const k of keep) if (!present.includes(k)) throw new Error(`@node-llama-cpp/${k} is not installed (npm install it first)`);

const ignore = [
  '.ci/**', '.cache/**', 'test/**', 'test-output/**', 'bench/**', 'scripts/**', 'src/**', '**/*.ts', '**/*.map', 'tsconfig.json', 'esbuild.mjs', '*.vsix', '.gitignore',
  'models/recipe/**', 'models/tiny-*', 'README.md', 'dist/desktop-suite.js*',
  'node_modules/node-llama-cpp/llama/gitRelease.bundle', 'node_modules/node-llama-cpp/llama/xpack/**', 'node_modules/node-llama-cpp/templates/**',
  'node_modules/typescript/**', 'node_modules/.bin/**',
  ...present.filter((p) => !keep.has(p)).map((p) => `node_modules/@node-llama-cpp/${p}/**`),
];
execFileSync(process.execPath, ['esbuild.mjs'], { stdio: 'inherit' });
// The packaged README is the user part of ours: the benchmark section links repository files
// (SVG charts) that a .vsix cannot carry.
mkdirSync('.cache', { recursive: true });
const readme = join('.cache', 'README.vsix.md');
writeFileSync(readme, readFileSync('README.md', 'utf8').split('\n## Benchmark')[0]);
const had = existsSync('.vscodeignore');
if (had) renameSync('.vscodeignore', '.vscodeignore.bak');
writeFileSync('.vscodeignore', ignore.join('\n') + '\n');
try {
  execFileSync(join('node_modules', '.bin', 'vsce'), ['package', '--target', target, '--out', out, '--readme-path', readme, '--allow-missing-repository', '--skip-license'], { stdio: ['ignore', 'inherit', 'inherit'] });
} finally {
  rmSync('.vscodeignore');
  if (had) renameSync('.vscodeignore.bak', '.vscodeignore');
}
console.log(`${out}: ${(statSync(out).size / 1e6).toFixed(1)} MB (${target}${gpu ? ` + ${gpu}` : ''})`);
