/**
 * The native addon's functions on Draftline's own llama.cpp contexts (src/llama/native/unified.h):
 * made on a model node-llama-cpp loaded, with ONE KV stream for all their sequences (llama.cpp's
 * kv_unified), so that a KV cell may belong to several sequences and one batch may hold a token
 * tree whose branches share their ancestors' cells. node-llama-cpp makes every context with a stream
 * per sequence, where llama.cpp refuses a batch token that belongs to several sequences. A context is
 * named by a number (its handle); every function refuses an unknown or freed one with an error.
 */
export interface UnifiedAddon {
  /**
   * Makes a context on node-llama-cpp's native model object (`LlamaModel._model`), its parameters as
   * node-llama-cpp sets a context's (contextCells in all, batch = ubatch, threads, flash attention, no
   * performance counters) but one KV stream, and a persistent threadpool with 2+ threads.
   * `gpuLayers` is checked against the object (its layout) before anything it points to is read.
   * Refused for models whose memory is not a plain KV cache (recurrent, hybrid, sliding-window).
   */
  createUnified(
    nativeModel: object,
    options: { contextCells: number; batchSize: number; sequences: number; threads: number; flashAttention: boolean | 'auto'; gpuLayers: number; poll?: number; threadpool?: boolean },
  ): Promise<{ handle: number; contextCells: number; batchSize: number; sequences: number; vocabularySize: number; threadpool: boolean; threadpoolProblem?: string }>;
  /** Frees the context (waiting for a decode in flight) and its threadpool; false when the handle names none. */
  freeUnified(handle: number): boolean;
  /**
   * Decodes one batch: token i at positions[i], in the seqCounts[i] sequence ids that follow in seqIds
   * (in token order), its logits kept where outputs[i] is non-zero (readGreedy / readTop read them by
   * batch index i). Ids, tokens and sizes are checked before llama.cpp sees them.
   */
  unifiedDecode(handle: number, tokens: Int32Array, positions: Int32Array, seqCounts: Int32Array, seqIds: Int32Array, outputs: Uint8Array): Promise<void>;
  /**
   * A memory operation on sequence `seq` (synchronous; refused while a decode runs on the context):
   * 'remove' its cells at positions [p0, p1) (-1: open) → whether llama.cpp removed them; 'copy' them
   * to sequence `other` (in one stream: the cells gain an id, nothing is copied); 'shift' their
   * positions by `other` (refused where the cache cannot shift); 'positions' → [min, max] (-1 when
   * empty); 'stateBytes' → the bytes its state takes (equal cell counts, equal sizes).
   */
  unifiedMemory(handle: number, op: 'remove', seq: number, p0: number, p1: number): boolean;
  unifiedMemory(handle: number, op: 'copy' | 'shift', seq: number, p0: number, p1: number, other: number): void;
  unifiedMemory(handle: number, op: 'positions', seq: number): [number, number];
  unifiedMemory(handle: number, op: 'stateBytes', seq: number): number;
  /** Saves sequence `seq`'s cells and `tokens` to `file` (llama_state_seq_save_file); resolves with its size. */
  unifiedSaveState(handle: number, seq: number, file: string, tokens: Int32Array): Promise<number>;
  /** Loads a file unifiedSaveState wrote into sequence `seq` (emptied first by the caller); resolves with its tokens. A file that does not load leaves the sequence empty. */
  unifiedLoadState(handle: number, seq: number, file: string, capacity: number): Promise<Int32Array>;
  /**
   * A micro-benchmark of llama_memory_seq_cp on node-llama-cpp's context (a KV stream per sequence):
   * each round empties `destination`, copies `source` to it, and asks for a one-token batch of both
   * sequences, which llama.cpp refuses after performing the pending copy of the whole stream buffer;
   * the baseline rounds do the same without the copy. µs of each; `refusedWith`: llama_decode's answer.
   * For the KV measurements (bench/kvBranches.ts) only.
   */
  timeSequenceCopy(nativeContext: object, source: number, destination: number, token: number, rounds: number): { copyUs: number[]; baselineUs: number[]; refusedWith: number };
}
