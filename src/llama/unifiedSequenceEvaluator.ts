import type { Token } from '../shared/decoding';
import type { EvaluatedNext, GreedyEvaluator, RankedNext, TreeVerdict } from '../speculation/greedyEvaluator';
import { type TokenTree, walkTree } from '../speculation/tokenTree';
import { checkOutputsFit } from './evaluatorInternals';
import { NativeReads } from './nativeReads';
import type { NativeAddon } from './nativeAddon';
import { treeBatch } from './treeBatch';

/** What an evaluator needs of its unified context (llama/unifiedContext.ts, which makes them). */
export interface UnifiedSequences {
  readonly addon: NativeAddon;
  readonly handle: number;
  readonly batchSize: number;
  readonly contextSize: number;
  readonly vocabularySize: number;
  /** The sequence ids a tree step gives its paths; the sequences hold no cell between steps. */
  readonly pathIds: readonly number[];
  /** Runs `work` in the context's turn (no two operations on a context overlap). */
  run<T>(work: () => Promise<T>): Promise<T>;
  /** Memory operations, within `run`: UnifiedContext says what each does. */
  remove(seq: number, p0: number, p1: number): boolean;
  copy(from: number, to: number, p0: number, p1: number): void;
  shift(seq: number, p0: number, p1: number, delta: number): void;
}

/**
 * GreedyEvaluator on one sequence of a unified context (llama/unifiedContext.ts): what
 * LlamaSequenceEvaluator is on node-llama-cpp's context — a cache mirror, batches decoded in one native
 * call and read by the native greedy reader (the same argmax, the same confidences) — plus
 * `verifyTree`, which the one KV stream makes possible: a token tree in one batch, the accepted path's
 * cells joined to this sequence and every other cell removed (llama/treeBatch.ts lays it out). Every
 * operation takes the context's turn, so that the sequences of one context never decode at once.
 */
export class UnifiedSequenceEvaluator implements GreedyEvaluator {
  private cached: Token[] = [];
  /** Tokens evaluated by this sequence (prompt, decode and tree nodes), and the evaluations. */
  evaluatedTokens = 0;
  evaluations = 0;
  /** Tree steps verified, and their nodes. */
  treeSteps = 0;
  treeNodes = 0;
  /** Positions read by the native reader, and the bytes of logits that took on the host. */
  positionsRead = 0;
  hostLogitBytes = 0;
  private readonly reads = new NativeReads();
  private readonly one = new Int32Array(1);
  readonly removeRange?: (start: number, end: number) => Promise<void>;

  constructor(
    private readonly context: UnifiedSequences,
    /** Its llama.cpp sequence id. */
    readonly sequenceId: number,
    shift: boolean,
  ) {
    if (shift) this.removeRange = (start, end) => this.shiftOut(start, end);
  }

  /** The most nodes a verified tree may have: the context's path sequences, and a batch after the pending token. */
  get maxTreeNodes(): number {
    return Math.min(this.context.pathIds.length, this.context.batchSize - 1);
  }

  /** The native reader always reads a unified context's outputs. */
  get path(): 'native' {
    return 'native';
  }

  get tokens(): readonly Token[] {
    return this.cached;
  }

  get capacity(): number {
    return this.context.contextSize;
  }

  private checkAppend(length: number): void {
    if (this.cached.length + length > this.capacity) throw new Error(`context full: ${this.cached.length} + ${length} tokens > ${this.capacity}`);
  }

