// A model's llama.cpp context with Draftline's persistent CPU threadpool, and its release.
import type { LlamaContext, LlamaModel } from '../llama/llamaTypes';
import { type AttachedThreadpool, attachThreadpool } from '../llama/nativeAddon';

/**
 * A context and, with 2+ threads, its persistent threadpool: node-llama-cpp's llama.cpp otherwise
 * creates and joins its worker threads for every graph, which makes a 2-thread decode step slower
 * than a 1-thread one (src/llama/nativeAddon.ts).
 */
export async function createContext(
  model: LlamaModel,
  options: { contextSize: number; threads: number; batchSize: number; flashAttention: boolean | 'auto'; sequences?: number },
): Promise<{ context: LlamaContext; threadpool: AttachedThreadpool | { error: string } }> {
  // contextSize is each sequence's: node-llama-cpp gives the context contextSize × sequences cells.
  const context = await model.createContext({ ...options, sequences: options.sequences ?? 1 });
  return { context, threadpool: attachThreadpool(context, options.threads) };
}

/** Frees the context, then its threadpool (llama.cpp's CPU backend holds on to it until then). */
export async function disposeContext(c: { context: { dispose(): Promise<void> }; threadpool: AttachedThreadpool | { error: string } } | null | undefined): Promise<void> {
  if (!c) return;
  await c.context.dispose();
  if ('release' in c.threadpool) c.threadpool.release();
}
