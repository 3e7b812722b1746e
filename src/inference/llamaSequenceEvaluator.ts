import type { LlamaContextSequence } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import type { Token } from '../engine/types';
import type { EvaluatedNext, GreedyEvaluator } from '../speculation/greedyEvaluator';

/**
 * GreedyEvaluator on one long-lived node-llama-cpp context sequence. Argmax is llama.cpp's own
 * sampler at temperature 0, the same code path for a batch of 1 and a batch of k.
 */
export class LlamaSequenceEvaluator implements GreedyEvaluator {
  private cached: Token[] = [];
  /** Tokens evaluated by this sequence since creation (prompt and decode). */
  evaluatedTokens = 0;
  evaluations = 0;

  constructor(private readonly sequence: LlamaContextSequence) {}

  get tokens(): readonly Token[] {
    return this.cached;
  }

  get capacity(): number {
    return this.sequence.contextSize;
  }

  async append(input: readonly Token[], outputs: number, withConfidence = false): Promise<EvaluatedNext[]> {
    if (input.length === 0) return [];
    if (this.cached.length + input.length > this.capacity) {
      throw new Error(`context full: ${this.cached.length} + ${input.length} tokens > ${this.capacity}`);
    }
    const firstOutput = input.length - Math.min(outputs, input.length);
    const generateNext = { token: true, confidence: withConfidence, options: { temperature: 0 } };
    const items = input.map((token, i) => (i >= firstOutput ? ([token, { generateNext }] as const) : token));
    // Fail loudly if the library ever disagrees with our mirror of the cache.
    if (this.sequence.nextTokenIndex !== this.cached.length) {
      throw new Error(`sequence out of sync: ${this.sequence.nextTokenIndex} cached vs ${this.cached.length} expected`);
    }
    const results = await this.sequence.controlledEvaluate(items as never);
    this.cached.push(...input);
    this.evaluatedTokens += input.length;
    this.evaluations++;
    const out: EvaluatedNext[] = [];
    for (let i = firstOutput; i < input.length; i++) {
      const next = results[i]?.next;
      if (next?.token == null) throw new Error(`no next token at input position ${i}`);
      out.push({ token: next.token, confidence: next.confidence });
    }
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
}
