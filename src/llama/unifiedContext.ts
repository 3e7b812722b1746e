import type { LlamaModel } from './llamaTypes';
import { type AttachedThreadpool, loadNativeAddon, type NativeAddon } from './nativeAddon';
import { UnifiedSequenceEvaluator, type UnifiedSequences } from './unifiedSequenceEvaluator';

/** What a unified context is made with (UnifiedContext.create). */
export interface UnifiedContextOptions {
  /** The KV sequences Draftline decodes on (one per prompt state), each of `contextSize` tokens. */
  sequences: number;
  contextSize: number;
  batchSize: number;
  threads: number;
  flashAttention: boolean | 'auto';
  /** The most nodes a verified tree may have (the largest verify batch − 1): as many path sequences are kept. */
  treeNodes: number;
  /** Whether the evaluators may shift cached tokens (GreedyEvaluator.removeRange; the model's cache can). */
  shift?: boolean;
}

/** node-llama-cpp internals a unified context needs of the model (3.21.1, 3.22.1). */
interface ModelInternals {
  _model?: object;
  _llama?: { llamaCppRelease?: { release: string } };
  _backendModelDisposeGuard?: { createPreventDisposalHandle(): { dispose(): void } };
  onDispose?: { createListener(listener: () => void): { dispose(): void } };
  gpuLayers?: number;
}

/** llama.cpp gives a context's cells in multiples of this. */
const CELLS_PAD = 256;

/**
 * A llama.cpp context of Draftline's own on the model node-llama-cpp loaded, with ONE KV stream for
 * all its sequences (the native addon's createUnified: src/llama/unifiedAddon.ts says why): the
 * target's context where trees are verified. Sequence ids 0..sequences − 1 are the evaluators' (one
 * per prompt state); the next `treeNodes` ids are the paths of a tree step, empty between steps.
 * Decodes and memory operations on it take turns (`run`): llama.cpp must never decode twice at once
 * on a context, and a tree step's copies, decode and cuts belong together. The context lives while the
 * model does: the model's disposal waits for it (node-llama-cpp's dispose guard) and frees it first.
 */
export class UnifiedContext implements UnifiedSequences {
  readonly evaluators: UnifiedSequenceEvaluator[];
  /** The sequence ids of a tree step's paths. */
  readonly pathIds: readonly number[];
  /** With 2+ threads, the persistent threadpool the addon made with the context (freed with it), or why none. */
  readonly threadpool: AttachedThreadpool | { error: string };
  private tail: Promise<void> = Promise.resolve();
  private freed = false;

  private constructor(
    readonly addon: NativeAddon,
    readonly handle: number,
    readonly options: UnifiedContextOptions,
    readonly batchSize: number,
    readonly vocabularySize: number,
    threadpool: { threadpool: boolean; threadpoolProblem?: string },
    private readonly releaseModel: () => void,
  ) {
    this.pathIds = Array.from({ length: options.treeNodes }, (_, i) => options.sequences + i);
    this.threadpool = threadpool.threadpool ? { release: () => undefined } : { error: threadpool.threadpoolProblem ?? 'none was made' };
    this.evaluators = Array.from({ length: options.sequences }, (_, id) => new UnifiedSequenceEvaluator(this, id, options.shift === true));
  }

