import type { LlamaModel } from './llamaTypes';
import type { LlamaInternals } from './evaluatorInternals';
import type { DeviceSamplerMode, NativeAddon } from './nativeAddon';

/**
 * The device path's sampler (EvaluatorPath `device`): a chain attached to one sequence through
 * llama.cpp's backend sampling, so that each output row is reduced on the device and only the
 * reduction is shipped. Kept apart from the evaluator because attaching, detaching and the two ways a
 * device read gives up (no sampled token, tied logits) are their own protocol with llama.cpp.
 */
export class DeviceGreedyAttachment {
  /** Whether the sampler is attached and offloaded now. */
  attached = false;
  /** Why the device path was asked for and is not used (llama.cpp refused it, …); undefined otherwise. */
  unavailable: string | undefined;

  /** `reader` and `internals` undefined: never attaches, `readerUnavailable` says why. */
  constructor(
    private readonly reader: NativeAddon | undefined,
    private readonly internals: LlamaInternals | null,
    private readonly mode: DeviceSamplerMode,
    private readonly readerUnavailable: string | undefined,
  ) {}

  /** The sequence's llama.cpp id, when the library's internals give it. */
  private get sequenceId(): number | undefined {
    return this.internals?.seq._sequenceId;
  }

  /** Attaches the device greedy sampler; false (with `unavailable`) when it cannot be. */
  attach(): boolean {
    if (this.attached) return true;
    const sequenceId = this.sequenceId;
    if (!this.internals || !this.reader || sequenceId === undefined) {
      this.unavailable = this.readerUnavailable ?? 'node-llama-cpp internals missing';
      return false;
    }
    let result: { offloaded: boolean; reason?: string };
    try {
      result = this.reader.attachDeviceGreedy(this.internals.seq._context._ctx, sequenceId, this.mode);
    } catch (error) {
      result = { offloaded: false, reason: error instanceof Error ? error.message : String(error) };
    }
    this.attached = result.offloaded;
    this.unavailable = result.offloaded ? undefined : (result.reason ?? 'llama.cpp did not offload the greedy sampler');
    return result.offloaded;
  }

  /** Detaches the device greedy sampler, if attached (the context's raw logits are copied again from the next decode). */
  detach(): void {
    if (!this.attached) return;
    this.attached = false;
    const sequenceId = this.sequenceId;
    if (this.internals && this.reader && sequenceId !== undefined) this.reader.detachDeviceGreedy(this.internals.seq._context._ctx, sequenceId);
  }

  /**
   * Reads the sampled tokens of `count` output positions into `readTokens` (up to the first that
   * differs from `expected`); returns how many were read and the bytes llama.cpp shipped for them.
   * Throws DeviceSamplingMissing when the sampler did not run on the device, DeviceTie when the last
   * read position's two best logits are equal (top2).
   */
  read(batchIndexes: Int32Array, count: number, expected: Int32Array, expectedCount: number, readTokens: Int32Array): { read: number; shippedBytes: number } {
    const reader = this.reader!;
    const native = this.internals!.seq._context._ctx;
    const shippedBefore = reader.sampledBytes(native);
    let read: number;
    try {
      read = reader.readSampled(native, batchIndexes, count, expected, expectedCount, readTokens);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (/no sampled token/.test(message)) throw new DeviceSamplingMissing(message);
      throw error;
    }
    const shippedBytes = reader.sampledBytes(native) - shippedBefore;
    if (read > 0 && readTokens[read - 1] === DEVICE_TIE) throw new DeviceTie(shippedBytes);
    return { read, shippedBytes };
  }
}

/** The device sampler was attached but gave no token (it did not run on the device). */
export class DeviceSamplingMissing extends Error {}

/** readSampled's token for a position whose two best logits are equal (top2). */
const DEVICE_TIE = -2;

/** A read position's two best logits tied: the batch is read again on the host. */
export class DeviceTie extends Error {
  /** What llama.cpp shipped for the read that found the tie (counted all the same). */
  constructor(readonly shippedBytes: number) {
    super('tied logits');
  }
}

/** Whether the model's layers compute on a GPU (the device path's `auto`). */
export function computesOnGpu(model: LlamaModel | undefined): boolean {
  const m = model as unknown as { gpuLayers?: number; _llama?: { gpu?: string | false } } | undefined;
  return (m?.gpuLayers ?? 0) > 0 && m?._llama?.gpu !== undefined && m._llama.gpu !== false;
}
