// A second context of the target for self-speculation on a KV window (speculation/windowDraft.ts):
// made on first use, grown when a larger window is asked for. Only the benchmark uses it.
import { WINDOW_STEP } from '../speculation/windowDraft';
import { LlamaSequenceEvaluator } from '../llama/llamaSequenceEvaluator';
import { createContext, disposeContext, type LoadedModel } from './loadedPair';

/** Tokens a window draft's context keeps room for beyond the window (the completion and its proposals). */
const MAX_WINDOW_GENERATION = 320;

export class WindowDraftContext {
  private created: (Awaited<ReturnType<typeof createContext>> & { evaluator: LlamaSequenceEvaluator; size: number }) | null = null;

  /** The evaluator of a context of the target with room for a window of `window` tokens. */
  async evaluatorFor(target: LoadedModel, window: number): Promise<LlamaSequenceEvaluator> {
    const size = window + WINDOW_STEP + MAX_WINDOW_GENERATION;
    if (!this.created || this.created.size < size) {
      await this.dispose();
      const { context, threadpool } = await createContext(target.model, {
        contextSize: size,
        threads: target.context.currentThreads,
        batchSize: Math.min(size, 512),
        flashAttention: target.attention.flashAttention,
      });
      this.created = { context, threadpool, evaluator: new LlamaSequenceEvaluator(context.getSequence(), target.model), size };
    }
    return this.created.evaluator;
  }

  async dispose(): Promise<void> {
    const created = this.created;
    this.created = null;
    await created?.evaluator.dispose();
    await disposeContext(created);
  }
}
