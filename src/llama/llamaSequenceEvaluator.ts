import type { LlamaContextSequence, LlamaModel } from './llamaTypes';
import { type NativeAddon, nativeAddonFor } from './nativeAddon';
import type { Token } from '../shared/decoding';
import type { EvaluatedNext, GreedyEvaluator, RankedNext } from '../speculation/greedyEvaluator';
import { computesOnGpu, DeviceGreedyAttachment, DeviceSamplingMissing, DeviceTie } from './deviceGreedyAttachment';
import { DirectDecoder } from './directDecode';
import { DirectSamplerReads } from './directSamplerReads';
import { checkOutputsFit, decodeWithOutputs, directInternals, type LlamaInternals } from './evaluatorInternals';
import type { ConfidenceSource, EvaluatorOptions, EvaluatorPath, TotalLogitWeightSupport } from './evaluatorPaths';
import { libraryGreedy, libraryRanked } from './libraryEvaluation';
import { NativeReads } from './nativeReads';

export type { ConfidenceSource, DeviceGreedyChoice, EvaluatorOptions, EvaluatorPath } from './evaluatorPaths';
export { rankedFromProbabilities } from './libraryEvaluation';

/**
 * GreedyEvaluator on one long-lived node-llama-cpp context sequence. Argmax is llama.cpp's own greedy
 * sampler, the same code path for a batch of 1 and a batch of k, on every path. This class keeps the
 * cache mirror, picks the path (evaluatorPaths.ts) and how batches are decoded (directDecode.ts); the
 * reads are in nativeReads.ts, directSamplerReads.ts, libraryEvaluation.ts and deviceGreedyAttachment.ts.
 */
