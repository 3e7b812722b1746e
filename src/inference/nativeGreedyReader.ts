import { existsSync } from 'node:fs';
import * as path from 'node:path';

/**
 * Draftline's native greedy reader (src/native/greedyReader.cpp, built by scripts/build-native.mjs
 * into dist/draftline-native.node): the greedy tokens of several output positions of a decoded
 * batch in one synchronous call, where node-llama-cpp's `sampleToken` takes one asynchronous native
 * round trip per position. Optional: without it the evaluator reads through `sampleToken`.
 */
export interface NativeGreedyReader {
  /** Checks the context's native layout and returns its vocabulary size; throws with the reason when unusable. */
  probe(nativeContext: object, contextSize: number, batchSize: number, sequences: number): { vocabularySize: number; library: string };
  /**
   * Reads positions in order, position j from batch output `batchIndexes[j]`, into `outTokens`
   * (and, when asked, Σ exp(logit − max) — node-llama-cpp's `totalLogitWeight`, 1 / which is the
   * greedy token's probability — into `outWeights`); stops after the first j with j ≥ expectedCount
   * or `expected[j]` ≠ its token (expectedCount -1: read all `count`). Returns how many it read.
   */
  readGreedy: (
    nativeContext: object,
    batchIndexes: Int32Array,
    count: number,
    expected: Int32Array,
    expectedCount: number,
    withWeights: boolean,
    outTokens: Int32Array,
    outWeights: Float32Array,
  ) => number;
  /** The index the reader picks in one row of logits (for tests of its tie and NaN rules). */
  argmax(logits: Float32Array): number;
  /** The llama.cpp release and node-llama-cpp version whose headers it was compiled against. */
  readonly llamaCppRelease: string;
  readonly nodeLlamaCppVersion: string;
}

const ADDON_FILE = 'draftline-native.node';

let loaded: { reader: NativeGreedyReader; file: string } | { error: string } | undefined;

/** Where the addon may be: next to the bundled worker (dist/), or dist/ when running from source (tests, bench). */
function candidates(): string[] {
  const fromEnv = process.env.DRAFTLINE_NATIVE_ADDON;
  if (fromEnv) return [fromEnv];
  return [path.join(__dirname, ADDON_FILE), path.resolve(__dirname, '..', '..', 'dist', ADDON_FILE)];
}

/** Loads the addon once per process. `DRAFTLINE_NATIVE_ADDON=off` disables it (the sampleToken path is used). */
export function loadNativeGreedyReader(): { reader: NativeGreedyReader; file: string } | { error: string } {
  if (loaded) return loaded;
  if (process.env.DRAFTLINE_NATIVE_ADDON === 'off') {
    loaded = { error: 'disabled by DRAFTLINE_NATIVE_ADDON=off' };
    return loaded;
  }
  const file = candidates().find((f) => existsSync(f));
  if (!file) {
    loaded = { error: `${ADDON_FILE} was not built (${process.platform === 'linux' ? 'npm run build needs g++' : 'Linux only'})` };
    return loaded;
  }
  try {
    const module = { exports: {} as NativeGreedyReader };
    process.dlopen(module, file);
    loaded = { reader: module.exports, file };
  } catch (error) {
    loaded = { error: `${file} did not load: ${error instanceof Error ? error.message : String(error)}` };
  }
  return loaded;
}
