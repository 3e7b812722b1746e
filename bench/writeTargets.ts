// node --import tsx bench/writeTargets.ts NAME...: writes the named random targets (bench/targets.ts)
// ahead of the runs that use them. The bench kit's lease runs it on the CPU while ggml-cuda builds.
import * as fs from 'node:fs';
import { benchTarget } from './targets';

async function main(): Promise<void> {
  for (const name of process.argv.slice(2)) {
    const t0 = Date.now();
    const target = await benchTarget(name);
    process.stderr.write(`[targets] ${name}: ${target.file} (${(fs.statSync(target.file).size / 1e9).toFixed(2)} GB) in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
