// What the bench measures with (bench/decodePath.ts): the native addon built before a run or the run
// refused with the reason, and each model's decode path named in the report's header.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clearDecodePaths, decodePathHeader, describeDecodePath, prepareNativeAddon, recordDecodePath, WITHOUT_NATIVE_FLAG } from '../../decodePath';

const inputs = (over: Partial<Parameters<typeof prepareNativeAddon>[0]> = {}) => ({ argv: [], env: {} as NodeJS.ProcessEnv, platform: 'linux-x64', build: () => ({ built: false as const }), ...over });

describe('the bench and the native addon', () => {
  it('builds it before the run (up to date: nothing to do), and the header says so', async () => {
    let builds = 0;
    const state = await prepareNativeAddon(
      inputs({
        build: () => {
          builds++;
          return { built: true, seconds: 41.2 };
        },
      }),
    );
    assert.equal(builds, 1);
    assert.equal(state.state, 'built');
    assert.equal(state.line, 'Native addon: dist/draftline-native.node, built for this run (it was missing or stale; 41 s).');
    const current = await prepareNativeAddon(inputs());
    assert.equal(current.line, 'Native addon: dist/draftline-native.node, up to date (built before from the same source).');
    // The bench kit: no build script, the addon made with the kit.
    const shipped = await prepareNativeAddon(inputs({ build: () => ({ built: false, shipped: true }) }));
    assert.equal(shipped.state, 'built');
    assert.equal(shipped.line, 'Native addon: dist/draftline-native.node, built where the bench kit was made, shipped with it.');
  });

  it('refuses a run it cannot build the addon for, with the reason and what to do', async () => {
    const failing = inputs({
      build: () => {
        throw new Error('g++: command not found');
      },
    });
    await assert.rejects(prepareNativeAddon(failing), (error: Error) => {
      assert.match(error.message, /with its native addon \(dist\/draftline-native\.node\), and it could not be built: g\+\+: command not found/);
      assert.match(error.message, /npm run build shows the compiler's output/);
      assert.ok(error.message.includes(WITHOUT_NATIVE_FLAG));
      return true;
    });
  });

  it('measures without it only when asked, and then every model decodes without it', async () => {
    for (const asked of [inputs({ argv: [WITHOUT_NATIVE_FLAG] }), inputs({ env: { DRAFTLINE_NATIVE_ADDON: 'off' } })]) {
      let built = false;
      const state = await prepareNativeAddon({
        ...asked,
        build: () => {
          built = true;
          return { built: false as const };
        },
      });
      assert.equal(built, false, 'nothing built');
      assert.equal(state.state, 'off');
      assert.equal(asked.env.DRAFTLINE_NATIVE_ADDON, 'off', 'the sessions and the worker leave the addon alone');
      assert.match(state.line, /off on purpose .* node-llama-cpp's own path/);
    }
  });

  it('where the addon is not built (not Linux), the run goes on and says so', async () => {
    const state = await prepareNativeAddon(inputs({ platform: 'darwin-arm64', build: () => false }));
    assert.equal(state.state, 'unavailable');
    assert.match(state.line, /none on darwin-arm64 \(it is built for Linux x64 only\)/);
  });
});

describe("the report's header: each model's decode path", () => {
  const native = { tokenReader: 'native, direct decode', threadpool: 'persistent, 2 threads', threads: 2, nativeAddon: { used: true as const } };
  const library = {
    tokenReader: 'library (native reader: draftline-native.node is not in this install (npm run build makes it, with g++)), library batch queue (no addon)',
    threadpool: "llama.cpp's per-graph threads (draftline-native.node is not in this install (npm run build makes it, with g++))",
    threads: 2,
    nativeAddon: { used: false as const, reason: 'draftline-native.node is not in this install (npm run build makes it, with g++)' },
  };

  it('names the path and the threads', () => {
    assert.equal(describeDecodePath(native), 'native; threads: persistent, 2 threads; tokens read: native, direct decode');
    assert.match(describeDecodePath(library), /^library \(no native addon: draftline-native\.node is not in this install .*\); threads: llama\.cpp's per-graph threads/);
  });

  it('lists every model loaded in the run, with the addon line first', () => {
    clearDecodePaths();
    assert.deepEqual(decodePathHeader({ state: 'built', line: 'Native addon: built.' }), [
      'Native addon: built.',
      'Decode path per model (the target; its draft runs beside it the same way):',
      '- no model loaded',
      '',
    ]);
    recordDecodePath({ target: { name: 'draftline-code-target' } as never, ...native });
    recordDecodePath({ target: { name: 'random-target-qwen-vocab' } as never, ...library });
    const header = decodePathHeader({ state: 'built', line: 'Native addon: built.' });
    assert.equal(header[2], '- draftline-code-target: native; threads: persistent, 2 threads; tokens read: native, direct decode');
    assert.match(header[3]!, /^- random-target-qwen-vocab: library \(no native addon/);
    clearDecodePaths();
  });
});
