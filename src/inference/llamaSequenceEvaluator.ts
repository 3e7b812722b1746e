import type { LlamaContextSequence, LlamaModel } from './llamaTypes';
import { type DeviceSamplerMode, type NativeAddon, nativeAddonFor } from './nativeAddon';
import type { Token } from '../shared/decoding';
import type { EvaluatedNext, GreedyEvaluator, RankedNext } from '../speculation/greedyEvaluator';

/**
 * How the greedy token after each output position is read:
 * - `native`: node-llama-cpp's batch decoder, then Draftline's native greedy reader
 *   (src/native/draftlineNative.cpp) reads every needed position in one synchronous call — one native
 *   round trip a step (the decode) instead of one more per position;
 * - `direct`: the same decoder and one native greedy sampler created once per evaluator, one
 *   `sampleToken` round trip per position read (bench/PROFILE.md: the library's `controlledEvaluate`
 *   sets up a sampler per call and per position, and chains the positions' sampling one after
 *   another: 0.26-0.81 ms a step outside the forward pass on the tiny target, about a fifth of its step);
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
 *   keeps the LAST of tied tokens (CPU and Vulkan here). Only when asked (`deviceGreedy`, forcePath,
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
 * (inference/nativeAddon.ts) was called on before it was created.
 */
export type DeviceGreedyChoice = 'auto' | 'on' | 'off';

