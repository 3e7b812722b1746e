// `npm run bench:kit`: the benchmark for a GPU machine with no network and no Node. The kit is made
// (without its archive: the same folder, faster), copied into an empty folder away from the
// repository, and run there with no node on PATH and, where this machine can, no network at all
// (a network namespace of its own): a CPU run of regime 1 on the kit's v3 pair must complete and
// write its results.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '../..');
const OUT = path.join(ROOT, 'test-output', 'bench-kit');

/** `unshare -n` when it works here (root, or user namespaces): then the run has no network interface but loopback. */
function noNetwork(): string[] {
  const unshare = spawnSync('sh', ['-c', 'command -v unshare'], { encoding: 'utf8' }).stdout.trim();
  if (!unshare) return [];
  return spawnSync(unshare, ['-n', 'true']).status === 0 ? [unshare, '-n'] : [];
}

describe('bench kit', () => {
  it('runs from an empty folder without node on PATH or network, and writes its results', () => {
    execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/benchKit.ts'), '--out', OUT, '--no-archive'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    const kit = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-kit-'));
    try {
      fs.cpSync(path.join(OUT, 'draftline-bench-kit'), kit, { recursive: true });
      // A PATH with the shell tools run.sh uses and no node (nor npm, nor git).
      const bin = path.join(kit, '.path');
      fs.mkdirSync(bin);
      for (const tool of ['bash', 'env', 'cat', 'tr', 'dirname']) {
        const where = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
        fs.symlinkSync(where, path.join(bin, tool));
      }
      const isolated = noNetwork();
      const command = [...isolated, path.join(bin, 'bash'), path.join(kit, 'run.sh'), '--gpu', 'cpu', '--quick', '--regimes', '1', '--tasks', '3'];
      const run = spawnSync(command[0], command.slice(1), { cwd: os.tmpdir(), env: { PATH: bin, HOME: kit }, encoding: 'utf8', timeout: 600_000 });
      const output = `${run.stdout}\n${run.stderr}`;
      assert.equal(run.status, 0, output.slice(-3000));
      assert.equal(spawnSync(path.join(bin, 'bash'), ['-c', 'command -v node'], { env: { PATH: bin } }).status, 1, 'node is not on the run PATH');
      assert.match(output, /Regime 1: the embedded v3 pair \(draftline-code-target \+ draftline-code-draft, CPU \(as set in draftline\.gpu\), context \d+\)/);
      // The bench fails the run on any other difference: 3/3, or fewer with the rest at measured ties.
      assert.match(output, /\| hybrid \|.*\| [0-3]\/3[^|\n]* \|\n/, 'the lossless modes are checked against plain decoding');
      const results = fs.readdirSync(path.join(kit, 'bench', 'results'));
      assert.equal(results.length, 1);
      const saved = JSON.parse(fs.readFileSync(path.join(kit, 'bench', 'results', results[0], 'results.json'), 'utf8'));
      assert.ok(saved, 'results.json');
      process.stdout.write(`# bench kit: ran ${isolated.length ? 'in a network namespace of its own' : 'with the network (unshare -n is not allowed here)'}, no node on PATH\n`);
    } finally {
      fs.rmSync(kit, { recursive: true, force: true });
    }
  });
});
