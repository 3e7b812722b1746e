// node-llama-cpp's own speculation (DraftSequenceTokenPredictor, InputLookupTokenPredictor): the
// off-the-shelf path, kept as the baseline our decoder must beat. Same prompt tokens, same stop rules.
import type { LlamaContext, LlamaContextSequence, LlamaToken } from '../src/llama/llamaTypes';
import type { CompletionRequest } from '../src/shared/completion';
import type { Token } from '../src/shared/decoding';
import type { InferenceSession } from '../src/inference/inferenceSession';
import { loadLibrary } from '../src/inference/llamaRuntime';
import { type AttachedThreadpool, attachThreadpool } from '../src/llama/nativeAddon';

export type StockMode = 'stock-draft' | 'stock-lookup';

export interface StockResult {
  tokens: Token[];
  text: string;
  totalMs: number;
  promptMs: number;
  /** Prompt tokens evaluated (the rest reused from the sequence's KV cache). */
  promptTokensEvaluated: number;
  validated: number;
  refuted: number;
}

export class StockRunner {
  private constructor(
    private readonly session: InferenceSession,
    private readonly contexts: LlamaContext[],
    private readonly sequences: Partial<Record<StockMode, LlamaContextSequence>>,
    private readonly pools: AttachedThreadpool[],
  ) {}

  static async create(session: InferenceSession, threads: number, maxProposal: number, minConfidence: number): Promise<StockRunner> {
    const lib = await loadLibrary();
    const contextSize = session.target.context.contextSize;
    // The same flash-attention setting as ours (measured per model at load), so the comparison is of the decoders.
    const targetContext = await session.target.model.createContext({
      contextSize,
      sequences: 2,
      threads,
      batchSize: Math.min(512, contextSize),
      flashAttention: session.target.attention.flashAttention,
    });
    const contexts = [targetContext];
    const sequences: Partial<Record<StockMode, LlamaContextSequence>> = {
      'stock-lookup': targetContext.getSequence({
        tokenPredictor: new lib.InputLookupTokenPredictor({ patternLength: { min: 2 }, predictionLength: { max: maxProposal } }),
      }),
    };
    if (session.draft) {
      const draftContext = await session.draft.model.createContext({ contextSize, sequences: 1, threads, flashAttention: session.draft.attention.flashAttention });
      contexts.push(draftContext);
      sequences['stock-draft'] = targetContext.getSequence({
        tokenPredictor: new lib.DraftSequenceTokenPredictor(draftContext.getSequence(), { minTokens: 0, maxTokens: maxProposal, minConfidence }),
      });
    }
    // The same persistent threadpools as ours (2+ threads), so that the comparison is of the decoders.
    const pools: AttachedThreadpool[] = [];
    for (const c of contexts) {
      const pool = attachThreadpool(c, threads);
      if ('release' in pool) pools.push(pool);
      else if (threads > 1) process.stderr.write(`stock modes: no threadpool (${pool.error})\n`);
    }
    return new StockRunner(session, contexts, sequences, pools);
  }

  has(mode: StockMode): boolean {
    return this.sequences[mode] !== undefined;
  }

  /** Empties the stock sequences' caches. */
  async reset(): Promise<void> {
    for (const sequence of Object.values(this.sequences)) await sequence.clearHistory();
  }

  /** One completion; the KV of the longest common prefix with the previous one is reused, as ours does. */
  async run(mode: StockMode, request: CompletionRequest): Promise<StockResult> {
    const sequence = this.sequences[mode]!;
    const prompt = this.session.promptFor(request) as LlamaToken[];
    const reused = Math.min(sequence.compareContextTokens(prompt).firstDifferentIndex, prompt.length - 1);
    if (reused < sequence.nextTokenIndex) await sequence.eraseContextTokenRanges([{ start: reused, end: sequence.nextTokenIndex }]);
    const stop = this.session.stopRulesFor(request);
    const before = { ...sequence.tokenPredictions };
    const t0 = performance.now();
    let promptMs = 0;
    const generator = sequence.evaluate(prompt.slice(reused), { temperature: 0 });
    try {
      for await (const token of generator) {
        if (promptMs === 0) promptMs = performance.now() - t0;
        if (stop.push(token)) break;
      }
    } finally {
      await generator.return();
    }
    const totalMs = performance.now() - t0;
    const after = sequence.tokenPredictions;
    return {
      tokens: [...stop.tokens],
      text: stop.finalText,
      totalMs,
      promptMs,
      promptTokensEvaluated: prompt.length - reused,
      validated: after.validated - before.validated,
      refuted: after.refuted - before.refuted,
    };
  }

  async dispose(): Promise<void> {
    for (const c of this.contexts) await c.dispose();
    for (const p of this.pools) p.release();
  }
}