export interface EvaluatorOptions {
  deviceGreedy?: DeviceGreedyChoice;
  /**
   * The device path's chain (NativeAddon.attachDeviceGreedy): `top2` (default) ships 16 bytes a row
   * and hands exact ties to the host; `argmax` (llama.cpp's greedy sampler) still ships whole rows.
   */
  deviceSampler?: DeviceSamplerMode;
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
 * The few node-llama-cpp internals the direct path uses (the same in 3.21.1 and 3.22.1). They are
 * checked once when the evaluator is made (`directInternals`); anything missing selects the library
 * path instead.
 */
interface NativeContext {
  /**
   * 3.21: (index, sampler, probabilities, confidence) → token, or [token, probabilities, confidence]
   * when a flag is given; 3.22 adds `logits` and `totalLogitWeight` ([3], [4]). An argument a version
   * does not know is ignored, and its result slot stays empty.
   */
  sampleToken(
    batchLogitIndex: number,
    sampler: NativeSampler,
    probabilities?: boolean,
    confidence?: boolean,
    logits?: boolean,
    totalLogitWeight?: boolean,
  ): Promise<number | [number, unknown, number | undefined, unknown, number | undefined]>;
}
interface NativeSampler {
  applyConfig(config: object): void;
  dispose(): void;
}
interface SequenceInternals {
  _decodeTokens(
    tokens: Token[],
    logits: boolean[],
    priority: number,
    tokenMeter: unknown,
    contextShift: unknown,
    mapper: (batchLogitIndex: number, tokenIndex: number) => unknown,
    afterBatch?: unknown,
  ): Promise<unknown>;
  /** Checkpoints for models whose cache cannot be cut back freely (SWA, recurrent), as controlledEvaluate takes them. */
  _takeIntervalCheckpointIfNeededAfterBatch?: unknown;
  _resolveSamplerConfig(options: { temperature: number }): object;
  _tokenMeter: unknown;
  _contextShift: unknown;
  _context: { _ctx: NativeContext };
  /** The llama.cpp sequence id (the device path attaches its sampler to it). */
  _sequenceId?: number;
}
interface ModelInternals {
  _model: unknown;
  _llama: { _bindings: { AddonSampler: new (model: unknown) => NativeSampler } };
}

/**
 * What the library path asks controlledEvaluate for, and what it reads back. `totalLogitWeight` is
 * node-llama-cpp 3.22+ only (3.21's types lack it and it ignores it), hence typed here, not imported.
 */
interface LibraryGenerateNext {
  token: true;
  totalLogitWeight?: true;
  confidence?: true;
  options: { temperature: number };
}
interface LibraryNext {
  token?: Token | null;
  confidence?: number;
  totalLogitWeight?: number;
}

/** The token of a native sampleToken answer (a bare token, or [token, …] when options were given). */
function sampledToken(result: Awaited<ReturnType<NativeContext['sampleToken']>>): number {
  return Array.isArray(result) ? result[0] : result;
}

/** The library's default evaluation priority (only one sequence per context here: it never competes). */
const EVALUATION_PRIORITY = 5;

function directInternals(sequence: LlamaContextSequence, model: LlamaModel | undefined): { seq: SequenceInternals; model: ModelInternals } | null {
  const seq = sequence as unknown as Partial<SequenceInternals>;
  const m = model as unknown as Partial<ModelInternals> | undefined;
  const ok =
    typeof seq._decodeTokens === 'function' &&
    typeof seq._resolveSamplerConfig === 'function' &&
    typeof seq._context?._ctx?.sampleToken === 'function' &&
    seq._contextShift !== undefined &&
    m?._model !== undefined &&
    typeof m._llama?._bindings?.AddonSampler === 'function';
  return ok ? { seq: seq as SequenceInternals, model: m as ModelInternals } : null;
}

/**
 * GreedyEvaluator on one long-lived node-llama-cpp context sequence. Argmax is llama.cpp's own greedy
 * sampler, the same code path for a batch of 1 and a batch of k, on either path.
 */
export class LlamaSequenceEvaluator implements GreedyEvaluator {
  private cached: Token[] = [];
  /** Tokens evaluated by this sequence since creation (prompt and decode). */
  evaluatedTokens = 0;
  evaluations = 0;
  private currentPath: EvaluatorPath;
  private readonly internals: { seq: SequenceInternals; model: ModelInternals } | null;
  private sampler: NativeSampler | undefined;
  /**
   * Whether the library reports `totalLogitWeight`, per path (the direct path asks the native
   * binding, the library path controlledEvaluate): unknown until the first read with a confidence.
   */
  private readonly reportsTotalLogitWeight: { direct?: boolean; library?: boolean } = {};
  private readonly nativeReader: NativeAddon | undefined;
  /** Why the native reader is not used, when it is not (logged by the session, shown by the profile). */
  readonly nativeUnavailable: string | undefined;
  /** The context's vocabulary (from the native reader's probe; 0 without it). */
  private readonly vocabularySize: number;
  /** Whether the device greedy sampler is attached to this sequence now. */
  private deviceAttached = false;
  /** Why the device path was asked for and is not used (llama.cpp refused it, …); undefined otherwise. */
  deviceUnavailable: string | undefined;
  /**
   * Bytes of logits this evaluator's reads took on the host (a row, vocabulary × 4 bytes, per position
   * the native reader or the direct path's sampler read; none on the device path), and the positions
   * read on every path but the library's: hostLogitBytesPerPosition is the proxy for a verify's
   * transfers (0 on the device path when no confidence is asked).
   */
  hostLogitBytes = 0;
  positionsRead = 0;
  /**
   * Bytes of logits llama.cpp copied to the host in this evaluator's decodes: every output's row, read
   * or not (outputs × vocabulary × 4), without the device sampler; with it, what llama.cpp copied for
   * the rows read (top2: 16 bytes a row; argmax: the whole row and the token).
   */
  shippedLogitBytes = 0;
  /** Batches the device path decoded with its sampler detached, for a confidence or alternatives. */
  deviceDetours = 0;
  /** Batches the device path decoded again on the host because their two best logits tied (top2). */
  deviceTies = 0;
  private readonly deviceSampler: DeviceSamplerMode;
  // Reused across steps: the native reader's arguments and results (no per-step allocation).
  private batchIndexes = new Int32Array(16);
  private expectedTokens = new Int32Array(16);
  private readTokens = new Int32Array(16);
  private readWeights = new Float32Array(16);

