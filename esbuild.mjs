// Bundles the extension host entry and the inference worker as CommonJS.
// node-llama-cpp stays external: it is ESM-only with native binaries and is loaded with import().
import * as esbuild from 'esbuild';
import { buildNativeOrExplain } from './scripts/build-native.mjs';

const watch = process.argv.includes('--watch');
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  external: ['vscode', 'node-llama-cpp'],
  logLevel: 'info',
};
const builds = [
  { ...common, entryPoints: ['src/vscode/extension.ts'], outfile: 'dist/extension.js' },
  { ...common, entryPoints: ['src/worker/workerMain.ts'], outfile: 'dist/worker.js' },
  // The extension-host test suite (npm run test:desktop); not part of the .vsix.
  { ...common, entryPoints: ['test/desktop/suite.ts'], outfile: 'dist/desktop-suite.js' },
];
// The native addon (optional: without it tokens are read through node-llama-cpp and llama.cpp makes
// its threads per graph, slower).
buildNativeOrExplain();
if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}
