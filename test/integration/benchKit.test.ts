// `npm run bench:kit`: the benchmark for a GPU machine with no network and no Node. The kit is made
// (into an empty folder away from the repository), its archive checked against what such a machine
// takes, and `run.sh lease --small` run there on the CPU with no node on PATH and, where this machine
// can, no network at all (a network namespace of its own): every step of a lease must start, the
// llama-server the kit would build (here: the one scripts/build-llama-server.sh built) must answer
// in the kit's environment, and the results archive must be written.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { serverEnv } from '../../testbed/llamaServer';

const ROOT = path.resolve(__dirname, '../..');
/** The kit's archive limit (scripts/benchKit.ts KIT_LIMIT_BYTES): 64 MiB travels to the box, less room for the command's own files. */
const LIMIT = 60 * 2 ** 20;
const SERVER_BIN = path.join(ROOT, 'bench', 'cache', 'llama-server', 'build', 'bin');
/** Short: every step starts and most are cut at their limits (the minimum, 20 s). */
const BUDGET_S = 150;
const LEASE_STEPS = ['edits-gpu-q8', 'regime1-gpu', 'trees-gpu', 'kv-branches-gpu', 'regime2-gpu', 'edits-gpu-f16', 'profile-gpu', 'edits-cpu', 'regime1-cpu'];

/**
 * `unshare -n` when it works here (root, or user namespaces): then the run has no network interface
 * but loopback, brought up for the bench to talk to llama-server on 127.0.0.1.
 */
function noNetwork(): string[] {
  const which = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
  const [unshare, ip] = [which('unshare'), which('ip')];
  if (!unshare || !ip) return [];
  const wrap = [unshare, '-n', '/bin/sh', '-c', `${ip} link set lo up && exec "$@"`, 'sh'];
  return spawnSync(wrap[0], [...wrap.slice(1), 'true']).status === 0 ? wrap : [];
}