  /**
   * `model` enables the native, direct and device paths; `forcePath` is for tests and the profile;
   * `options.deviceGreedy` asks for the device path (DeviceGreedyChoice).
   */
  constructor(
    private readonly sequence: LlamaContextSequence,
    model?: LlamaModel,
    forcePath?: EvaluatorPath,
    options: EvaluatorOptions = {},
  ) {
    this.internals = forcePath === 'library' ? null : directInternals(sequence, model);
    if (forcePath && forcePath !== 'library' && !this.internals) throw new Error(`the ${forcePath} evaluation path needs node-llama-cpp internals this version lacks`);
    const native = this.internals ? nativeAddonFor(sequence.context) : { error: 'node-llama-cpp internals missing' };
    this.nativeReader = 'addon' in native ? native.addon : undefined;
    this.nativeUnavailable = 'error' in native ? native.error : undefined;
    this.vocabularySize = 'addon' in native ? native.vocabularySize : 0;
    if (forcePath === 'native' && !this.nativeReader) throw new Error(`the native greedy reader is unavailable: ${this.nativeUnavailable}`);
    const best: EvaluatorPath = this.nativeReader ? 'native' : this.internals ? 'direct' : 'library';
    this.deviceSampler = options.deviceSampler ?? 'top2';
    const choice = options.deviceGreedy ?? 'off';
    const wantsDevice = forcePath === 'device' || (!forcePath && (choice === 'on' || (choice === 'auto' && computesOnGpu(model))));
    // Asked for and refused (llama.cpp cannot offload it, the context was made without room for it…):
    // the best other path, and the reason in deviceUnavailable.
    this.currentPath = wantsDevice ? (this.attachDevice() ? 'device' : best) : (forcePath ?? best);
  }

  /** The sequence's llama.cpp id, when the library's internals give it. */
  private get sequenceId(): number | undefined {
    return this.internals?.seq._sequenceId;
  }

  /** Attaches the device greedy sampler; false (with deviceUnavailable) when it cannot be. */
  private attachDevice(): boolean {
    if (this.deviceAttached) return true;
    const sequenceId = this.sequenceId;
    if (!this.internals || !this.nativeReader || sequenceId === undefined) {
      this.deviceUnavailable = this.nativeUnavailable ?? 'node-llama-cpp internals missing';
      return false;
    }
    let attached: { offloaded: boolean; reason?: string };
    try {
      attached = this.nativeReader.attachDeviceGreedy(this.internals.seq._context._ctx, sequenceId, this.deviceSampler);
    } catch (error) {
      attached = { offloaded: false, reason: error instanceof Error ? error.message : String(error) };
    }
    this.deviceAttached = attached.offloaded;
    this.deviceUnavailable = attached.offloaded ? undefined : (attached.reason ?? 'llama.cpp did not offload the greedy sampler');
    return attached.offloaded;
  }

  /** Detaches the device greedy sampler, if attached (the context's raw logits are copied again from the next decode). */
  private detachDevice(): void {
    if (!this.deviceAttached) return;
    this.deviceAttached = false;
    const sequenceId = this.sequenceId;
    if (this.internals && this.nativeReader && sequenceId !== undefined) this.nativeReader.detachDeviceGreedy(this.internals.seq._context._ctx, sequenceId);
  }

  /** Whether the device sampler is attached and offloaded now (the device path's tokens come from it). */
  get deviceGreedyAttached(): boolean {
    return this.deviceAttached;
  }

  /** hostLogitBytes / positionsRead: vocabulary × 4 on the native path, 0 on the device path (no confidence asked). */
  get hostLogitBytesPerPosition(): number {
    return this.positionsRead > 0 ? this.hostLogitBytes / this.positionsRead : 0;
  }

  /**
   * Runs one batch with whole rows of logits on the host (a confidence, alternatives): the device
   * sampler detached for it and attached again after. A refused re-attach leaves the native path.
   */
  private async withHostLogits<T>(run: () => Promise<T>): Promise<T> {
    if (this.currentPath !== 'device' || !this.deviceAttached) return run();
    this.detachDevice();
    this.deviceDetours++;
    try {
      return await run();
    } finally {
      if (!this.attachDevice()) this.currentPath = 'native';
    }
  }

