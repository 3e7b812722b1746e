import type { DeviceSamplerMode } from './nativeAddon';

/**
 * How the greedy token after each output position is read:
 * - `native`: node-llama-cpp's batch decoder, then Draftline's native greedy reader
 *   (src/llama/native/) reads every needed position in one synchronous call — one native
 *   round trip a step (the decode) instead of one more per position;
 * - `direct`: the same decoder and one native greedy sampler created once per evaluator, one
 *   `sampleToken` round trip per position read (the library's `controlledEvaluate` sets up a sampler
 *   per call and per position, and chains the positions' sampling one after another; bench/PROFILE.md
 *   measures what that costs);
 * - `library`: `controlledEvaluate`, the public API, when the internals `direct` needs are missing
 *   (another node-llama-cpp version) — slower, same tokens;
 * - `device`: the native path's decoder with a sampler chain attached to the sequence through
 *   llama.cpp's backend sampling (experimental): each output row is reduced on the device inside the
 *   decode's graph and only that comes back (readSampled), where the other paths ship each row of
 *   logits (vocabulary × 4 bytes: 608 KB for Qwen's 151,936) to the host and argmax it there. The
 *   default chain, top_k(2), ships the two best token ids and logits (16 bytes a row) and the greedy
 *   token is the larger; when the two are equal the batch is decoded again and read on the host, so
 *   the tokens are llama.cpp's greedy sampler's (the first of tied tokens) always. The `argmax` chain
 *   (llama.cpp's greedy sampler) is no use for transfers: it still ships every row, and ggml_argmax
 *   keeps the LAST of tied tokens (CPU and Vulkan). Only when asked (`deviceGreedy`, forcePath,
 *   usePath), and only where llama.cpp offloads it; else the native path, with the reason in
 *   `deviceUnavailable`. A confidence or alternatives need whole rows: such a call detaches the
 *   sampler for its batch, reads on the host and attaches it again (llama.cpp re-reserves its
 *   scheduler at each: keep those rare). On a CPU it is slower, not faster (nothing to ship; the
 *   reductions are ggml's single-threaded ops), hence `auto` only on a GPU.
 * The best available of the first three is chosen; all give the same tokens (test/model/sequenceEvaluator.test.ts,
 * test/model/deviceGreedy.test.ts).
 */
export type EvaluatorPath = 'native' | 'direct' | 'library' | 'device';

/**
 * Whether an evaluator uses the device path: `on` wherever llama.cpp offloads the greedy sampler
 * (the CPU backend included), `auto` only where the model computes on a GPU (on a CPU there are no
 * rows to ship), `off` (the default) never. The context must come from a Llama that allowDeviceGreedy
 * (llama/nativeAddon.ts) was called on before it was created.
 */
export type DeviceGreedyChoice = 'auto' | 'on' | 'off';

export interface EvaluatorOptions {
  deviceGreedy?: DeviceGreedyChoice;
  /**
   * The device path's chain (NativeAddon.attachDeviceGreedy): `top2` (default) ships 16 bytes a row
   * and hands exact ties to the host; `argmax` (llama.cpp's greedy sampler) still ships whole rows.
   */
  deviceSampler?: DeviceSamplerMode;
  /**
   * How the native and device paths decode a batch: `direct` (default, where available): the native
   * addon's decode, straight to llama_decode (llama/directDecode.ts); `library`: node-llama-cpp's
   * batch queue, as the other paths always do. The same tokens either way.
   */
  decode?: 'direct' | 'library';
  /** Whether removeRange may shift cached tokens (the model's cache can: llama/cacheShift.ts); unset: no. */
  shift?: boolean;
}

/**
 * Where the `confidence` of a drafted token (the greedy token's probability, p(top)) comes from:
 * - `native reader`: 1 / Σ exp(logit − max), summed by Draftline's native reader in token order;
 * - `totalLogitWeight`: 1 / the library's `totalLogitWeight` (node-llama-cpp 3.22+), the same sum,
 *   the same number, one pass over the vocabulary;
 * - `confidence`: the library's `confidence` (node-llama-cpp 3.21, which has no totalLogitWeight):
 *   the same probability, exp(0) / Σ exp(logit − max) in float, but the library sorts the whole
 *   vocabulary before summing (in that order: equal to the others up to float rounding).
 * Which of the last two a version offers is found on the first read that asks (`confidenceSource`
 * says), not from its version number.
 */
export type ConfidenceSource = 'native reader' | 'totalLogitWeight' | 'confidence';

/**
 * Whether the library reports `totalLogitWeight`, per path (the direct path asks the native binding,
 * the library path controlledEvaluate): unknown until the first read with a confidence.
 */
export interface TotalLogitWeightSupport {
  direct?: boolean;
  library?: boolean;
}
