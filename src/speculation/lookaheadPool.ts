import type { Token } from '../shared/decoding';
import { type AcceptanceModel, type ChainOffer, chainOffer, type LookupProposer, type VerifiedStep } from './proposer';

/**
 * N-grams the target wrote itself but nobody used yet: every verify step returns the target's greedy
 * token at every position of the batch, also after the first rejected guess. Those positions
 * continue a slightly wrong history, and such continuations often recur a few tokens later
 * (lookahead decoding's n-gram pool, Fu et al. 2024). Keyed by the n-1 tokens before, the newest
 * continuation wins; bounded, the oldest entries go first.
 */
export class LookaheadPool {
  private readonly next = new Map<string, Token>();

  constructor(
    /** Tokens per n-gram: n-1 of key and the continuation. */
    readonly n = 3,
    private readonly capacity = 8192,
  ) {
    if (n < 2) throw new Error('a lookahead n-gram needs a key of at least one token');
  }

  get size(): number {
    return this.next.size;
  }

  /** The target's greedy `token` after `context` (only its last n-1 tokens count). */
  add(context: readonly Token[], token: Token, end = context.length): void {
    if (end < this.n - 1) return;
    const key = keyOf(context, end, this.n - 1);
    this.next.delete(key);
    this.next.set(key, token);
    if (this.next.size > this.capacity) this.next.delete(this.next.keys().next().value as string);
  }

  /**
   * The verify step's outputs after its first rejected guess: `sequence` is the history before the
   * step's batch followed by the batch, `predictions[i]` the target's token after batch position i.
   */
  harvest(sequence: readonly Token[], batchStart: number, predictions: readonly Token[], fromIndex: number): void {
    for (let i = fromIndex; i < predictions.length; i++) this.add(sequence, predictions[i], batchStart + i + 1);
  }

  /** A chain of continuations from the end of `history`, at most `maxLen` tokens. */
  find(history: readonly Token[], maxLen: number): Token[] {
    const k = this.n - 1;
    if (history.length < k || maxLen <= 0) return [];
    const window = history.slice(-k);
    const out: Token[] = [];
    while (out.length < maxLen) {
      const token = this.next.get(keyOf(window, window.length, k));
      if (token === undefined) break;
      out.push(token);
      window.push(token);
      window.shift();
    }
    return out;
  }
}

/**
 * The pool as a proposal source: its chain of continuations offered every step (a few map lookups),
 * and every verify step's outputs after the first rejected guess harvested into it.
 */
export class LookaheadProposer implements LookupProposer {
  readonly id = 'lookahead';
  readonly asks = 'lookup';

  constructor(readonly pool: LookaheadPool) {}

  offer(history: readonly Token[], maxLen: number): ChainOffer | null {
    const tokens = this.pool.find(history, maxLen);
    return tokens.length > 0 ? chainOffer(tokens) : null;
  }

  acceptanceModel(): AcceptanceModel {
    return { prior: 0.4 };
  }

  record(): void {}

  /** The target's continuations of the wrong history after the first rejected guess. */
  observe(step: VerifiedStep): void {
    if (step.accepted + 1 >= step.predictions.length) return;
    // Only the pool's key length of history comes before the batch (history ends with its first token).
    const before = step.history.slice(-(this.pool.n - 1));
    this.pool.harvest(before.concat(step.guesses), before.length - 1, step.predictions, step.accepted + 1);
  }
}

/** One pool per document, for the most recently completed in (the target's outputs recur in later completions there). */
export class LookaheadPools {
  private readonly pools = new Map<string, LookaheadPool>();

  constructor(private readonly documents = 16) {}

  /** The document's pool (made on first use), now the most recently used. */
  for(documentKey: string | undefined): LookaheadPool {
    const key = documentKey ?? '';
    const pool = this.pools.get(key) ?? new LookaheadPool();
    this.pools.delete(key);
    this.pools.set(key, pool);
    if (this.pools.size > this.documents) this.pools.delete(this.pools.keys().next().value as string);
    return pool;
  }
}

function keyOf(tokens: readonly Token[], end: number, length: number): string {
  let key = '';
  for (let i = end - length; i < end; i++) key += `${tokens[i]},`;
  return key;
}