  get path(): EvaluatorPath {
    return this.currentPath;
  }

  /**
   * Switches paths between evaluations (the profile compares them on one sequence). `device` where
   * llama.cpp refuses it: the native path, the reason in deviceUnavailable.
   */
  usePath(path: EvaluatorPath): void {
    if (path !== 'library' && !this.internals) throw new Error(`the ${path} evaluation path needs node-llama-cpp internals this version lacks`);
    if ((path === 'native' || path === 'device') && !this.nativeReader) throw new Error(`the native greedy reader is unavailable: ${this.nativeUnavailable}`);
    if (path === 'device') {
      this.currentPath = this.attachDevice() ? 'device' : 'native';
      return;
    }
    this.detachDevice();
    this.currentPath = path;
  }

  /**
   * Where the current path's confidences come from; undefined while unknown (no confidence was read
   * yet on a path that asks the library).
   */
  get confidenceSource(): ConfidenceSource | undefined {
    if (this.currentPath === 'native' || this.currentPath === 'device') return 'native reader';
    const reports = this.reportsTotalLogitWeight[this.currentPath];
    return reports === undefined ? undefined : reports ? 'totalLogitWeight' : 'confidence';
  }

  get tokens(): readonly Token[] {
    return this.cached;
  }

  get capacity(): number {
    return this.sequence.contextSize;
  }

  async append(input: readonly Token[], outputs: number, withConfidence = false, expected?: readonly Token[]): Promise<EvaluatedNext[]> {
    if (input.length === 0) return [];
    if (this.cached.length + input.length > this.capacity) {
      throw new Error(`context full: ${this.cached.length} + ${input.length} tokens > ${this.capacity}`);
    }
    // Fail loudly if the library ever disagrees with our mirror of the cache.
    if (this.sequence.nextTokenIndex !== this.cached.length) {
      throw new Error(`sequence out of sync: ${this.sequence.nextTokenIndex} cached vs ${this.cached.length} expected`);
    }
    const firstOutput = input.length - Math.min(outputs, input.length);
    const internals = this.internals;
    let out: EvaluatedNext[];
    if (!internals || this.currentPath === 'library') out = await this.appendLibrary(input, firstOutput, withConfidence);
    else if (this.currentPath !== 'device') out = await this.appendDirect(internals, input, firstOutput, withConfidence, expected);
    else if (withConfidence) out = await this.withHostLogits(() => this.appendDirect(internals, input, firstOutput, withConfidence, expected));
    else {
      try {
        out = await this.appendDirect(internals, input, firstOutput, withConfidence, expected);
      } catch (error) {
        if (error instanceof DeviceTie) {
          // Two best logits equal: llama.cpp's greedy sampler picks the first of the tied tokens on the
          // whole row, which the device did not ship. The batch again, read on the host.
          this.deviceTies++;
          await this.sequence.eraseContextTokenRanges([{ start: this.cached.length, end: this.sequence.nextTokenIndex }]);
          out = await this.withHostLogits(() => this.appendDirect(internals, input, firstOutput, withConfidence, expected));
          this.cached.push(...input);
          this.evaluatedTokens += input.length;
          this.evaluations++;
          return out;
        }
        if (!(error instanceof DeviceSamplingMissing)) throw error;
        // The sampler was set but did not run on the device (llama.cpp keeps the first samplers of a
        // chain the device supports and sets the chain all the same): the native path from here, this
        // batch decoded again without it.
        this.detachDevice();
        this.deviceUnavailable = error.message;
        this.currentPath = 'native';
        await this.sequence.eraseContextTokenRanges([{ start: this.cached.length, end: this.sequence.nextTokenIndex }]);
        out = await this.appendDirect(internals, input, firstOutput, withConfidence, expected);
      }
    }
    this.cached.push(...input);
    this.evaluatedTokens += input.length;
    this.evaluations++;
    return out;
  }

