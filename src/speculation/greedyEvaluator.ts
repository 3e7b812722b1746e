import type { Token } from '../shared/decoding';

/**
 * What the decoder needs from a model: a KV cache it can append to and cut back, and the greedy
 * (argmax) next token after chosen positions. Implemented on node-llama-cpp in inference/, and by
 * plain functions in tests.
 */
export interface GreedyEvaluator {
  /** Tokens whose state is in the cache, in order. */
  readonly tokens: readonly Token[];
  /** Largest number of tokens the cache can hold. */
  readonly capacity: number;
  /**
   * Evaluates `input` after the cached tokens in ONE batch and returns the greedy next token after
   * each of the last `outputs` input positions (with its probability when asked). With `expected`
   * (a verify step: the proposal), an evaluator may stop reading outputs after the first whose token
   * differs from `expected` at the same index: the result then ends with that token.
   */
  append(input: readonly Token[], outputs: number, withConfidence?: boolean, expected?: readonly Token[]): Promise<EvaluatedNext[]>;
  /** Drops cached tokens from index `length` on. */
  truncate(length: number): Promise<void>;
  /**
   * As append, but each of the last `outputs` input positions yields its `top` most likely next
   * tokens and the top-two logit margin: what alternative completions branch on. Costlier than
   * append (every position is read whole), so only called when alternatives are asked for; optional
   * (the tests' plain-function evaluators need not have it).
   */
  appendRanked?(input: readonly Token[], outputs: number, top: number): Promise<RankedNext[]>;
}

/** The most likely next tokens at one position. */
export interface RankedNext {
  /**
   * Up to `top` tokens, most likely first; the first is the greedy token (ties to the lower id, as
   * llama.cpp's greedy sampler). Fewer only when the vocabulary is smaller.
   */
  tokens: Token[];
  /**
   * Logit of the first minus logit of the second (≥ 0): how certain the greedy choice was.
   * Infinity when there is no second token, or its probability underflowed to 0.
   */
  margin: number;
}

export interface EvaluatedNext {
  token: Token;
  confidence?: number;
}

export function commonPrefixLength(a: readonly Token[], b: readonly Token[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Cuts the cache back to its longest common prefix with `tokens`, leaving at least the last token to
 * evaluate again (its output is what the caller needs); returns how many tokens were kept.
 */
async function keepCommonPrefix(evaluator: GreedyEvaluator, tokens: readonly Token[]): Promise<number> {
  if (tokens.length === 0) throw new Error('cannot predict after an empty token list');
  const reused = Math.min(commonPrefixLength(evaluator.tokens, tokens), tokens.length - 1);
  if (reused < evaluator.tokens.length) await evaluator.truncate(reused);
  return reused;
}

/**
 * Brings the cache to `tokens` reusing the longest common prefix, and returns the greedy token that
 * follows. At least the last token is evaluated again, since its output is what we need.
 */
export async function syncAndPredictNext(evaluator: GreedyEvaluator, tokens: readonly Token[], withConfidence = false): Promise<{ next: EvaluatedNext; reused: number; evaluated: number }> {
  const reused = await keepCommonPrefix(evaluator, tokens);
  const rest = tokens.slice(reused);
  const [next] = await evaluator.append(rest, 1, withConfidence);
  return { next, reused, evaluated: rest.length };
}

/**
 * Tokens of a prompt evaluated per batch when it is long: the abort signal is checked between
 * batches, so a keystroke stops a long prompt within one batch (~30 ms for the embedded target on
 * one CPU thread) instead of after all of it. What was evaluated stays in the cache for the next
 * request (it usually shares that beginning).
 */
export const PROMPT_CHUNK = 32;

/**
 * syncAndPredictNext for a prompt, evaluated in PROMPT_CHUNK batches with the abort checked in
 * between. Resolves to null when aborted before the last batch.
 */
export async function syncPromptAndPredictNext(evaluator: GreedyEvaluator, tokens: readonly Token[], signal?: AbortSignal): Promise<{ next: EvaluatedNext; reused: number; evaluated: number } | null> {
  const reused = await keepCommonPrefix(evaluator, tokens);
  for (let at = reused; tokens.length - at > PROMPT_CHUNK; at += PROMPT_CHUNK) {
    if (signal?.aborted) return null;
    await evaluator.append(tokens.slice(at, at + PROMPT_CHUNK), 0);
  }
  if (signal?.aborted) return null;
  const rest = tokens.slice(evaluator.tokens.length);
  const [next] = await evaluator.append(rest, 1);
  return { next, reused, evaluated: tokens.length - reused };
}
