import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { UnifiedAddon } from './unifiedAddon';

/**
 * Draftline's native addon (src/llama/native/, built by scripts/build-native.mjs into
 * dist/draftline-native.node), what node-llama-cpp (3.21, 3.22) has no API for:
 * - the greedy tokens of several output positions of a decoded batch in one synchronous call, where
 *   the library's `sampleToken` takes one asynchronous native round trip per position;
 * - the few highest logits of several positions (alternative completions branch on them), where the
 *   library sorts the whole vocabulary per position;
 * - a batch decoded in one asynchronous call, where the library's batch queue costs a fixed amount a step;
 * - a persistent CPU threadpool per context, where llama.cpp (as node-llama-cpp builds it, without
 *   OpenMP) creates and joins its worker threads for every graph it computes.
 * - contexts of Draftline's own with one KV stream for all their sequences, where a batch may hold a
 *   token tree (unifiedAddon.ts).
 * Optional: without it tokens are read through `sampleToken` and llama.cpp makes its own threads.
 */
export interface NativeAddon extends UnifiedAddon {
  /** Checks the context's native layout (the KV cells, batch size and sequences node-llama-cpp gave llama.cpp) and returns its vocabulary size; throws with the reason when unusable. */
  probe(nativeContext: object, contextCells: number, batchSize: number, sequences: number): { vocabularySize: number; library: string };
  /**
   * Reads positions in order, position j from batch output `batchIndexes[j]` of node-llama-cpp's
   * context object or a Draftline context's handle (NativeTarget), into `outTokens`
   * (and, when asked, Σ exp(logit − max) — what node-llama-cpp 3.22+ reports as `totalLogitWeight`,
   * 1 / which is the greedy token's probability — into `outWeights`); stops after the first j with j ≥ expectedCount
   * or `expected[j]` ≠ its token (expectedCount -1: read all `count`). Returns how many it read.
   * Throws while a device greedy sampler is attached to `sequenceId` (default: to any sequence of the
   * context): those rows are not copied to the host any more.
   */
  readGreedy: (
    nativeContext: NativeTarget,
    batchIndexes: Int32Array,
    count: number,
    expected: Int32Array,
    expectedCount: number,
    withWeights: boolean,
    outTokens: Int32Array,
    outWeights: Float32Array,
    sequenceId?: number,
  ) => number;
  /**
   * The `top` highest logits of each of `count` positions (position j from batch output
   * `batchIndexes[j]`), best first, into `outTokens` / `outLogits` at [j * top + rank]; ties to the
   * lower token id, so rank 0 is readGreedy's token. Unfilled ranks (a vocabulary smaller than `top`)
   * hold token -1. Returns `count`. For alternative completions, read only when asked for.
   */
  readTop: (nativeContext: NativeTarget, batchIndexes: Int32Array, count: number, top: number, outTokens: Int32Array, outLogits: Float32Array, sequenceId?: number) => number;
  /**
   * Decodes one batch of one sequence (tokens at positions firstPosition.., outputs from token
   * firstOutput on; batch output j is token firstOutput + j) with llama_decode on a worker thread,
   * without the library's batch queue (llama/directDecode.ts keeps the library's sequence in step).
   */
  decode(nativeContext: object, sequenceId: number, firstPosition: number, tokens: Int32Array, firstOutput: number): Promise<void>;
  /** Gives the context a persistent CPU threadpool of `threads` (llama.cpp's `poll` level: 0 = workers sleep between graphs). Before its first decode. */
  attachThreadpool(nativeContext: object, threads: number, poll: number): boolean;
  /**
   * Frees the context's threadpool (false when it had none). Only after the context is disposed (it
   * throws before): llama.cpp's CPU backend touches its last threadpool when it switches away from it.
   */
  releaseThreadpool(nativeContext: object): boolean;
  /**
   * Device greedy (llama.cpp's backend sampling, experimental): a new sampler chain set as the
   * sequence's backend sampler, so that each output row is reduced on the device. `top2` (default):
   * top_k(2), the two best token ids and logits come back (16 bytes a row) and readSampled takes the
   * larger, reporting a tie; `argmax`: llama.cpp's greedy sampler, whose token comes back but which
   * leaves the whole row as the chain's output, so llama.cpp still copies every row to the host (and
   * ggml_argmax keeps the last of equal logits). `offloaded` false, with the reason, when llama.cpp
   * cannot (the context then reads logits on the host). While attached, readGreedy / readTop
   * refuse the sequence: its raw rows are not copied any more (stale). The context must have been
   * created after allowDeviceGreedy (below): llama.cpp's default allows one sampled output per
   * sequence in a batch.
   */
  attachDeviceGreedy(nativeContext: object, sequenceId: number, mode?: DeviceSamplerMode): { offloaded: boolean; reason?: string; mode: DeviceSamplerMode };
  /** Unsets the sequence's device sampler (from a live context) and frees it; false when it had none. */
  detachDeviceGreedy(nativeContext: object, sequenceId: number): boolean;
  /** Frees every device sampler of the context (unset first where it lives); how many. */
  releaseDeviceGreedy(nativeContext: object): number;
  /**
   * readGreedy's contract (the same order and stops) for a context with a device sampler: the tokens
   * the device sampled, no row of logits read. `top2`: a position whose two best logits are equal
   * reads as token -2 and ends the read (decode it again without the sampler for its greedy token).
   * Throws when none is attached.
   */
  readSampled: (nativeContext: object, batchIndexes: Int32Array, count: number, expected: Int32Array, expectedCount: number, outTokens: Int32Array) => number;
  /** Before node-llama-cpp creates the native context (after `new AddonContext`): lets a sampled sequence have a whole batch of outputs. */
  allowSampledOutputs(nativeContext: object): boolean;
  /**
   * Bytes of logits readGreedy / readTop read on the host (vocabulary × 4 a position read; readSampled
   * none), for the context or, without one, the process.
   */
  hostLogitBytes(nativeContext?: NativeTarget): number;
  /** Bytes llama.cpp copied to the host for the rows readSampled read (token, candidates, logits, probabilities), for the context or the process. */
  sampledBytes(nativeContext?: object): number;
  /** The index the reader picks in one row of logits (for tests of its tie and NaN rules). */
  argmax(logits: Float32Array): number;
  /** The calling contract of the build (ADDON_API_VERSION). */
  readonly apiVersion: number;
  /** The llama.cpp release and node-llama-cpp version whose headers it was compiled against. */
  readonly llamaCppRelease: string;
  readonly nodeLlamaCppVersion: string;
  /** Whether those headers have the library's sampling lock, which the reader then takes (node-llama-cpp 3.22+; 3.21 has none). */
  readonly takesSamplingLock: boolean;
}

