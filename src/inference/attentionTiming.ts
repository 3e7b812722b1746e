// What one flash-attention setting costs a model on a completion's work (inference/flashAttention.ts
// chooses from it at load).
import type { LlamaModel } from '../llama/llamaTypes';
import { LlamaSequenceEvaluator } from '../llama/llamaSequenceEvaluator';
import type { ModelFileInfo } from '../gguf/modelFileCheck';
import type { Token } from '../shared/decoding';
import { type attentionWorkload, workloadMs } from './flashAttention';
import { createContext, disposeContext } from './modelContext';

/** Prompt evaluation a measurement may spend per setting: sets its depth for models slow on this machine. */
const PROMPT_BUDGET_MS = 500;

/**
 * Times a completion's work for one model and flash-attention setting on a context of its own:
 * the prompt up to the workload's depth, one-token steps, verify batches (inference/flashAttention.ts).
 * Token ids are arbitrary valid ones: attention and matrix costs do not depend on them. The depth
 * shrinks to what PROMPT_BUDGET_MS of prompt evaluation reaches (a large model on a small CPU stays
 * shallow, the embedded models reach the full depth) and always leaves room for the steps and a batch.
 */
export async function timeCompletionWork(
  model: LlamaModel,
  info: ModelFileInfo,
  options: { contextSize: number; threads: number; batchSize: number; flashAttention: boolean },
  work: ReturnType<typeof attentionWorkload>,
): Promise<number> {
  // Medians of several steps and batches: single steps on a busy machine vary widely.
  const STEPS = 10;
  const VERIFIES = work.verifyBatches > 0 ? 5 : 0;
  const WARM_UP = 16;
  const created = await createContext(model, options);
  try {
    const evaluator = new LlamaSequenceEvaluator(created.context.getSequence(), model);
    try {
      const room = evaluator.capacity - STEPS - (VERIFIES > 0 ? work.verifySize : 0);
      if (room < WARM_UP) throw new Error(`a ${evaluator.capacity}-token context leaves no room to measure`);
      const span = Math.max(1, Math.min(info.vocabSize || 256, 4096) - 1);
      const tokens = (count: number, from: number) => Array.from({ length: count }, (_, i) => ((from + i) % span) as Token);
      // Warm-up, also the estimate of a prompt token's cost: the first evaluation after a load pages
      // in the weights and plans the graph, and whichever setting runs first must not pay for it.
      let t = performance.now();
      await evaluator.append(tokens(WARM_UP, 0), 1);
      const estimate = (performance.now() - t) / WARM_UP;
      await evaluator.truncate(0);
      const depth = Math.max(WARM_UP, Math.min(work.depth, room, Math.floor(PROMPT_BUDGET_MS / Math.max(estimate, 1e-3))));
      t = performance.now();
      for (let at = 0; at < depth; at += options.batchSize) await evaluator.append(tokens(Math.min(options.batchSize, depth - at), at), 0);
      const promptMsPerToken = (performance.now() - t) / depth;
      const timed = async (count: number, keep: boolean) => {
        const base = evaluator.tokens.length;
        t = performance.now();
        await evaluator.append(tokens(count, base), count);
        const ms = performance.now() - t;
        if (!keep) await evaluator.truncate(base);
        return ms;
      };
      const steps: number[] = [];
      for (let i = 0; i < STEPS; i++) steps.push(await timed(1, true));
      const verifies: number[] = [];
      for (let i = 0; i < VERIFIES; i++) verifies.push(await timed(work.verifySize, false));
      return workloadMs(work, { promptMsPerToken, stepMs: middle(steps), verifyMs: verifies.length ? middle(verifies) : 0 });
    } finally {
      await evaluator.dispose().catch(() => undefined);
    }
  } finally {
    // A context whose dispose fails keeps its threadpool (freeing a pool a live context may still
    // use could deadlock llama.cpp); disposeContext releases it only after a clean dispose.
    await disposeContext(created).catch(() => undefined);
  }
}

function middle(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
