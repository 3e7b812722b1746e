import type { Token } from '../../src/shared/decoding';
import type { EvaluatedNext, GreedyEvaluator, TreeVerdict } from '../../src/speculation/greedyEvaluator';
import { isTokenTree, type TokenTree } from '../../src/speculation/tokenTree';

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
    protected readonly nextAfter: (history: readonly Token[]) => Token,
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
      if (i >= first) out.push({ token: this.nextAfter(this.cached), confidence: withConfidence ? this.confidence(this.cached) : undefined });
    }
    return out;
  }

  async truncate(length: number): Promise<void> {
    this.cached.length = Math.min(this.cached.length, length);
  }
}

/**
 * FakeEvaluator that verifies token trees as a unified KV cache does (GreedyEvaluator.verifyTree):
 * one evaluation of [pending, ...nodes], each node's output the model's token after its own root
 * path, the accepted path kept in the cache.
 */
export class FakeTreeEvaluator extends FakeEvaluator {
  treeSteps = 0;

  async verifyTree(pending: Token, tree: TokenTree, predictionsOut?: Token[]): Promise<TreeVerdict> {
    if (!isTokenTree(tree)) throw new Error('cannot verify the tree: malformed');
    if (this.cached.length + 1 + tree.tokens.length > this.capacity) throw new Error('context full');
    this.evaluations++;
    this.evaluatedTokens += tree.tokens.length + 1;
    this.batchSizes.push(tree.tokens.length + 1);
    this.treeSteps++;
    const base = [...this.cached, pending];
    const pathOf = (node: number): Token[] => (node < 0 ? [] : [...pathOf(tree.parents[node]!), tree.tokens[node]!]);
    const predictionAt = (index: number) => this.nextAfter([...base, ...pathOf(index - 1)]);
    if (predictionsOut) {
      predictionsOut.length = 0;
      for (let i = 0; i <= tree.tokens.length; i++) predictionsOut.push(predictionAt(i));
    }
    const path: number[] = [];
    let at = -1;
    for (;;) {
      const next = predictionAt(at + 1);
      const child = tree.tokens.findIndex((t, i) => tree.parents[i] === at && t === next);
      if (child < 0) {
        this.cached.push(pending, ...path.map((node) => tree.tokens[node]!));
        return { path, next };
      }
      path.push(child);
      at = child;
    }
  }
}
