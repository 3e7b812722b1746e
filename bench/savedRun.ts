// What the stand-alone benchmarks (bench:profile, bench:long-context) share: their report saved in a
// folder of bench/results named by when it was written, and a process that ends when main does.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodePathHeader, decodePaths, prepareBenchNative } from './decodePath';

const ROOT = path.resolve(__dirname, '..');

/**
 * A run as JSON for bench/results: a path inside the repository (or the bench kit) is written relative
 * to it, so a committed results folder names no folder of the machine that ran it.
 */
export function resultsJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, (_key, v) => (typeof v === 'string' && v.startsWith(ROOT + path.sep) ? path.relative(ROOT, v).split(path.sep).join('/') : v), indent);
}

/**
 * Writes `name`.md and `name`.json into a new results folder (bench/results/<time>-<folderTag>/),
 * or into `options.folder` (a report saved again as a run goes on, so that a run stopped midway keeps
 * what it measured), and prints the report unless `options.quiet`. Returns the folder.
 */
export function saveReport(folderTag: string, name: string, md: string[], json: unknown, options: { folder?: string; quiet?: boolean } = {}): string {
  const dir = options.folder ?? path.join(ROOT, 'bench', 'results', `${new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19)}-${folderTag}`);
  fs.mkdirSync(dir, { recursive: true });
  // The header says what was measured with: the native addon, and each model's decode path.
  const report = [...md.slice(0, 1), '', ...decodePathHeader(), ...md.slice(1)];
  fs.writeFileSync(path.join(dir, `${name}.md`), `${report.join('\n')}\n`);
  fs.writeFileSync(path.join(dir, `${name}.json`), resultsJson({ decodePaths: decodePaths(), ...(json as object) }, 2));
  if (!options.quiet) process.stdout.write(`${report.join('\n')}\n\nsaved ${path.relative(ROOT, dir)}\n`);
  return dir;
}

/**
 * Runs main, the native addon built first (or the run refused, saying why: bench/decodePath.ts), and
 * exits when it ends (the models' native handles would keep the process alive).
 */
export function runBenchmark(main: () => Promise<void>): void {
  prepareBenchNative()
    .then(main)
    .then(
      () => process.exit(0),
      (error) => {
        process.stderr.write(`${(error as Error).stack ?? error}\n`);
        process.exit(1);
      },
    );
}