  /**
   * One batch through the library's decoder, then the greedy token of each output position: in
   * order, and only up to the first position whose token differs from `expected` (a verify step
   * needs nothing after its first rejection: at low acceptance most positions are never read).
   * Read by the native reader in one call, or else by one reused native sampler, a call a position.
   * Confidence is 1 / Σ exp(logit - max): the argmax's own probability, computed without the
   * full-vocabulary sort the library's confidence option does (18 ms per position with a 152k
   * vocabulary) — by the native reader, or by the library where it offers totalLogitWeight (3.22+);
   * else (3.21) the direct path asks for the library's confidence, sort and all (ConfidenceSource).
   */
  private async appendDirect(
    internals: { seq: SequenceInternals; model: ModelInternals },
    input: readonly Token[],
    firstOutput: number,
    withConfidence: boolean,
    expected?: readonly Token[],
  ): Promise<EvaluatedNext[]> {
    const { seq } = internals;
    const count = input.length - firstOutput;
    const batchIndexes = await this.decodeBatch(internals, input, firstOutput);
    if (count <= 0) return [];
    const native = seq._context._ctx;
    const out: EvaluatedNext[] = [];
    if (this.currentPath === 'device' && this.deviceAttached && this.nativeReader) {
      const expectedCount = expected ? Math.min(expected.length, count) : -1;
      for (let j = 0; j < expectedCount; j++) this.expectedTokens[j] = expected![j];
      let read: number;
      const shippedBefore = this.nativeReader.sampledBytes(native);
      try {
        read = this.nativeReader.readSampled(native, batchIndexes, count, this.expectedTokens, expectedCount, this.readTokens);
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        if (/no sampled token/.test(message)) throw new DeviceSamplingMissing(message);
        throw error;
      }
      this.shippedLogitBytes += this.nativeReader.sampledBytes(native) - shippedBefore;
      if (read > 0 && this.readTokens[read - 1] === DEVICE_TIE) throw new DeviceTie();
      this.positionsRead += read;
      for (let j = 0; j < read; j++) out.push({ token: this.readTokens[j] });
      return out;
    }
    if ((this.currentPath === 'native' || this.currentPath === 'device') && this.nativeReader) {
      const expectedCount = expected ? Math.min(expected.length, count) : -1;
      for (let j = 0; j < expectedCount; j++) this.expectedTokens[j] = expected![j];
      const read = this.nativeReader.readGreedy(native, batchIndexes, count, this.expectedTokens, expectedCount, withConfidence, this.readTokens, this.readWeights, this.sequenceId ?? -1);
      this.positionsRead += read;
      this.hostLogitBytes += read * this.vocabularySize * 4;
      for (let j = 0; j < read; j++) {
        const weight = this.readWeights[j];
        out.push(withConfidence && weight > 0 ? { token: this.readTokens[j], confidence: 1 / weight } : { token: this.readTokens[j] });
      }
      return out;
    }
    // In order, one native call each. Reading the next position while the current one is checked
    // (two samplers) measured no faster: the library copies a position's logits into the sampler's
    // candidates under a lock shared by all reads of the context (bench/PROFILE.md).
    const sampler = this.greedySampler(internals);
    for (let j = 0; j < count; j++) {
      const batchLogitIndex = batchIndexes[j];
      const next = withConfidence ? await this.sampleWithConfidence(native, batchLogitIndex, sampler) : { token: sampledToken(await native.sampleToken(batchLogitIndex, sampler)) };
      const token = next.token;
      if (token == null || token < 0) throw new Error(`no next token at input position ${firstOutput + j}`);
      out.push(next.confidence !== undefined ? { token, confidence: next.confidence } : { token });
      this.positionsRead++;
      this.hostLogitBytes += this.vocabularySize * 4;
      // A verify step needs nothing after the first position that disagrees with the proposal.
      if (expected && (j >= expected.length || expected[j] !== token)) break;
    }
    return out;
  }

