// scripts/build-llama-server.sh caches its llama-server in bench/cache/llama-server. The cache is keyed
// by the llama.cpp release node-llama-cpp ships (llama/llama.cpp.info.json `tag`): after a
// node-llama-cpp move that changes it, the old source and build are thrown away and rebuilt, where the
// cache once kept the old binary silently. Run on a stand-in repository: a git bundle of a one-file
// "llama.cpp" and a `cmake` on PATH that records its calls and writes a fake llama-server.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '../..');

describe('scripts/build-llama-server.sh: the cache follows the llama.cpp release', () => {
  let repo: string;
  let cmakeCalls: string;
  let bin: string;
  const cache = () => path.join(repo, 'bench/cache/llama-server');

  const shipRelease = (tag: string) => {
    const llama = path.join(repo, 'node_modules/node-llama-cpp/llama');
    fs.mkdirSync(llama, { recursive: true });
    fs.writeFileSync(path.join(llama, 'llama.cpp.info.json'), JSON.stringify({ tag, llamaCppGithubRepo: 'ggml-org/llama.cpp' }));
    // The source of that release, as node-llama-cpp ships it: a git bundle.
    const source = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-llama-src-'));
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', ...args], { cwd: source, stdio: 'pipe' });
    git('init', '-q');
    fs.writeFileSync(path.join(source, 'RELEASE'), tag);
    git('add', 'RELEASE');
    git('commit', '-q', '-m', tag);
    git('bundle', 'create', '-q', path.join(llama, 'gitRelease.bundle'), 'HEAD', 'main');
    fs.rmSync(source, { recursive: true, force: true });
  };

  const build = (machineCache = '', checkout = repo, extraEnv: Record<string, string> = {}) => {
    fs.writeFileSync(cmakeCalls, '');
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, DRAFTLINE_MACHINE_CACHE: machineCache, ...extraEnv };
    const run = spawnSync('bash', [path.join(checkout, 'scripts/build-llama-server.sh')], { cwd: checkout, env, encoding: 'utf8' });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    return { output: run.stdout, cmakeRan: fs.readFileSync(cmakeCalls, 'utf8').includes('--build') };
  };
  /** The release the cached binary was built from (the fake cmake builds the bundle's RELEASE file into it). */
  const builtRelease = () => execFileSync(path.join(cache(), 'build/bin/llama-server'), ['--version'], { encoding: 'utf8' }).trim();

  before(() => {
    repo = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-llama-server-'));
    fs.mkdirSync(path.join(repo, 'scripts'));
    fs.copyFileSync(path.join(ROOT, 'scripts/build-llama-server.sh'), path.join(repo, 'scripts/build-llama-server.sh'));
    fs.cpSync(path.join(ROOT, 'scripts/llama-server'), path.join(repo, 'scripts/llama-server'), { recursive: true });
    bin = path.join(repo, '.bin');
    fs.mkdirSync(bin);
    cmakeCalls = path.join(repo, 'cmake-calls');
    // `cmake -S src -B build …` configures; `cmake --build build --target llama-server llama-quantize`
    // makes a llama-server that reports the release of the source it was built from, and a quantizer.
    fs.writeFileSync(
      path.join(bin, 'cmake'),
      `#!/usr/bin/env bash
echo "$*" >> ${JSON.stringify(cmakeCalls)}
if [ "$1" = "-S" ]; then
  src="$2"
  case "$src" in */tools/draftline-server) [ -n "$FAIL_PREBUILT" ] && exit 1; src="$src/../.." ;; esac
  mkdir -p "$4"; cp "$src/RELEASE" "$4/RELEASE"; exit 0
fi
if [ "$1" = "--build" ]; then mkdir -p "$2/bin"; printf '#!/usr/bin/env bash\\necho %s\\n' "$(cat "$2/RELEASE")" > "$2/bin/llama-server"; chmod +x "$2/bin/llama-server"; printf '#!/usr/bin/env bash\\n' > "$2/bin/llama-quantize"; chmod +x "$2/bin/llama-quantize"; fi
`,
      { mode: 0o755 },
    );
  });

  after(() => fs.rmSync(repo, { recursive: true, force: true }));

  it('builds once for a release, then reuses the build', () => {
    shipRelease('v0.4.0');
    const first = build();
    assert.ok(first.cmakeRan, first.output);
    assert.equal(builtRelease(), 'v0.4.0');
    assert.equal(fs.readFileSync(path.join(cache(), 'llama.cpp-release'), 'utf8').trim(), 'v0.4.0');
    const again = build();
    assert.equal(again.cmakeRan, false);
    assert.match(again.output, /already built: .*\(llama\.cpp v0\.4\.0\)/);
  });

  it('rebuilds from the new source when node-llama-cpp ships another release', () => {
    shipRelease('v0.5.0');
    const moved = build();
    assert.match(moved.output, /cache is from llama\.cpp v0\.4\.0; node-llama-cpp ships v0\.5\.0: rebuilding/);
    assert.ok(moved.cmakeRan);
    assert.equal(builtRelease(), 'v0.5.0');
    assert.equal(fs.readFileSync(path.join(cache(), 'src/RELEASE'), 'utf8'), 'v0.5.0');
  });

  it('rebuilds a cache that does not say its release (made before the cache was keyed)', () => {
    fs.rmSync(path.join(cache(), 'llama.cpp-release'));
    const unkeyed = build();
    assert.match(unkeyed.output, /cache is from llama\.cpp \(unknown release\); node-llama-cpp ships v0\.5\.0: rebuilding/);
    assert.ok(unkeyed.cmakeRan);
    assert.equal(builtRelease(), 'v0.5.0');
  });

  it("on node-llama-cpp's prebuilt libraries of this platform: only the server and quantize tool are compiled, the libraries copied beside them", () => {
    const platform = `${process.platform}-${process.arch}`;
    const prebuilt = path.join(repo, 'node_modules/@node-llama-cpp', platform, 'bins', platform);
    fs.mkdirSync(prebuilt, { recursive: true });
    for (const lib of ['libllama-common.so', 'libggml-base.so', 'libggml-cpu-x64.so']) fs.writeFileSync(path.join(prebuilt, lib), lib);
    try {
      fs.rmSync(cache(), { recursive: true, force: true });
      const fast = build();
      assert.match(fast.output, /on node-llama-cpp's prebuilt libraries \(llama\.cpp v0\.5\.0\)/);
      const calls = fs.readFileSync(cmakeCalls, 'utf8');
      assert.match(calls, /^-S \S+\/src\/tools\/draftline-server -B \S+\/build .*-DPREBUILT_BINS=\S+\/bins\//m, calls);
      assert.equal(fs.readFileSync(path.join(cache(), 'src/tools/draftline-server/CMakeLists.txt'), 'utf8'), fs.readFileSync(path.join(ROOT, 'scripts/llama-server/CMakeLists.txt'), 'utf8'));
      assert.equal(fs.readFileSync(path.join(cache(), 'build/bin/libggml-cpu-x64.so'), 'utf8'), 'libggml-cpu-x64.so', "the CPU backends ggml loads from the executable's folder");
      assert.equal(builtRelease(), 'v0.5.0');

      // Where that build fails, the whole of llama.cpp is built.
      fs.rmSync(cache(), { recursive: true, force: true });
      const fallback = build('', repo, { FAIL_PREBUILT: '1' });
      assert.match(fallback.output, /^built .* \(llama\.cpp v0\.5\.0\)$/m);
      assert.match(fs.readFileSync(cmakeCalls, 'utf8'), /^-S \S+\/src -B /m);
      assert.equal(builtRelease(), 'v0.5.0');
    } finally {
      fs.rmSync(path.join(repo, 'node_modules/@node-llama-cpp'), { recursive: true, force: true });
    }
  });

  it("with a machine cache, a second checkout (a fresh CI clone) finds the first one's build", () => {
    const machine = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-machine-cache-'));
    const second = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-llama-server-clone-'));
    try {
      fs.mkdirSync(path.join(second, 'scripts'));
      fs.copyFileSync(path.join(ROOT, 'scripts/build-llama-server.sh'), path.join(second, 'scripts/build-llama-server.sh'));
      fs.cpSync(path.join(repo, 'node_modules'), path.join(second, 'node_modules'), { recursive: true });
      fs.rmSync(cache(), { recursive: true, force: true });
      assert.ok(build(machine).cmakeRan);
      assert.ok(fs.lstatSync(cache()).isSymbolicLink());
      const clone = build(machine, second);
      assert.equal(clone.cmakeRan, false, clone.output);
      assert.match(clone.output, /already built/);
      assert.equal(execFileSync(path.join(second, 'bench/cache/llama-server/build/bin/llama-server'), ['--version'], { encoding: 'utf8' }).trim(), 'v0.5.0');
    } finally {
      fs.rmSync(machine, { recursive: true, force: true });
      fs.rmSync(second, { recursive: true, force: true });
    }
  });
});
