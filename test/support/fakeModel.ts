import type { Token } from '../../src/shared/decoding';
import type { EvaluatedNext, GreedyEvaluator } from '../../src/speculation/greedyEvaluator';

/** A deterministic stand-in "model": the next token is a hash of the last `order` tokens. */
export function hashModel(seed: number, vocab: number, order = 3): (history: readonly Token[]) => Token {
  return (history) => {
    let h = seed >>> 0;
    for (const t of history.slice(-order)) h = Math.imul(h ^ (t + 0x9e3779b9), 0x85ebca6b) >>> 0;
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35) >>> 0;
    return h % vocab;
  };
}

/** The fake models' vocabulary: 64 tokens, the last of them the end of generation. */
export const FAKE_VOCAB = 64;
export const FAKE_EOS = 63;

/** A fake token's text: one printable character each. */
export const fakeDetokenize = (tokens: readonly Token[]) => tokens.map((t) => String.fromCharCode(33 + t)).join('');

/** A model that writes like code: the next token copies the one 8 back, but for one in `freshOneIn` (and the first 13): n-grams are often right. */
export function repetitiveModel(seed: number, freshOneIn: number): (history: readonly Token[]) => Token {
  const h = hashModel(seed, FAKE_VOCAB - 1, 2);
  return (history) => {
    const x = h(history);
    if (x % freshOneIn !== 0 && history.length > 12) return history[history.length - 8]!;
    return x;
  };
}

/** GreedyEvaluator over a pure next-token function, counting evaluations like a real sequence. */
export class FakeEvaluator implements GreedyEvaluator {
  readonly cached: Token[] = [];
  evaluations = 0;
  evaluatedTokens = 0;
  batchSizes: number[] = [];

  constructor(
    private readonly next: (history: readonly Token[]) => Token,
    readonly capacity = 4096,
    private readonly confidence: (history: readonly Token[]) => number = () => 0.9,
  ) {}

  get tokens(): readonly Token[] {
    return this.cached;
  }

  async append(input: readonly Token[], outputs: number, withConfidence = false): Promise<EvaluatedNext[]> {
    if (this.cached.length + input.length > this.capacity) throw new Error('context full');
    this.evaluations++;
    this.evaluatedTokens += input.length;
    this.batchSizes.push(input.length);
    const out: EvaluatedNext[] = [];
    const first = input.length - outputs;
    for (let i = 0; i < input.length; i++) {
      this.cached.push(input[i]);
      if (i >= first) out.push({ token: this.next(this.cached), confidence: withConfidence ? this.confidence(this.cached) : undefined });
    }
    return out;
  }

  async truncate(length: number): Promise<void> {
    this.cached.length = Math.min(this.cached.length, length);
  }
}