  /**
   * Decodes `input` in one call through the library's decoder, with outputs at positions
   * `firstOutput`.. of it; returns the batch output index of each (this.batchIndexes, reused).
   */
  private async decodeBatch(internals: { seq: SequenceInternals; model: ModelInternals }, input: readonly Token[], firstOutput: number): Promise<Int32Array> {
    const { seq } = internals;
    const count = input.length - firstOutput;
    // Outputs are read after the whole call: they must all come from its last batch.
    if (count > 1 && input.length > this.sequence.context.batchSize) {
      throw new Error(`${input.length} tokens with ${count} outputs exceed one batch of ${this.sequence.context.batchSize}`);
    }
    this.reserve(count);
    const batchIndexes = this.batchIndexes;
    batchIndexes.fill(-1, 0, count);
    await seq._decodeTokens(
      input.slice(),
      input.map((_, i) => i >= firstOutput),
      EVALUATION_PRIORITY,
      seq._tokenMeter,
      seq._contextShift,
      (batchLogitIndex, tokenIndex) => {
        batchIndexes[tokenIndex - firstOutput] = batchLogitIndex;
        // Not a promise: the library would chain the positions one after another, each a native call.
        return 0;
      },
      seq._takeIntervalCheckpointIfNeededAfterBatch,
    );
    const missing = count > 0 ? batchIndexes.subarray(0, count).indexOf(-1) : -1;
    if (missing >= 0) throw new Error(`no output for input position ${firstOutput + missing}`);
    if (!this.deviceAttached) this.shippedLogitBytes += count * this.vocabularySize * 4;
    return batchIndexes;
  }

  /**
   * GreedyEvaluator.appendRanked: one batch, then the `top` best tokens of each output position —
   * by the native reader (one pass over each row, no sort), else by the library's probabilities
   * (which sort the whole vocabulary at each position: the fallback, slower). From probabilities the
   * margin is ln(p1 / p2): the softmax's normaliser cancels, leaving logit1 − logit2 up to float
   * rounding. The library's sort is not stable, so there the greedy token is put first among equals.
   */
  async appendRanked(input: readonly Token[], outputs: number, top: number): Promise<RankedNext[]> {
    if (input.length === 0) return [];
    if (!(top >= 1)) throw new Error(`top must be at least 1, not ${top}`);
    if (this.cached.length + input.length > this.capacity) {
      throw new Error(`context full: ${this.cached.length} + ${input.length} tokens > ${this.capacity}`);
    }
    if (this.sequence.nextTokenIndex !== this.cached.length) {
      throw new Error(`sequence out of sync: ${this.sequence.nextTokenIndex} cached vs ${this.cached.length} expected`);
    }
    const firstOutput = input.length - Math.min(outputs, input.length);
    const out = await this.withHostLogits(() => this.rankedOutputs(input, firstOutput, top));
    this.cached.push(...input);
    this.evaluatedTokens += input.length;
    this.evaluations++;
    return out;
  }

  /** appendRanked's batch and reads, with whole rows of logits on the host. */
  private async rankedOutputs(input: readonly Token[], firstOutput: number, top: number): Promise<RankedNext[]> {
    const count = input.length - firstOutput;
    const out: RankedNext[] = [];
    if (this.internals && this.currentPath !== 'library') {
      const batchIndexes = await this.decodeBatch(this.internals, input, firstOutput);
      const native = this.internals.seq._context._ctx;
      if ((this.currentPath === 'native' || this.currentPath === 'device') && this.nativeReader && count > 0) {
        const tokens = new Int32Array(count * top);
        const logits = new Float32Array(count * top);
        this.nativeReader.readTop(native, batchIndexes, count, top, tokens, logits, this.sequenceId ?? -1);
        this.positionsRead += count;
        this.hostLogitBytes += count * this.vocabularySize * 4;
        for (let j = 0; j < count; j++) {
          const ranked: Token[] = [];
          for (let r = 0; r < top && tokens[j * top + r] >= 0; r++) ranked.push(tokens[j * top + r]);
          out.push({ tokens: ranked, margin: ranked.length > 1 ? logits[j * top] - logits[j * top + 1] : Number.POSITIVE_INFINITY });
        }
      } else {
        const sampler = this.greedySampler(this.internals);
        for (let j = 0; j < count; j++) {
          const result = await native.sampleToken(batchIndexes[j], sampler, true, false);
          const flat = Array.isArray(result) ? (result[1] as ArrayLike<number> | undefined) : undefined;
          if (!flat) throw new Error(`no probabilities at input position ${firstOutput + j}`);
          const pairs: [Token, number][] = [];
          for (let i = 1; i < flat.length && pairs.length < top + 1; i += 2) pairs.push([flat[i - 1], flat[i]]);
          out.push(rankedFromProbabilities(sampledToken(result), pairs, top));
        }
      }
    } else {
      const items = input.map((token, i) => (i >= firstOutput ? ([token, { generateNext: { token: true, probabilities: true, options: { temperature: 0 } } }] as const) : token));
      const results = await this.sequence.controlledEvaluate(items as never);
      for (let i = firstOutput; i < input.length; i++) {
        const next = results[i]?.next as { token?: Token | null; probabilities?: Map<Token, number> } | undefined;
        if (next?.token == null || !next.probabilities) throw new Error(`no next token at input position ${i}`);
        const pairs: [Token, number][] = [];
        for (const pair of next.probabilities) {
          if (pairs.length > top) break;
          pairs.push(pair);
        }
        out.push(rankedFromProbabilities(next.token, pairs, top));
      }
    }
    return out;
  }

