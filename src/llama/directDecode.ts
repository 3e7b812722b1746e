import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import type { Token } from '../shared/decoding';
import type { SequenceInternals } from './evaluatorInternals';
import type { NativeAddon } from './nativeAddon';

/**
 * What a decode without the library's batch queue needs of node-llama-cpp's context and sequence
 * objects (the same in 3.21.1 and 3.22.1): the native context, its disposal guard, its batch size, the
 * backend, and the sequence's position and tokens, which are kept in step here exactly as the
 * library's own decode keeps them.
 */
interface DirectContextInternals {
  _ctx: object;
  _backendContextDisposeGuard: { createPreventDisposalHandle(): { dispose(): void } };
  _llama: { gpu: string | false };
  batchSize: number;
}
interface DirectSequenceInternals {
  _sequenceId: number;
  _nextTokenIndex: number;
  _contextTokens: Token[];
  _loadedTokenPredictions: unknown[];
  needsCheckpoints: boolean;
  _context: DirectContextInternals;
}

/**
 * Decodes a sequence's batches with the native addon's `decode` (one asynchronous call a batch,
 * straight to llama_decode) instead of node-llama-cpp's batch queue, whose lock, scheduling turn,
 * thread reservation and per-output promises cost a fixed amount per step that a plain step pays in
 * full (bench/PROFILE.md, "Around the forward pass"). The library's sequence (its next position and
 * token list) is updated as its own decode does, so everything else — erasing, saving state,
 * `contextTokens` — works unchanged. Batch output j is input position firstOutput + j, as the native
 * readers expect.
 *
 * node-llama-cpp's own lock on the context (lifecycle-utils' withLock, loaded from where the library
 * loads it: loadLibraryLock) keeps these batches and the library's apart.
 *
 * Not used (`unavailable` says why) for a model on a Vulkan GPU, whose decodes node-llama-cpp
 * serialises across contexts with a lock of its own; for models that need the library's checkpoints (sliding-window
 * attention without a full cache, recurrent and hybrid models); where the library's lock cannot be
 * reached; or with DRAFTLINE_DIRECT_DECODE=off.
 */
export class DirectDecoder {
  private constructor(
    private readonly seq: DirectSequenceInternals,
    private readonly addon: NativeAddon,
  ) {}

  /** A decoder for `seq`, or why its batches go through the library. */
  static for(seq: SequenceInternals | undefined, addon: NativeAddon | undefined, onGpu: boolean, asked: 'direct' | 'library' = 'direct'): DirectDecoder | { unavailable: string } {
    if (asked === 'library') return { unavailable: 'asked for the library’s decode' };
    if (process.env.DRAFTLINE_DIRECT_DECODE === 'off') return { unavailable: 'disabled by DRAFTLINE_DIRECT_DECODE=off' };
    if (!seq) return { unavailable: 'node-llama-cpp internals missing' };
    if (!addon || typeof addon.decode !== 'function') return { unavailable: 'the native addon has no decode' };
    const s = seq as unknown as Partial<DirectSequenceInternals>;
    const c = s._context as Partial<DirectContextInternals> | undefined;
    const ok =
      typeof s._sequenceId === 'number' &&
      typeof s._nextTokenIndex === 'number' &&
      Array.isArray(s._contextTokens) &&
      Array.isArray(s._loadedTokenPredictions) &&
      typeof c?._backendContextDisposeGuard?.createPreventDisposalHandle === 'function' &&
      typeof c.batchSize === 'number';
    if (!ok) return { unavailable: 'node-llama-cpp internals missing' };
    if (!libraryLock || 'error' in libraryLock) return { unavailable: libraryLock?.error ?? "node-llama-cpp's context lock was not loaded (loadLibrary)" };
    if (s._loadedTokenPredictions!.length > 0) return { unavailable: 'the sequence holds token predictions of the library’s' };
    // A Vulkan build that found no GPU computes on the CPU: nothing of Vulkan's runs there.
    if (c._llama?.gpu === 'vulkan' && onGpu) return { unavailable: "Vulkan: node-llama-cpp serialises its decodes across contexts, so they stay the library's" };
    if (s.needsCheckpoints) return { unavailable: 'the model needs the library’s checkpoints (sliding-window or recurrent attention)' };
    return new DirectDecoder(s as DirectSequenceInternals, addon);
  }

  /**
   * Decodes `input` at the sequence's next position, with outputs at input positions firstOutput..
   * (all in the last of the context's batches: the caller checks), writes batch output indexes into
   * `batchIndexes`, and calls `read` with them — all under node-llama-cpp's own lock on the context,
   * which its batch dispatch, cuts and state loads take too: no decode of the library's runs between
   * this one and its reads, and none at the same time (two llama_decode calls on one context crash).
   */
  decodeThen<T>(input: readonly Token[], firstOutput: number, batchIndexes: Int32Array, read: (batchIndexes: Int32Array) => T): Promise<T> {
    const withLock = libraryLock as WithLock;
    const context = this.seq._context;
    return withLock([context, 'context'], async () => {
      // In batches of the context's size, each at the sequence's next position; the outputs are all in the last.
      const batchSize = context.batchSize;
      const handle = context._backendContextDisposeGuard.createPreventDisposalHandle();
      const tokens = Int32Array.from(input);
      let lastStart = 0;
      try {
        for (let start = 0; start < input.length; start += batchSize) {
          const end = Math.min(input.length, start + batchSize);
          const chunk = tokens.subarray(start, end);
          lastStart = start;
          await this.addon.decode(context._ctx, this.seq._sequenceId, this.seq._nextTokenIndex, chunk, Math.min(chunk.length, Math.max(0, firstOutput - start)));
          this.seq._nextTokenIndex += chunk.length;
          for (let i = start; i < end; i++) this.seq._contextTokens.push(input[i]!);
        }
      } finally {
        handle.dispose();
      }
      const count = input.length - firstOutput;
      for (let j = 0; j < count; j++) batchIndexes[j] = firstOutput - lastStart + j;
      return read(batchIndexes);
    });
  }
}

type WithLock = <T>(scope: readonly [object, string], callback: () => Promise<T>) => Promise<T>;

/** node-llama-cpp's `withLock`, the very module instance it uses, or why not. */
let libraryLock: WithLock | { error: string } | undefined;

/**
 * Loads lifecycle-utils from node-llama-cpp's own location (the same file, so the same module
 * instance and the same locks as the library's). Once per process, before the first DirectDecoder.
 */
export async function loadLibraryLock(): Promise<void> {
  if (libraryLock) return;
  try {
    const file = createRequire(require.resolve('node-llama-cpp')).resolve('lifecycle-utils');
    const module = (await import(pathToFileURL(file).href)) as { withLock?: unknown };
    libraryLock = typeof module.withLock === 'function' ? (module.withLock as WithLock) : { error: "node-llama-cpp's lifecycle-utils has no withLock" };
  } catch (error) {
    libraryLock = { error: `node-llama-cpp's context lock is not reachable: ${error instanceof Error ? error.message : String(error)}` };
  }
}