  /** Makes the context on `model` (a node-llama-cpp model); throws with the reason where it cannot be made. */
  static async create(model: LlamaModel, options: UnifiedContextOptions): Promise<UnifiedContext> {
    const loaded = loadNativeAddon();
    if ('error' in loaded) throw new Error(loaded.error);
    const addon = loaded.addon;
    const internals = model as unknown as ModelInternals;
    const release = internals._llama?.llamaCppRelease?.release;
    if (addon.llamaCppRelease !== release) throw new Error(`${loaded.file} was built for llama.cpp ${addon.llamaCppRelease}, node-llama-cpp runs ${release ?? 'an unknown release'}`);
    const guard = internals._backendModelDisposeGuard;
    if (!internals._model || typeof guard?.createPreventDisposalHandle !== 'function' || typeof internals.onDispose?.createListener !== 'function') {
      throw new Error('node-llama-cpp internals missing');
    }
    if (!(options.sequences >= 1 && options.treeNodes >= 1 && options.batchSize > options.treeNodes)) throw new Error('a unified context needs a sequence, tree nodes, and a batch larger than a tree');
    // Each sequence's cells, and room for one more batch: a tree step's nodes take cells beside a full sequence's.
    const cells = Math.ceil((options.contextSize * options.sequences + options.batchSize) / CELLS_PAD) * CELLS_PAD;
    const made = await addon.createUnified(internals._model, {
      contextCells: cells,
      batchSize: options.batchSize,
      sequences: options.sequences + options.treeNodes,
      threads: options.threads,
      flashAttention: options.flashAttention,
      gpuLayers: internals.gpuLayers ?? 0,
      poll: threadpoolPoll(),
      threadpool: process.env.DRAFTLINE_THREADPOOL !== 'off',
    });
    // The model's disposal waits for this handle, and starts by asking for the context to be freed.
    const keepModel = guard.createPreventDisposalHandle();
    let context: UnifiedContext | undefined;
    const listener = internals.onDispose.createListener(() => void context?.dispose());
    context = new UnifiedContext(addon, made.handle, options, made.batchSize, made.vocabularySize, made, () => {
      listener.dispose();
      keepModel.dispose();
    });
    return context;
  }

  /** Each sequence's room, in tokens. */
  get contextSize(): number {
    return this.options.contextSize;
  }

  /** The sequences Draftline decodes on (the tree paths' ids not counted). */
  get totalSequences(): number {
    return this.options.sequences;
  }

  /** Flash attention as the context was made with it. */
  get flashAttention(): boolean | 'auto' {
    return this.options.flashAttention;
  }

  get currentThreads(): number {
    return this.options.threads;
  }

  get disposed(): boolean {
    return this.freed;
  }

  /** Runs `work` when every earlier one has ended: decodes, reads and memory operations never overlap. */
  run<T>(work: () => Promise<T>): Promise<T> {
    const turn = this.tail.then(() => {
      if (this.freed) throw new Error('the context was disposed');
      return work();
    });
    this.tail = turn.then(
      () => undefined,
      () => undefined,
    );
    return turn;
  }

  /** Removes sequence `seq`'s cells at positions [p0, p1) (-1: open); whether llama.cpp did. Within `run`. */
  remove(seq: number, p0: number, p1: number): boolean {
    return this.addon.unifiedMemory(this.handle, 'remove', seq, p0, p1);
  }

  /** Adds sequence `to` to the cells of `from` at positions [p0, p1). Within `run`. */
  copy(from: number, to: number, p0: number, p1: number): void {
    this.addon.unifiedMemory(this.handle, 'copy', from, p0, p1, to);
  }

  /** Moves the positions [p0, p1) of `seq` by `delta` (the KV shift). Within `run`. */
  shift(seq: number, p0: number, p1: number, delta: number): void {
    this.addon.unifiedMemory(this.handle, 'shift', seq, p0, p1, delta);
  }

  /** The lowest and highest position of `seq`'s cells ([-1, -1]: none). Waits for its turn. */
  positions(seq: number): Promise<[number, number]> {
    return this.run(async () => this.addon.unifiedMemory(this.handle, 'positions', seq));
  }

  /** The bytes `seq`'s state takes (equal cell counts, equal sizes): the KV tests count cells with it. */
  stateBytes(seq: number): Promise<number> {
    return this.run(async () => this.addon.unifiedMemory(this.handle, 'stateBytes', seq));
  }

  /** Frees the context once the work queued before has ended (the evaluators refuse work from then on). */
  async dispose(): Promise<void> {
    if (this.freed) return;
    await this.run(async () => {
      this.freed = true;
      this.addon.freeUnified(this.handle);
      this.releaseModel();
    }).catch(() => undefined);
  }
}

/** llama.cpp's `poll` level for the context's threadpool workers (nativeAddon.ts attachThreadpool says why 0). */
function threadpoolPoll(): number {
  const poll = Number(process.env.DRAFTLINE_THREADPOOL_POLL ?? 0);
  return Number.isFinite(poll) && poll >= 0 ? poll : 0;
}