  /**
   * Decodes `input` after the cache in batches of the context's size (outputs at input positions
   * firstOutput.., all in the last batch), then `read`s with the batch index of each output — in the
   * context's turn, so nothing decodes between the batch and its read.
   */
  private decodeThen<T>(input: readonly Token[], firstOutput: number, read: (batchIndexes: Int32Array, count: number) => T): Promise<T> {
    const count = input.length - firstOutput;
    checkOutputsFit(this.context.batchSize, input.length, count);
    return this.context.run(async () => {
      const batchSize = this.context.batchSize;
      let lastStart = 0;
      for (let start = 0; start < input.length; start += batchSize) {
        const end = Math.min(input.length, start + batchSize);
        const n = end - start;
        const at = this.cached.length;
        const outputs = new Uint8Array(n);
        for (let i = 0; i < n; i++) outputs[i] = start + i >= firstOutput ? 1 : 0;
        const positions = Int32Array.from({ length: n }, (_, i) => at + i);
        try {
          await this.context.addon.unifiedDecode(this.context.handle, Int32Array.from(input.slice(start, end)), positions, new Int32Array(n).fill(1), new Int32Array(n).fill(this.sequenceId), outputs);
        } catch (error) {
          // What a failed decode left of the batch goes: the cache stays equal to the mirror.
          this.context.remove(this.sequenceId, at, -1);
          throw error;
        }
        this.cached.push(...input.slice(start, end));
        lastStart = start;
      }
      this.evaluatedTokens += input.length;
      this.evaluations++;
      this.reads.reserve(count);
      for (let j = 0; j < count; j++) this.reads.batchIndexes[j] = firstOutput - lastStart + j;
      return read(this.reads.batchIndexes, count);
    });
  }

  async append(input: readonly Token[], outputs: number, withConfidence = false, expected?: readonly Token[]): Promise<EvaluatedNext[]> {
    if (input.length === 0) return [];
    this.checkAppend(input.length);
    const firstOutput = input.length - Math.min(outputs, input.length);
    return this.decodeThen(input, firstOutput, (batchIndexes, count) => {
      if (count <= 0) return [];
      const out = this.reads.greedy(this.context.addon, this.context.handle, -1, batchIndexes, count, withConfidence, expected);
      this.counted(out.length);
      return out;
    });
  }

  async appendRanked(input: readonly Token[], outputs: number, top: number, withProbabilities = false): Promise<RankedNext[]> {
    if (input.length === 0) return [];
    if (!(top >= 1)) throw new Error(`top must be at least 1, not ${top}`);
    this.checkAppend(input.length);
    const firstOutput = input.length - Math.min(outputs, input.length);
    return this.decodeThen(input, firstOutput, (batchIndexes, count) => {
      if (count <= 0) return [];
      this.counted(count);
      return this.reads.ranked(this.context.addon, this.context.handle, -1, batchIndexes, count, top, withProbabilities);
    });
  }

  /**
   * As appendRanked, with the `top` logits themselves (best first) rather than a margin: what the
   * tests' measure of batch drift compares between batch sizes (testbed/batchDrift.ts).
   */
  async appendTopLogits(input: readonly Token[], outputs: number, top: number): Promise<{ tokens: Token[]; logits: number[] }[]> {
    if (input.length === 0) return [];
    this.checkAppend(input.length);
    const firstOutput = input.length - Math.min(outputs, input.length);
    return this.decodeThen(input, firstOutput, (batchIndexes, count) => {
      const tokens = new Int32Array(count * top);
      const logits = new Float32Array(count * top);
      this.context.addon.readTop(this.context.handle, batchIndexes, count, top, tokens, logits);
      this.counted(count);
      return Array.from({ length: count }, (_, j) => {
        const ranked = Array.from(tokens.subarray(j * top, (j + 1) * top)).filter((t) => t >= 0);
        return { tokens: ranked, logits: Array.from(logits.subarray(j * top, j * top + ranked.length)) };
      });
    });
  }

  private counted(positions: number): void {
    this.positionsRead += positions;
    this.hostLogitBytes += positions * this.context.vocabularySize * 4;
  }

  async verifyTree(pending: Token, tree: TokenTree, predictionsOut?: Token[]): Promise<TreeVerdict> {
    const context = this.context;
    const main = this.sequenceId;
    return context.run(async () => {
      const n = this.cached.length;
      const batch = treeBatch(main, context.pathIds, n, pending, tree, this.maxTreeNodes);
      if (n + 1 + batch.depth > this.capacity) throw new Error(`context full: ${n} + ${1 + batch.depth} tokens > ${this.capacity}`);
      let verdict: TreeVerdict;
      try {
        // Each path sees the history: its id joins every cell of this sequence (one stream: no copy).
        for (const path of batch.paths) context.copy(main, path, -1, -1);
        await context.addon.unifiedDecode(context.handle, batch.tokens, batch.positions, batch.seqCounts, batch.seqIds, batch.outputs);
        verdict = this.walk(tree, batch.children, batch.tokens.length, predictionsOut);
        // The accepted nodes (the ancestors of the last, on any path through it) join this sequence.
        const last = verdict.path.at(-1);
        if (last !== undefined) context.copy(batch.pathOf[last]!, main, n + 1, n + 1 + verdict.path.length);
      } catch (error) {
        context.remove(main, n, -1);
        throw error;
      } finally {
        // Every path id leaves every cell: cells left with no id (the rejected nodes) are free.
        for (const path of batch.paths) context.remove(path, -1, -1);
      }
      this.cached.push(pending, ...verdict.path.map((node) => tree.tokens[node]!));
      this.evaluatedTokens += batch.tokens.length;
      this.evaluations++;
      this.treeSteps++;
      this.treeNodes += tree.tokens.length;
      return verdict;
    });
  }

