// Alternatives to a greedy completion: at the position of that completion where the
// target was least certain (smallest top-two logit margin), the target's greedy continuation after
// each of the next most likely tokens there, decoded as a completion is (the request's mode), the KV
// cache reused up to the branch point. Lossless like a completion: each is plain greedy decoding
// after greedy[0..i) + its token. InferenceSession queues it like a completion.
import type { AlternativesResult, CompletionRequest, LocalCompletionResult } from '../shared/completion';
import type { Token } from '../shared/decoding';
import { chooseBranchPoint } from '../speculation/branchPoint';
import { commonPrefixLength, PROMPT_CHUNK, type RankedNext } from '../speculation/greedyEvaluator';
import type { SequenceEvaluator } from '../llama/sequenceEvaluator';
import { splitTrailingBlank } from '../prompt/fimPrompt';
import { clampMaxTokens } from '../stopping/stopRules';

/** Greedy completions remembered for alternatives (the most recent requests'). */
const RECENT_GREEDY = 8;

/**
 * Tokens ranked at the branch point beyond those asked for: a candidate whose completion reads as
 * the greedy one (another tokenization of the same text) is skipped for the next.
 */
const ALTERNATIVE_SPARES = 2;

/** Positions evaluated per batch when ranking along a greedy completion (every one an output). */
const RANK_BATCH = 256;

/** What finding alternatives needs of the session, for one request. */
export interface AlternativesHost {
  /** Where a branch may be: anywhere in the completion, or before its first line with content is complete. */
  scope: 'completion' | 'firstLine';
  recentGreedy: RecentGreedy;
  /** The request's prompt tokens (its extra context indexed). */
  promptTokens(): Token[];
  /** Greedy decoding of the request after the prompt and `forced` tokens (the request's mode and stops). */
  decodeAfter(prompt: readonly Token[], forced: readonly Token[]): Promise<LocalCompletionResult>;
  /** The KV sequence the request's owner decodes on. */
  targetSequence(prompt: readonly Token[]): Promise<SequenceEvaluator>;
  detokenize(tokens: readonly Token[]): string;
  isEndToken(token: Token): boolean;
}

/**
 * The greedy completions of recent requests, by prompt and stop rules: alternatives are asked for
 * right after the completion the user saw, whose tokens need not be decoded again.
 */
export class RecentGreedy {
  private readonly entries: { key: string; tokens: Token[]; text: string }[] = [];

  /** What decides a completion's tokens besides the model: the prompt and the stop rules. */
  private key(prompt: readonly Token[], request: CompletionRequest): string {
    const { maxTokens, stop, singleLine, maxLines, stopAtBlockEnd, languageId, tabSize, suffix, prefix } = request;
    // The prefix's end and the suffix decide where a block ends (the prompt may hold only part of them).
    const stops = { maxTokens: clampMaxTokens(maxTokens), stop, singleLine, maxLines, stopAtBlockEnd, ...(stopAtBlockEnd ? { languageId, tabSize, suffix, prefix } : {}) };
    return `${JSON.stringify(stops)}|${prompt.join(',')}`;
  }

  find(prompt: readonly Token[], request: CompletionRequest): { tokens: Token[]; text: string } | undefined {
    const key = this.key(prompt, request);
    return this.entries.find((e) => e.key === key);
  }

  remember(prompt: readonly Token[], request: CompletionRequest, result: LocalCompletionResult): { tokens: Token[]; text: string } {
    const key = this.key(prompt, request);
    const at = this.entries.findIndex((e) => e.key === key);
    if (at >= 0) this.entries.splice(at, 1);
    const entry = { key, tokens: [...result.tokens], text: result.text };
    this.entries.push(entry);
    if (this.entries.length > RECENT_GREEDY) this.entries.shift();
    return entry;
  }
}