  /**
   * One position's greedy token and its probability through the native sampler: 1 / totalLogitWeight
   * where the library reports it (no sort), else the library's confidence (sorts the vocabulary). The
   * first read asks for totalLogitWeight; a version that ignores that argument answers without it, and
   * the same position is read again for its confidence (the logits stay until the next decode; the
   * greedy sampler, configured without penalties or grammar, keeps no state between reads): once per
   * evaluator, and never on a version that has it.
   */
  private async sampleWithConfidence(native: NativeContext, batchLogitIndex: number, sampler: NativeSampler): Promise<{ token: number; confidence?: number }> {
    if (this.reportsTotalLogitWeight.direct !== false) {
      const result = await native.sampleToken(batchLogitIndex, sampler, false, false, false, true);
      const token = sampledToken(result);
      const weight = Array.isArray(result) ? result[4] : undefined;
      if (weight !== undefined) {
        this.reportsTotalLogitWeight.direct = true;
        return weight > 0 ? { token, confidence: 1 / weight } : { token };
      }
      // No output at this position (the caller says so), or known to report it: nothing to learn.
      if (token < 0 || this.reportsTotalLogitWeight.direct) return { token };
      this.reportsTotalLogitWeight.direct = false;
    }
    const result = await native.sampleToken(batchLogitIndex, sampler, false, true);
    const confidence = Array.isArray(result) ? result[2] : undefined;
    return confidence !== undefined ? { token: sampledToken(result), confidence } : { token: sampledToken(result) };
  }

  /** Grows the reused arrays to hold `count` output positions. */
  private reserve(count: number): void {
    if (count <= this.batchIndexes.length) return;
    const size = Math.max(count, this.batchIndexes.length * 2);
    this.batchIndexes = new Int32Array(size);
    this.expectedTokens = new Int32Array(size);
    this.readTokens = new Int32Array(size);
    this.readWeights = new Float32Array(size);
  }

  private async appendLibrary(input: readonly Token[], firstOutput: number, withConfidence: boolean): Promise<EvaluatedNext[]> {
    // totalLogitWeight, not confidence: the same number for a greedy token, without a sort (see
    // appendDirect). Until it is known whether this version reports it, both are asked for (one sort,
    // once): a version without it answers with its confidence, one with it with both.
    const reports = this.reportsTotalLogitWeight.library;
    const generateNext: LibraryGenerateNext = {
      token: true,
      ...(withConfidence && reports !== false ? { totalLogitWeight: true } : {}),
      ...(withConfidence && reports !== true ? { confidence: true } : {}),
      options: { temperature: 0 },
    };
    const items = input.map((token, i) => (i >= firstOutput ? ([token, { generateNext }] as const) : token));
    const results = await this.sequence.controlledEvaluate(items as never);
    const out: EvaluatedNext[] = [];
    for (let i = firstOutput; i < input.length; i++) {
      const next = results[i]?.next as LibraryNext | undefined;
      if (next?.token == null) throw new Error(`no next token at input position ${i}`);
      const weight = next.totalLogitWeight;
      if (withConfidence && reports === undefined) this.reportsTotalLogitWeight.library = weight !== undefined;
      const confidence = weight !== undefined ? (weight > 0 ? 1 / weight : undefined) : next.confidence;
      out.push(withConfidence && confidence !== undefined ? { token: next.token, confidence } : { token: next.token });
    }
    return out;
  }