  /** The greedy walk over a decoded tree batch: one position read at a time, or all of them into `predictionsOut`. */
  private walk(tree: TokenTree, children: readonly (readonly number[])[], count: number, predictionsOut?: Token[]): TreeVerdict {
    const { addon, handle } = this.context;
    if (predictionsOut) {
      this.reads.reserve(count);
      for (let j = 0; j < count; j++) this.reads.batchIndexes[j] = j;
      const all = this.reads.greedy(addon, handle, -1, this.reads.batchIndexes, count, false);
      this.counted(count);
      predictionsOut.length = 0;
      for (const next of all) predictionsOut.push(next.token);
      return walkTree(tree, children, (index) => predictionsOut[index]!);
    }
    return walkTree(tree, children, (index) => {
      this.one[0] = index;
      const [next] = this.reads.greedy(addon, handle, -1, this.one, 1, false);
      this.counted(1);
      return next!.token;
    });
  }

  async truncate(length: number): Promise<void> {
    if (length >= this.cached.length) return;
    await this.context.run(async () => {
      if (!this.context.remove(this.sequenceId, length, -1)) throw new Error(`llama.cpp could not cut the sequence at ${length}`);
      this.cached.length = length;
    });
  }

  /**
   * Drops the cached tokens [start, end) and moves the later ones back (llama_memory_seq_rm, then
   * seq_add; llama.cpp re-rotates their keys at the next decode): node-llama-cpp's shift, on this context.
   */
  private async shiftOut(start: number, end: number): Promise<void> {
    if (start < 1 || end <= start || end > this.cached.length) throw new Error(`cannot shift out [${start}, ${end}) of ${this.cached.length} cached tokens`);
    await this.context.run(async () => {
      if (!this.context.remove(this.sequenceId, start, end)) throw new Error(`llama.cpp could not remove [${start}, ${end})`);
      if (end < this.cached.length) this.context.shift(this.sequenceId, end, -1, start - end);
      this.cached.splice(start, end - start);
    });
  }

  /** Forgets everything (e.g. after an error left the cache unknown). */
  async reset(): Promise<void> {
    await this.context.run(async () => {
      this.context.remove(this.sequenceId, -1, -1);
      this.cached = [];
    });
  }

  /** Saves the sequence's KV cells and tokens to `file` (a prompt state evicted for another); returns its size. */
  async saveState(file: string): Promise<number> {
    return this.context.run(() => this.context.addon.unifiedSaveState(this.context.handle, this.sequenceId, file, Int32Array.from(this.cached)));
  }

  /** Replaces the sequence's cache by a state saveState wrote from a sequence of the same model and context size. */
  async loadState(file: string): Promise<void> {
    await this.context.run(async () => {
      const { addon, handle } = this.context;
      this.context.remove(this.sequenceId, -1, -1);
      this.cached = [];
      const tokens = Array.from(await addon.unifiedLoadState(handle, this.sequenceId, file, this.capacity));
      const [min, max] = addon.unifiedMemory(handle, 'positions', this.sequenceId);
      if (tokens.length > 0 && (min !== 0 || max !== tokens.length - 1)) {
        this.context.remove(this.sequenceId, -1, -1);
        throw new Error(`the state file holds cells ${min}..${max} for ${tokens.length} tokens`);
      }
      this.cached = tokens;
    });
  }

  /** Nothing of its own to free: the context holds the sequence. */
  async dispose(): Promise<void> {}
}