describe('bench kit', () => {
  it('gives llama.cpp programs the library path from before run.sh changed it', () => {
    const env = { PATH: '/bin', LD_LIBRARY_PATH: '/kit/node-llama-cpp:/usr/local/cuda/lib64', DRAFTLINE_SERVER_LD_LIBRARY_PATH: '/usr/local/cuda/lib64' };
    assert.deepEqual(serverEnv(env), { PATH: '/bin', LD_LIBRARY_PATH: '/usr/local/cuda/lib64' });
    assert.deepEqual(serverEnv({ PATH: '/bin', LD_LIBRARY_PATH: '/kit/node-llama-cpp', DRAFTLINE_SERVER_LD_LIBRARY_PATH: '' }), { PATH: '/bin' });
    // Outside the kit nothing changes.
    assert.deepEqual(serverEnv({ PATH: '/bin', LD_LIBRARY_PATH: '/x' }), { PATH: '/bin', LD_LIBRARY_PATH: '/x' });
  });

  it('keeps a GPU build whose llama-server does not start: ggml-cuda in place, the server set aside, no rebuild', () => {
    // build-cuda.sh on stand-ins for nvidia-smi, nvcc and cmake (the build writes a llama-server that
    // cannot start): what only a GPU machine would otherwise show.
    const kit = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-build-cuda-'));
    try {
      fs.copyFileSync(path.join(ROOT, 'scripts', 'bench-kit', 'build-cuda.sh'), path.join(kit, 'build-cuda.sh'));
      const bins = path.join(kit, 'node_modules', '@node-llama-cpp', 'linux-x64-cuda', 'bins', 'linux-x64-cuda');
      fs.mkdirSync(bins, { recursive: true });
      fs.writeFileSync(path.join(bins, 'libggml-base.so'), '');
      fs.mkdirSync(path.join(kit, 'src', 'llama.cpp'), { recursive: true });
      fs.writeFileSync(path.join(kit, 'src', 'llama.cpp', 'CMakeLists.txt'), '');
      execFileSync('tar', ['-cJf', path.join(kit, 'llama.cpp.tar.xz'), '-C', path.join(kit, 'src'), 'llama.cpp']);
      const stubs = path.join(kit, 'stubs');
      fs.mkdirSync(stubs);
      const stub = (name: string, body: string) => fs.writeFileSync(path.join(stubs, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
      stub('nvidia-smi', 'echo 9.0');
      stub('nvcc', 'echo "Cuda compilation tools, release 13.0"');
      // cmake -S … -B BUILD configures; cmake --build BUILD … writes what the targets would.
      stub(
        'cmake',
        [
          'if [ "$1" = --build ]; then',
          '  mkdir -p "$2/bin" && : >"$2/bin/libggml-cuda.so"',
          `  printf '#!/bin/sh\\nexit 1\\n' >"$2/bin/llama-server" && printf '#!/bin/sh\\nexit 0\\n' >"$2/bin/llama-quantize"`,
          '  chmod +x "$2/bin/llama-server" "$2/bin/llama-quantize"',
          'fi',
        ].join('\n'),
      );
      const env = { PATH: `${stubs}:/usr/bin:/bin` };
      const first = spawnSync('bash', [path.join(kit, 'build-cuda.sh')], { env, encoding: 'utf8' });
      assert.equal(first.status, 3, first.stderr);
      assert.match(first.stderr, /ggml-cuda is built, but the built llama-server does not start/);
      assert.ok(fs.existsSync(path.join(bins, 'libggml-cuda.so')), 'ggml-cuda in place');
      const serverBin = path.join(kit, 'bench', 'cache', 'llama-server', 'build', 'bin');
      // The bench leaves llama-server's modes out where it finds no server (testbed/llamaServer.ts); llama-quantize stays.
      assert.equal(fs.existsSync(path.join(serverBin, 'llama-server')), false);
      assert.ok(fs.existsSync(path.join(serverBin, 'llama-quantize')));
      const again = spawnSync('bash', [path.join(kit, 'build-cuda.sh')], { env, encoding: 'utf8' });
      assert.equal(again.status, 0, again.stderr);
      assert.match(again.stdout, /already built/);
    } finally {
      fs.rmSync(kit, { recursive: true, force: true });
    }
  });

  it('fits the upload limit, and runs a lease from an empty folder without node on PATH or network', () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-kit-'));
    try {
      let t = Date.now();
      execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts/benchKit.ts'), '--out', work], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
      // The kit and the models travel apart (scripts/benchKit.ts): each must fit.
      const sizes = ['draftline-bench-kit.tar.xz', 'draftline-bench-kit-models.tar.xz'].map((f) => [f, fs.statSync(path.join(work, f)).size] as const);
      process.stdout.write(`# bench kit: made in ${((Date.now() - t) / 1000).toFixed(0)} s; ${sizes.map(([f, n]) => `${f} ${(n / 2 ** 20).toFixed(1)} MiB`).join(', ')}\n`);
      for (const [file, size] of sizes) assert.ok(size <= LIMIT, `${file} is ${(size / 2 ** 20).toFixed(1)} MiB, over ${LIMIT / 2 ** 20} MiB`);
      const kit = path.join(work, 'draftline-bench-kit');
      // A PATH with the shell tools run.sh and lease.sh use and no node (nor npm, nor git).
      const bin = path.join(work, '.path');
      fs.mkdirSync(bin);
      for (const tool of ['bash', 'env', 'cat', 'tr', 'cut', 'dirname', 'date', 'nproc', 'timeout', 'tee', 'tar', 'gzip', 'du', 'mkdir', 'tail']) {
        const where = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
        assert.ok(where, `${tool} is on this machine`);
        fs.symlinkSync(where, path.join(bin, tool));
      }
      // Where build-cuda.sh leaves the server it builds, the CPU build of the same llama.cpp source.
      const server = fs.existsSync(path.join(SERVER_BIN, 'llama-server'));
      if (!server && process.env.DRAFTLINE_REQUIRE_LLAMA_SERVER === '1') assert.fail(`${SERVER_BIN}/llama-server is missing (scripts/build-llama-server.sh)`);
      if (server) {
        fs.mkdirSync(path.join(kit, 'bench', 'cache', 'llama-server', 'build'), { recursive: true });
        fs.symlinkSync(SERVER_BIN, path.join(kit, 'bench', 'cache', 'llama-server', 'build', 'bin'));
      }
      const out = path.join(work, 'out');
      const isolated = noNetwork();
      // A short budget: the steps are cut at their limits (each must start and end, on its own or at its limit).
      const command = [...isolated, path.join(bin, 'bash'), path.join(kit, 'run.sh'), 'lease', '--small', '--budget-s', String(BUDGET_S), '--out', out];
      t = Date.now();
      const run = spawnSync(command[0], command.slice(1), { cwd: os.tmpdir(), env: { PATH: bin, HOME: kit }, encoding: 'utf8', timeout: 900_000 });
      const output = `${run.stdout}\n${run.stderr}`;
      assert.equal(run.status, 0, output.slice(-4000));
      const log = fs.readFileSync(path.join(out, 'lease.log'), 'utf8');
      process.stdout.write(
        `# bench kit: lease in ${((Date.now() - t) / 1000).toFixed(0)} s; ${log.match(/\[lease\] targets written in .*/)?.[0]}; ${log.match(/\[lease\] server check: .*/)?.[0]}; ${log.match(/\[lease\] steps: .*/)?.[0]}\n`,
      );
      for (const step of LEASE_STEPS) assert.match(log, new RegExp(`\\[lease\\] step ${step}: \\d+ s \\(limit \\d+ s\\), (exit 0|stopped at its limit)`), `step ${step}`);
      // Where the KV designs' step ended on its own, both flash-attention settings measured the shared stream's cost.
      if (/\[lease\] step kv-branches-gpu: \d+ s \(limit \d+ s\), exit 0/.test(log))
        for (const setting of ['off', 'on']) assert.match(log, new RegExp(`^\\| v3 \\(.*\\), flash attention ${setting} \\|( [\\d.]+ \\|){7}$`, 'm'), `kv-branches, flash attention ${setting}`);
      if (/Regime 1: the embedded v3 pair/.test(log)) {
        assert.match(log, /Regime 1: the embedded v3 pair \(draftline-code-target \+ draftline-code-draft, CPU \(as set in draftline\.gpu\), context \d+\)/);
        // The bench fails a run on any other difference: n/n, or fewer with the rest at measured ties.
        assert.match(log, /\| hybrid \|.*\| [0-2]\/[12][^|\n]* \|\n/, 'the lossless modes are checked against plain decoding');
      }
      if (server) {
        assert.match(log, /\[server-check\] llama-server answers: started in \d+ ms, [1-9]\d* tokens/, 'llama-server answers in the kit');
        assert.match(log, /\[lease\] server check: exit 0/);
        // Where the first edits step ended on its own, its llama-server modes answered too.
        if (/\[lease\] step edits-gpu-q8: \d+ s \(limit \d+ s\), exit 0/.test(log))
          // A window timed, or a stream it ended with an error event: on the random stand-in's garbage
          // (not valid UTF-8) its chat parser may refuse the output, and the bench counts that run apart.
          assert.match(log, /^\| llama-server ngram-simple \| (1 \| .* \| \d+(\.\d+)? \| |0 \| .* \| 1 \|$)/m, 'llama-server answers in the edits regime');
      } else process.stdout.write('# bench kit: llama-server not built here (scripts/build-llama-server.sh): its check was left out\n');
      const listing = execFileSync('tar', ['-tzf', path.join(out, 'lease-results.tar.gz')], { encoding: 'utf8' });
      // run.ts makes its results folder before its first section.
      assert.match(listing, /^results\/[^/]+\/$/m, listing);
      assert.deepEqual(fs.readdirSync(out).sort(), ['lease-results.tar.gz', 'lease.log']);
      assert.equal(spawnSync(path.join(bin, 'bash'), ['-c', 'command -v node'], { env: { PATH: bin } }).status, 1, 'node is not on the run PATH');
      process.stdout.write(`# bench kit: ran ${isolated.length ? 'in a network namespace of its own' : 'with the network (unshare -n is not allowed here)'}, no node on PATH\n`);
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
});