  /** The native greedy sampler, made once for the evaluator's life (the library makes one per call). */
  private greedySampler(internals: { seq: SequenceInternals; model: ModelInternals }): NativeSampler {
    if (!this.sampler) {
      const { model, seq } = internals;
      this.sampler = new model._llama._bindings.AddonSampler(model._model);
      this.sampler.applyConfig(seq._resolveSamplerConfig({ temperature: 0 }));
    }
    return this.sampler;
  }

  async truncate(length: number): Promise<void> {
    if (length >= this.cached.length) return;
    await this.sequence.eraseContextTokenRanges([{ start: length, end: this.sequence.nextTokenIndex }]);
    this.cached.length = length;
  }

  /** Forget everything (e.g. after an error left the library's state unknown). */
  async reset(): Promise<void> {
    await this.sequence.clearHistory();
    this.cached = [];
  }

  /** Saves the sequence's KV cells and tokens to `file` (a prompt state evicted for another); returns its size. */
  async saveState(file: string): Promise<number> {
    return (await this.sequence.saveStateToFile(file)).fileSize;
  }

  /**
   * Replaces the sequence's cache by a state saveState wrote from a sequence of the same model and
   * context size (the file is the session's own: see inference/savedPromptStates.ts).
   */
  async loadState(file: string): Promise<void> {
    await this.reset();
    try {
      await this.sequence.loadStateFromFile(file, { acceptRisk: true });
      this.cached = [...this.sequence.contextTokens];
    } catch (error) {
      await this.reset().catch(() => undefined);
      throw error;
    }
  }

  /** Frees the native sampler and detaches the device one (the context and its sequence belong to the caller). */
  async dispose(): Promise<void> {
    this.sampler?.dispose();
    this.sampler = undefined;
    this.detachDevice();
  }
}

/** The device sampler was attached but gave no token (it did not run on the device). */
class DeviceSamplingMissing extends Error {}

/** readSampled's token for a position whose two best logits are equal (top2). */
const DEVICE_TIE = -2;

/** A read position's two best logits tied: the batch is read again on the host. */
class DeviceTie extends Error {}

/** Whether the model's layers compute on a GPU (the device path's `auto`). */
function computesOnGpu(model: LlamaModel | undefined): boolean {
  const m = model as unknown as { gpuLayers?: number; _llama?: { gpu?: string | false } } | undefined;
  return (m?.gpuLayers ?? 0) > 0 && m?._llama?.gpu !== undefined && m._llama.gpu !== false;
}

/**
 * RankedNext from the library's probabilities, most probable first (`pairs`: at least top + 1 of them
 * when the vocabulary has that many): the greedy token `selected` first whatever the (unstable) sort
 * put first among equals, and the margin ln(p1 / p2) = logit1 − logit2.
 */
export function rankedFromProbabilities(selected: Token, pairs: readonly (readonly [Token, number])[], top: number): RankedNext {
  const best = pairs.find(([token]) => token === selected);
  const ordered = best ? [best, ...pairs.filter(([token]) => token !== selected)] : [...pairs];
  const kept = ordered.slice(0, top);
  const [first, second] = ordered;
  const margin = first && second && second[1] > 0 ? Math.log(first[1]) - Math.log(second[1]) : Number.POSITIVE_INFINITY;
  return { tokens: kept.map(([token]) => token), margin: Math.max(0, margin) };
}