export async function findAlternatives(host: AlternativesHost, request: CompletionRequest, count: number, signal: AbortSignal | undefined): Promise<AlternativesResult> {
  const started = performance.now();
  const done = (result: Omit<AlternativesResult, 'totalMs'>): AlternativesResult => ({ ...result, totalMs: performance.now() - started });
  if (count < 1) return done({ completions: [], limitedBy: 'no alternatives asked for' });
  const prompt = host.promptTokens();
  // The greedy completion: remembered from the request the user saw, else decoded (the same tokens).
  let greedy = host.recentGreedy.find(prompt, request);
  if (!greedy) {
    const first = await host.decodeAfter(prompt, []);
    if (first.stats.stopReason === 'abort') return done({ completions: [], limitedBy: 'cancelled' });
    greedy = host.recentGreedy.remember(prompt, request, first);
  }
  const found = greedy;
  if (greedy.tokens.length === 0) return done({ completions: [], limitedBy: 'the greedy completion is empty' });
  let ranked: RankedNext[] | null;
  const target = await host.targetSequence(prompt);
  try {
    ranked = await rankAlong(target, prompt, greedy.tokens.slice(0, branchablePositions(greedy.tokens, host)), count + ALTERNATIVE_SPARES, signal);
  } catch (error) {
    // As after a failed completion: the library's state is unknown, start the cache afresh.
    await target.reset().catch(() => undefined);
    throw error;
  }
  if (!ranked) return done({ completions: [], limitedBy: 'cancelled' });
  const { blank } = splitTrailingBlank(request.prefix);
  // Only the positions ranked (with the first-line scope, those before the first line is complete).
  const branch = chooseBranchPoint(greedy.tokens.slice(0, ranked.length), ranked, {
    isEndToken: (token) => host.isEndToken(token),
    allows: (position, token) => {
      // Where the greedy completion writes the blank the user typed (the ghost text starts after it),
      // an alternative must too: one that does not would rewrite text left of the cursor.
      if (!blank) return true;
      const writesBlank = (text: string) => text.startsWith(blank) || blank.startsWith(text);
      return !writesBlank(host.detokenize(found.tokens.slice(0, position + 1))) || writesBlank(host.detokenize([...found.tokens.slice(0, position), token]));
    },
  });
  if (!branch) return done({ completions: [], limitedBy: 'the target offers no other token along the greedy completion' });
  const completions: LocalCompletionResult[] = [];
  // Texts already offered: another tokenization of the same text (or an empty one) is no alternative.
  const seen = new Set([greedy.text, '']);
  const forcedPrefix = greedy.tokens.slice(0, branch.tokenIndex);
  for (const token of branch.candidates) {
    if (completions.length >= count) break;
    if (signal?.aborted) break;
    const alternative = await host.decodeAfter(prompt, [...forcedPrefix, token]);
    if (alternative.stats.stopReason === 'abort') break;
    if (seen.has(alternative.text)) continue;
    seen.add(alternative.text);
    completions.push(alternative);
  }
  const limitedBy = signal?.aborted
    ? 'cancelled'
    : completions.length < count
      ? `the target's ${branch.candidates.length} next most likely tokens at the branch point gave ${completions.length} distinct completions`
      : undefined;
  return done({ completions, branch: { tokenIndex: branch.tokenIndex, margin: branch.margin }, ...(limitedBy ? { limitedBy } : {}) });
}

/**
 * How many of the greedy completion's first positions a branch may replace: all of them, or with
 * the first-line scope those up to the token that completes the first line with content (that
 * token included: another one there changes how the line ends). Only these are ranked.
 */
function branchablePositions(greedy: readonly Token[], host: Pick<AlternativesHost, 'scope' | 'detokenize'>): number {
  if (host.scope !== 'firstLine') return greedy.length;
  for (let position = 1; position < greedy.length; position++) {
    if (/\S[^\n]*\n/.test(host.detokenize(greedy.slice(0, position)))) return position;
  }
  return greedy.length;
}

/**
 * The top `top` tokens and margin at each position of the greedy completion `greedy` after
 * `prompt` (ranked[j] predicts greedy[j]): the prompt's cached KV is reused, the last prompt token
 * and greedy[0..n-1) are evaluated again with an output at every position, in batches (the abort
 * checked in between). Null when aborted. The cache then holds prompt + greedy[0..n-1).
 */
async function rankAlong(evaluator: SequenceEvaluator, prompt: readonly Token[], greedy: readonly Token[], top: number, signal: AbortSignal | undefined): Promise<RankedNext[] | null> {
  const keep = Math.min(commonPrefixLength(evaluator.tokens, prompt), prompt.length - 1);
  await evaluator.truncate(keep);
  for (let at = keep; at < prompt.length - 1; at += PROMPT_CHUNK) {
    if (signal?.aborted) return null;
    await evaluator.append(prompt.slice(at, Math.min(at + PROMPT_CHUNK, prompt.length - 1)), 0);
  }
  const input = [prompt[prompt.length - 1], ...greedy.slice(0, -1)];
  // Every position of a batch is an output: batches within the context's batch size.
  const batch = Math.max(1, Math.min(RANK_BATCH, evaluator.capacity));
  const ranked: RankedNext[] = [];
  for (let at = 0; at < input.length; at += batch) {
    if (signal?.aborted) return null;
    const chunk = input.slice(at, at + batch);
    ranked.push(...(await evaluator.appendRanked(chunk, chunk.length, top)));
  }
  return ranked;
}