export class LlamaSequenceEvaluator implements GreedyEvaluator {
  private cached: Token[] = [];
  /** Tokens evaluated by this sequence since creation (prompt and decode). */
  evaluatedTokens = 0;
  evaluations = 0;
  private currentPath: EvaluatorPath;
  private readonly internals: LlamaInternals | null;
  private readonly direct: DirectSamplerReads | undefined;
  private readonly device: DeviceGreedyAttachment;
  private readonly reportsTotalLogitWeight: TotalLogitWeightSupport = {};
  private readonly nativeReader: NativeAddon | undefined;
  /** Why the native reader is not used, when it is not (logged by the session, shown by the profile). */
  readonly nativeUnavailable: string | undefined;
  /** Batches straight to llama_decode (native and device paths), else through the library's queue. */
  private readonly directDecoder: DirectDecoder | undefined;
  /** Why batches go through the library's queue, when they do. */
  readonly directDecodeUnavailable: string | undefined;
  /** Whether the direct decoder is used now (useDecode; the profile compares both on one sequence). */
  private decodesDirectly = true;
  /** Batches decoded by the direct decoder and by the library's queue (the profile and tests read them). */
  directDecodes = 0;
  libraryDecodes = 0;
  /** The context's vocabulary (from the native reader's probe; 0 without it). */
  private readonly vocabularySize: number;
  /**
   * Bytes of logits this evaluator's reads took on the host (vocabulary × 4 a position read; none on the
   * device path) and the positions read on every path but the library's: a verify's transfers.
   */
  hostLogitBytes = 0;
  positionsRead = 0;
  /** Bytes of logits llama.cpp copied to the host: every output's row without the device sampler; with it, what it copied for the rows read (top2: 16 bytes a row). */
  shippedLogitBytes = 0;
  /** Batches the device path decoded with its sampler detached, for a confidence or alternatives. */
  deviceDetours = 0;
  /** Batches the device path decoded again on the host because their two best logits tied (top2). */
  deviceTies = 0;
  private readonly reads = new NativeReads();
  /** GreedyEvaluator.removeRange, where the options allow shifting. */
  readonly removeRange?: (start: number, end: number) => Promise<void>;

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
    this.direct = this.internals ? new DirectSamplerReads(this.internals, this.reportsTotalLogitWeight) : undefined;
    const decoder = DirectDecoder.for(this.internals?.seq, this.nativeReader, computesOnGpu(model), options.decode);
    this.directDecoder = decoder instanceof DirectDecoder ? decoder : undefined;
    this.directDecodeUnavailable = decoder instanceof DirectDecoder ? undefined : decoder.unavailable;
    this.device = new DeviceGreedyAttachment(this.nativeReader, this.internals, options.deviceSampler ?? 'top2', this.nativeUnavailable);
    const best: EvaluatorPath = this.nativeReader ? 'native' : this.internals ? 'direct' : 'library';
    const choice = options.deviceGreedy ?? 'off';
    const wantsDevice = forcePath === 'device' || (!forcePath && (choice === 'on' || (choice === 'auto' && computesOnGpu(model))));
    // Asked for and refused (llama.cpp cannot offload it, the context was made without room for it…):
    // the best other path, and the reason in deviceUnavailable.
    this.currentPath = wantsDevice ? (this.device.attach() ? 'device' : best) : (forcePath ?? best);
    if (options.shift) this.removeRange = (start, end) => this.shiftOut(start, end);
  }

  /**
   * Drops the cached tokens [start, end): node-llama-cpp removes their cells and moves the later
   * ones back (llama_memory_seq_rm, then seq_add; llama.cpp re-rotates their keys at the next decode).
   */
  private async shiftOut(start: number, end: number): Promise<void> {
    if (start < 1 || end <= start || end > this.cached.length) throw new Error(`cannot shift out [${start}, ${end}) of ${this.cached.length} cached tokens`);
    await this.sequence.eraseContextTokenRanges([{ start, end }]);
    this.cached.splice(start, end - start);
    // The library evaluates the sequence again when llama.cpp refuses the removal; either way its
    // tokens must now be ours.
    if (this.sequence.nextTokenIndex !== this.cached.length) throw new Error(`sequence out of sync after a shift: ${this.sequence.nextTokenIndex} cached vs ${this.cached.length} expected`);
  }

  /** The sequence's llama.cpp id, when the library's internals give it. */
  private get sequenceId(): number | undefined {
    return this.internals?.seq._sequenceId;
  }

  /** Why the device path was asked for and is not used (llama.cpp refused it, …); undefined otherwise. */
  get deviceUnavailable(): string | undefined {
    return this.device.unavailable;
  }

  /** Whether the device sampler is attached and offloaded now (the device path's tokens come from it). */
  get deviceGreedyAttached(): boolean {
    return this.device.attached;
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
    if (this.currentPath !== 'device' || !this.device.attached) return run();
    this.device.detach();
    this.deviceDetours++;
    try {
      return await run();
    } finally {
      if (!this.device.attach()) this.currentPath = 'native';
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
      this.currentPath = this.device.attach() ? 'device' : 'native';
      return;
    }
    this.device.detach();
    this.currentPath = path;
  }

  /** Switches how batches are decoded between evaluations (the profile compares them): `direct` only where the decoder is available. */
  useDecode(decode: 'direct' | 'library'): void {
    this.decodesDirectly = decode === 'direct';
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

  /** Throws unless `input` fits the context and the library's cache still matches our mirror of it. */
  private checkAppend(input: readonly Token[]): void {
    if (this.cached.length + input.length > this.capacity) {
      throw new Error(`context full: ${this.cached.length} + ${input.length} tokens > ${this.capacity}`);
    }
    // Fail loudly if the library ever disagrees with our mirror of the cache.
    if (this.sequence.nextTokenIndex !== this.cached.length) {
      throw new Error(`sequence out of sync: ${this.sequence.nextTokenIndex} cached vs ${this.cached.length} expected`);
    }
  }

  /** Records `input` as evaluated (in the cache mirror and the counts). */
  private appended(input: readonly Token[]): void {
    this.cached.push(...input);
    this.evaluatedTokens += input.length;
    this.evaluations++;
  }

  async append(input: readonly Token[], outputs: number, withConfidence = false, expected?: readonly Token[]): Promise<EvaluatedNext[]> {
    if (input.length === 0) return [];
    this.checkAppend(input);
    const firstOutput = input.length - Math.min(outputs, input.length);
    const internals = this.internals;
    let out: EvaluatedNext[];
    if (!internals || this.currentPath === 'library') out = await libraryGreedy(this.sequence, input, firstOutput, withConfidence, this.reportsTotalLogitWeight);
    else if (this.currentPath !== 'device') out = await this.appendDirect(internals, input, firstOutput, withConfidence, expected);
    else if (withConfidence) out = await this.withHostLogits(() => this.appendDirect(internals, input, firstOutput, withConfidence, expected));
    else out = await this.appendOnDevice(internals, input, firstOutput, expected);
    this.appended(input);
    return out;
  }

  /**
   * The device path's append without a confidence: the batch read on the device, or decoded again
   * and read on the host when the device cannot answer for it (tied logits, no sampled token).
   */
  private async appendOnDevice(internals: LlamaInternals, input: readonly Token[], firstOutput: number, expected?: readonly Token[]): Promise<EvaluatedNext[]> {
    try {
      return await this.appendDirect(internals, input, firstOutput, false, expected);
    } catch (error) {
      if (error instanceof DeviceTie) {
        // Two best logits equal: llama.cpp's greedy sampler picks the first of the tied tokens on the
        // whole row, which the device did not ship. The batch again, read on the host.
        this.shippedLogitBytes += error.shippedBytes;
        this.deviceTies++;
        await this.eraseUncached();
        return await this.withHostLogits(() => this.appendDirect(internals, input, firstOutput, false, expected));
      }
      if (!(error instanceof DeviceSamplingMissing)) throw error;
      // The sampler was set but did not run on the device (llama.cpp keeps the first samplers of a
      // chain the device supports and sets the chain all the same): the native path from here, this
      // batch decoded again without it.
      this.device.detach();
      this.device.unavailable = error.message;
      this.currentPath = 'native';
      await this.eraseUncached();
      return await this.appendDirect(internals, input, firstOutput, false, expected);
    }
  }

  /** Erases what the library decoded past our cache mirror (a batch to be decoded again). */
  private async eraseUncached(): Promise<void> {
    await this.sequence.eraseContextTokenRanges([{ start: this.cached.length, end: this.sequence.nextTokenIndex }]);
  }

  /**
   * One batch through the library's decoder, then the greedy token of each output position: in
   * order, and only up to the first position whose token differs from `expected` (a verify step
   * needs nothing after its first rejection: at low acceptance most positions are never read).
   * Read on the device (its sampler attached), by the native reader in one call, or else by one
   * reused native sampler, a call a position. Confidence is 1 / Σ exp(logit - max): the argmax's own
   * probability, computed without the full-vocabulary sort the library's confidence option does — by
   * the native reader, or by the library where it offers totalLogitWeight (3.22+); else (3.21) the
   * direct path asks for the library's confidence, sort and all (ConfidenceSource).
   */
  private async appendDirect(internals: LlamaInternals, input: readonly Token[], firstOutput: number, withConfidence: boolean, expected?: readonly Token[]): Promise<EvaluatedNext[]> {
    const count = input.length - firstOutput;
    const usesReader = (this.currentPath === 'native' || this.currentPath === 'device') && this.nativeReader;
    if (!usesReader) {
      const batchIndexes = await this.decodeThen(internals, input, firstOutput, (indexes) => indexes);
      if (count <= 0) return [];
      const out = await this.direct!.readGreedy(batchIndexes, count, firstOutput, withConfidence, expected);
      this.positionsRead += out.length;
      this.hostLogitBytes += out.length * this.vocabularySize * 4;
      return out;
    }
    return this.decodeThen(internals, input, firstOutput, (batchIndexes) => (count <= 0 ? [] : this.readNative(internals, batchIndexes, count, withConfidence, expected)));
  }

  /** The native reader's (or the device sampler's) tokens of a batch just decoded. */
  private readNative(internals: LlamaInternals, batchIndexes: Int32Array, count: number, withConfidence: boolean, expected?: readonly Token[]): EvaluatedNext[] {
    if (this.currentPath === 'device' && this.device.attached) {
      const { out, shippedBytes } = this.reads.sampled(this.device, batchIndexes, count, expected);
      this.shippedLogitBytes += shippedBytes;
      this.positionsRead += out.length;
      return out;
    }
    const out = this.reads.greedy(this.nativeReader!, internals.seq._context._ctx, this.sequenceId ?? -1, batchIndexes, count, withConfidence, expected);
    this.positionsRead += out.length;
    this.hostLogitBytes += out.length * this.vocabularySize * 4;
    return out;
  }

  /**
   * Decodes `input` in one call, with outputs at positions `firstOutput`.. of it, then `read`s them
   * given the batch output index of each (reused from step to step). The native readers' paths decode
   * directly (llama/directDecode.ts), decode and reads under the library's context lock; the
   * `direct` path's sampleToken reads, and any path without the direct decoder, through the library's
   * batch queue.
   */
  private async decodeThen<T>(internals: LlamaInternals, input: readonly Token[], firstOutput: number, read: (batchIndexes: Int32Array) => T): Promise<T> {
    const count = input.length - firstOutput;
    this.reads.reserve(count);
    const batchIndexes = this.reads.batchIndexes;
    if (!this.device.attached) this.shippedLogitBytes += count * this.vocabularySize * 4;
    checkOutputsFit(this.sequence.context.batchSize, input.length, count);
    if (this.directDecoder && this.decodesDirectly && (this.currentPath === 'native' || this.currentPath === 'device')) {
      this.directDecodes++;
      return this.directDecoder.decodeThen(input, firstOutput, batchIndexes, read);
    }
    await decodeWithOutputs(internals.seq, input, firstOutput, batchIndexes);
    this.libraryDecodes++;
    return read(batchIndexes);
  }

  /**
   * GreedyEvaluator.appendRanked: one batch, then the `top` best tokens of each output position —
   * by the native reader (one pass over each row, no sort), else by the library's probabilities
   * (which sort the whole vocabulary at each position: the fallback, slower). From probabilities the
   * margin is ln(p1 / p2): the softmax's normaliser cancels, leaving logit1 − logit2 up to float
   * rounding. The library's sort is not stable, so there the greedy token is put first among equals.
   */
  async appendRanked(input: readonly Token[], outputs: number, top: number, withProbabilities = false): Promise<RankedNext[]> {
    if (input.length === 0) return [];
    if (!(top >= 1)) throw new Error(`top must be at least 1, not ${top}`);
    this.checkAppend(input);
    const firstOutput = input.length - Math.min(outputs, input.length);
    const out = await this.withHostLogits(() => this.rankedOutputs(input, firstOutput, top, withProbabilities));
    this.appended(input);
    return out;
  }

  /** appendRanked's batch and reads, with whole rows of logits on the host. */
  private async rankedOutputs(input: readonly Token[], firstOutput: number, top: number, withProbabilities: boolean): Promise<RankedNext[]> {
    if (!this.internals || this.currentPath === 'library') return libraryRanked(this.sequence, input, firstOutput, top, withProbabilities);
    const count = input.length - firstOutput;
    const internals = this.internals;
    const reader = this.nativeReader;
    if (!((this.currentPath === 'native' || this.currentPath === 'device') && reader && count > 0)) {
      const batchIndexes = await this.decodeThen(internals, input, firstOutput, (indexes) => indexes);
      return this.direct!.readRanked(batchIndexes, count, firstOutput, top, withProbabilities);
    }
    const out = await this.decodeThen(internals, input, firstOutput, (batchIndexes) =>
      this.reads.ranked(reader, internals.seq._context._ctx, this.sequenceId ?? -1, batchIndexes, count, top, withProbabilities),
    );
    this.positionsRead += count;
    this.hostLogitBytes += count * this.vocabularySize * 4;
    return out;
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
    this.direct?.dispose();
    this.device.detach();
  }
}
