import type { Token } from '../shared/decoding';
import type { TokenTree } from './tokenTree';

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
   * Drops the cached tokens [start, end) and moves the later ones back to follow `start`, keeping
   * their cached state (a KV shift). Present only where the model's cache can shift and shifting is
   * allowed: the kept tokens' state then still carries what the dropped ones contributed, so it is
   * close to, not equal to, a fresh evaluation (see planShift).
   */
  removeRange?(start: number, end: number): Promise<void>;
  /**
   * As append, but each of the last `outputs` input positions yields its `top` most likely next
   * tokens and the top-two logit margin: what alternative completions branch on. Costlier than
   * append (every position is read whole), so only called when alternatives are asked for; optional
   * (the tests' plain-function evaluators need not have it).
   */
  appendRanked?(input: readonly Token[], outputs: number, top: number, withProbabilities?: boolean): Promise<RankedNext[]>;
  /**
   * Verifies a token tree (speculation/tokenTree.ts) after the cached tokens in ONE batch [pending,
   * ...tree nodes], each node attending only to the cache, the pending token and its own ancestors;
   * greedy acceptance walks it from the target's own token after `pending`. Afterwards the cache holds
   * the cached tokens, `pending` and the accepted path's tokens, nothing of the rest. With
   * `predictionsOut`, it is filled with the target's greedy token after every batch position (index 0:
   * after `pending`; i + 1: after node i). Present only where the cache can hold a tree (a unified
   * KV cache: llama/unifiedSequenceEvaluator.ts); a malformed tree, or one larger than the batch,
   * is an error.
   */
  verifyTree?(pending: Token, tree: TokenTree, predictionsOut?: Token[]): Promise<TreeVerdict>;
  /** With verifyTree: the most nodes a tree may have. */
  readonly maxTreeNodes?: number;
}

/** What a tree verification kept. */
export interface TreeVerdict {
  /** The accepted nodes, root first: their tokens now follow `pending` in the cache. */
  path: number[];
  /** The target's greedy token after the last accepted node (after `pending` when none was). */
  next: Token;
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
  /** With `withProbabilities`: each token's probability (the softmax over the whole vocabulary), in the order of `tokens`. */
  probabilities?: number[];
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

/** A cached run shorter than this is evaluated again rather than shifted into place. */
export const MIN_SHIFTED_RUN = 32;

/**
 * Where a cache that diverges from `tokens` at `common` can be shifted into line with them: the
 * smallest drop [common, common + drop) after which a run of at least MIN_SHIFTED_RUN cached tokens
 * equals tokens[common, common + run). Only when the prompt no longer holds the dropped tokens (a
 * head that moved: the first lines of a prefix, the oldest edits of a history); a drop whose start
 * comes back later in the prompt is a reordering (a FIM middle that joined the prefix), and state
 * computed in another order is not reused.
 */
export function planShift(cached: readonly Token[], tokens: readonly Token[], common: number): { drop: number; run: number } | null {
  const want = tokens.length - 1 - common;
  if (want < MIN_SHIFTED_RUN) return null;
  for (let from = common + 1; from + MIN_SHIFTED_RUN <= cached.length; from++) {
    if (cached[from] !== tokens[common]) continue;
    let run = 1;
    while (run < want && from + run < cached.length && cached[from + run] === tokens[common + run]) run++;
    if (run < MIN_SHIFTED_RUN) continue;
    const dropped = cached.slice(common, Math.min(from, common + 8));
    if (indexOfRun(tokens, dropped, common + run) >= 0) return null;
    return { drop: from - common, run };
  }
  return null;
}

function indexOfRun(tokens: readonly Token[], run: readonly Token[], from: number): number {
  outer: for (let i = from; i + run.length <= tokens.length; i++) {
    for (let k = 0; k < run.length; k++) if (tokens[i + k] !== run[k]) continue outer;
    return i;
  }
  return -1;
}

/**
 * Brings the cache in line with the start of `tokens`: keeps their longest common prefix, shifts a
 * later cached run into place where the evaluator can (planShift), drops the rest. At least the last
 * token is left to evaluate again (its output is what the caller needs). Returns how many tokens the
 * cache kept, and how many of them were shifted.
 */
async function keepReusable(evaluator: GreedyEvaluator, tokens: readonly Token[]): Promise<{ reused: number; shifted: number }> {
  if (tokens.length === 0) throw new Error('cannot predict after an empty token list');
  const common = Math.min(commonPrefixLength(evaluator.tokens, tokens), tokens.length - 1);
  const shift = evaluator.removeRange && common < evaluator.tokens.length ? planShift(evaluator.tokens, tokens, common) : null;
  if (shift) await evaluator.removeRange!(common, common + shift.drop);
  const reused = common + (shift?.run ?? 0);
  if (reused < evaluator.tokens.length) await evaluator.truncate(reused);
  return { reused, shifted: shift?.run ?? 0 };
}

/**
 * Brings the cache to `tokens` reusing the longest common prefix, and returns the greedy token that
 * follows. At least the last token is evaluated again, since its output is what we need.
 */
export async function syncAndPredictNext(evaluator: GreedyEvaluator, tokens: readonly Token[], withConfidence = false): Promise<{ next: EvaluatedNext; reused: number; evaluated: number }> {
  const { reused } = await keepReusable(evaluator, tokens);
  const rest = tokens.slice(reused);
  const [next] = await evaluator.append(rest, 1, withConfidence);
  return { next, reused, evaluated: rest.length };
}

/** As syncAndPredictNext, the next token's `top` likeliest with their probabilities (GreedyEvaluator.appendRanked, which the evaluator must have). */
export async function syncAndRankNext(evaluator: GreedyEvaluator, tokens: readonly Token[], top: number): Promise<{ next: RankedNext; evaluated: number }> {
  const { reused } = await keepReusable(evaluator, tokens);
  const rest = tokens.slice(reused);
  const [next] = await evaluator.appendRanked!(rest, 1, top, true);
  return { next: next!, evaluated: rest.length };
}

/**
 * Tokens of a prompt evaluated per batch when it is long: the abort signal is checked between
 * batches, so a keystroke stops a long prompt within one batch instead of after all of it. What was
 * evaluated stays in the cache for the next request (it usually shares that beginning).
 */
export const PROMPT_CHUNK = 32;

/**
 * syncAndPredictNext for a prompt, evaluated in PROMPT_CHUNK batches with the abort checked in
 * between. `next` is null when aborted before the last batch; `evaluated` then counts what was
 * evaluated before the stop (it stays cached for the next request).
 */
export async function syncPromptAndPredictNext(
  evaluator: GreedyEvaluator,
  tokens: readonly Token[],
  signal?: AbortSignal,
): Promise<{ next: EvaluatedNext | null; reused: number; shifted: number; evaluated: number }> {
  const { reused, shifted } = await keepReusable(evaluator, tokens);
  const stopped = () => ({ next: null, reused, shifted, evaluated: evaluator.tokens.length - reused });
  for (let at = reused; tokens.length - at > PROMPT_CHUNK; at += PROMPT_CHUNK) {
    if (signal?.aborted) return stopped();
    await evaluator.append(tokens.slice(at, at + PROMPT_CHUNK), 0);
  }
  if (signal?.aborted) return stopped();
  const rest = tokens.slice(evaluator.tokens.length);
  const [next] = await evaluator.append(rest, 1);
  return { next, reused, shifted, evaluated: tokens.length - reused };
}