/** What the readers read from: node-llama-cpp's native context object, or the handle of a Draftline context (unifiedAddon.ts). */
export type NativeTarget = object | number;

/** The device sampler chain (NativeAddon.attachDeviceGreedy). */
export type DeviceSamplerMode = 'top2' | 'argmax';

const ADDON_FILE = 'draftline-native.node';
/** What this code expects of the addon's functions; a build exporting another is not used. */
const ADDON_API_VERSION = 6;
/** node-llama-cpp pads a context's KV cells up to a multiple of this (its `contextSizePad`). */
const CONTEXT_CELLS_PAD = 256;

let loaded: { addon: NativeAddon; file: string } | { error: string } | undefined;

/** Where the addon may be: next to the bundled worker (dist/), or dist/ when running from source (tests, bench). */
function candidates(): string[] {
  const fromEnv = process.env.DRAFTLINE_NATIVE_ADDON;
  if (fromEnv) return [fromEnv];
  return [path.join(__dirname, ADDON_FILE), path.resolve(__dirname, '..', '..', 'dist', ADDON_FILE)];
}

/** Loads the addon once per process. `DRAFTLINE_NATIVE_ADDON=off` disables it (the sampleToken path is used). */
export function loadNativeAddon(): { addon: NativeAddon; file: string } | { error: string } {
  if (loaded) return loaded;
  if (process.env.DRAFTLINE_NATIVE_ADDON === 'off') {
    loaded = { error: 'disabled by DRAFTLINE_NATIVE_ADDON=off' };
    return loaded;
  }
  const file = candidates().find((f) => existsSync(f));
  if (!file) {
    // Packages for other platforms leave it out (scripts/package.mjs): it is built on, and for, Linux x64.
    const here = `${process.platform}-${process.arch}`;
    loaded = { error: here === 'linux-x64' ? `${ADDON_FILE} is not in this install (npm run build makes it, with g++)` : `no native addon for ${here}: it is built for Linux x64 only` };
    return loaded;
  }
  try {
    const module = { exports: {} as NativeAddon };
    process.dlopen(module, file);
    loaded =
      module.exports.apiVersion === ADDON_API_VERSION
        ? { addon: module.exports, file }
        : { error: `${file} is a build of another version (API ${module.exports.apiVersion ?? 'unknown'}, expected ${ADDON_API_VERSION}): run npm run build` };
  } catch (error) {
    loaded = { error: `${file} did not load: ${error instanceof Error ? error.message : String(error)}` };
  }
  return loaded;
}

/** The sizes the addon's probe checks the native layout against (node-llama-cpp's LlamaContext has them). */
interface ContextShape {
  contextSize: number;
  batchSize: number;
  totalSequences: number;
}

/**
 * The addon, when it may touch this context: built for the llama.cpp release node-llama-cpp runs, and
 * the context's native object laid out as the header it was compiled against says (the probe reads
 * only the object's own fields before dereferencing anything).
 */
export function nativeAddonFor(context: ContextShape): { addon: NativeAddon; nativeContext: object; vocabularySize: number } | { error: string } {
  const loaded = loadNativeAddon();
  if ('error' in loaded) return loaded;
  const internals = context as unknown as { _ctx?: object; _llama?: { llamaCppRelease?: { release: string } } };
  if (!internals._ctx) return { error: 'node-llama-cpp internals missing' };
  const release = internals._llama?.llamaCppRelease?.release;
  if (loaded.addon.llamaCppRelease !== release) {
    return { error: `${loaded.file} was built for llama.cpp ${loaded.addon.llamaCppRelease}, node-llama-cpp runs ${release ?? 'an unknown release'}` };
  }
  // As node-llama-cpp asks llama.cpp for them: each sequence its own contextSize cells, padded up.
  const cells = Math.ceil((context.contextSize * context.totalSequences) / CONTEXT_CELLS_PAD) * CONTEXT_CELLS_PAD;
  let vocabularySize: number;
  try {
    vocabularySize = loaded.addon.probe(internals._ctx, cells, context.batchSize, context.totalSequences).vocabularySize;
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
  return { addon: loaded.addon, nativeContext: internals._ctx, vocabularySize };
}

/** A context's persistent threadpool, to release once the context is disposed. */
export interface AttachedThreadpool {
  release(): void;
}

/**
 * Gives a node-llama-cpp context a persistent CPU threadpool when it computes with 2+ threads: without
 * one, llama.cpp (as node-llama-cpp builds it) creates and joins its threads for every graph, which
 * makes a step several times slower than one thread (bench/PROFILE.md). Workers sleep between graphs
 * (poll 0) unless DRAFTLINE_THREADPOOL_POLL says otherwise: a spinning worker of one context would
 * take a core from the other (target and draft alternate).
 */
export function attachThreadpool(context: ContextShape, threads: number): AttachedThreadpool | { error: string } {
  if (threads < 2) return { error: 'one thread: no workers to keep' };
  if (process.env.DRAFTLINE_THREADPOOL === 'off') return { error: 'disabled by DRAFTLINE_THREADPOOL=off' };
  const usable = nativeAddonFor(context);
  if ('error' in usable) return usable;
  const { addon, nativeContext } = usable;
  const poll = Number(process.env.DRAFTLINE_THREADPOOL_POLL ?? 0);
  try {
    addon.attachThreadpool(nativeContext, threads, Number.isFinite(poll) && poll >= 0 ? poll : 0);
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
  let attached = true;
  return {
    release: () => {
      if (!attached) return;
      addon.releaseThreadpool(nativeContext);
      attached = false;
    },
  };
}

/** What allowDeviceGreedy needs of node-llama-cpp's Llama: its native bindings and release. */
interface LlamaBindingsInternals {
  _bindings?: { AddonContext?: new (...args: never[]) => object };
  llamaCppRelease?: { release: string };
}

const ALLOWS_SAMPLED_OUTPUTS = Symbol.for('draftline.allowsSampledOutputs');

/**
 * Makes the contexts this Llama creates from now on able to carry a device greedy sampler
 * (LlamaSequenceEvaluator's `device` path): llama.cpp's default context parameters allow a sequence
 * with a backend sampler one output per batch, and a verify batch has k + 1. The limit is a creation
 * parameter node-llama-cpp does not expose, so its native context class is replaced (on this Llama's
 * bindings, once) by a subclass that raises it between construction and creation. A context that never
 * attaches a sampler is unaffected (llama.cpp reads the limit only for sequences with one). Contexts
 * made before the call refuse attachDeviceGreedy with a reason.
 */
export function allowDeviceGreedy(llama: object): { ok: true } | { error: string } {
  if (process.env.DRAFTLINE_DEVICE_GREEDY === 'off') return { error: 'disabled by DRAFTLINE_DEVICE_GREEDY=off' };
  const loaded = loadNativeAddon();
  if ('error' in loaded) return loaded;
  const { addon } = loaded;
  const internals = llama as LlamaBindingsInternals;
  const bindings = internals._bindings;
  const Original = bindings?.AddonContext;
  if (!bindings || typeof Original !== 'function') return { error: 'node-llama-cpp internals missing' };
  if ((Original as unknown as Record<symbol, boolean>)[ALLOWS_SAMPLED_OUTPUTS]) return { ok: true };
  if (addon.llamaCppRelease !== internals.llamaCppRelease?.release) {
    return { error: `the native addon was built for llama.cpp ${addon.llamaCppRelease}, node-llama-cpp runs ${internals.llamaCppRelease?.release ?? 'an unknown release'}` };
  }
  const Base = Original as unknown as new (...args: unknown[]) => object;
  class AllowingSampledOutputs extends Base {
    constructor(...args: unknown[]) {
      super(...args);
      try {
        addon.allowSampledOutputs(this);
      } catch {
        // Left as llama.cpp's default: attachDeviceGreedy refuses this context with a reason.
      }
    }
  }
  Object.defineProperty(AllowingSampledOutputs, ALLOWS_SAMPLED_OUTPUTS, { value: true });
  Object.defineProperty(AllowingSampledOutputs, 'name', { value: Original.name });
  bindings.AddonContext = AllowingSampledOutputs as unknown as typeof Original;
  return { ok: true };
}
