import { emptySourceStats, type CompletionStats, type DecodeMode, type ProposalSource, type Token } from '../engine/types';
import type { StopRules } from '../stopping/stopRules';
import { syncPromptAndPredictNext, type GreedyEvaluator } from './greedyEvaluator';
import type { SpeculationPolicy } from './policy';
import type { DraftProposer, NgramProposer, Proposal } from './proposers';

export interface DecodeInput {
  mode: DecodeMode;
  target: GreedyEvaluator;
  prompt: readonly Token[];
  stop: StopRules;
  policy: SpeculationPolicy;
  ngram?: NgramProposer;
  draft?: DraftProposer;
  signal?: AbortSignal;
  /** Called after each step with the tokens accepted so far (streaming, progress). */
  onProgress?(tokens: readonly Token[]): void;
  now?: () => number;
}

/**
 * Lossless speculative decoding. Each step the target evaluates [pending, ...proposal] in ONE batch;
 * the proposal's longest prefix that equals the target's own greedy choices is kept, plus the
 * target's token after it (the correction, or a bonus token when all were right). The rejected tail
 * is erased from the KV cache. Every emitted token is the target's argmax given the tokens before
 * it, so the output equals plain greedy decoding token for token.
 */
export async function decode(input: DecodeInput): Promise<CompletionStats> {
  const now = input.now ?? (() => performance.now());
  const { target, stop, policy, signal } = input;
  const useNgram = input.mode === 'ngram' || input.mode === 'hybrid';
  const useDraft = input.mode === 'draft' || input.mode === 'hybrid';
  const stats: CompletionStats = {
    mode: input.mode,
    promptTokens: input.prompt.length,
    reusedPromptTokens: 0,
    generatedTokens: 0,
    targetEvaluations: 0,
    targetTokensEvaluated: 0,
    draftEvaluations: 0,
    bySource: { ngram: emptySourceStats(), draft: emptySourceStats() },
    promptMs: 0,
    targetMs: 0,
    draftMs: 0,
    timeToFirstTokenMs: 0,
    totalMs: 0,
    stopReason: 'maxTokens',
  };
  const started = now();
  const finish = (): CompletionStats => {
    stats.generatedTokens = stop.tokens.length;
    stats.totalMs = now() - started;
    stats.stopReason = stop.decision?.reason ?? 'maxTokens';
    if (input.mode !== 'plain') stats.policy = policy.snapshot();
    return stats;
  };

  if (signal?.aborted) {
    stop.stop('abort');
    return finish();
  }
  if (input.prompt.length + 1 >= target.capacity) {
    stop.stop('contextFull');
    return finish();
  }
  const prefill = await syncPromptAndPredictNext(target, input.prompt, signal);
  if (!prefill) {
    stop.stop('abort');
    return finish();
  }
  stats.reusedPromptTokens = prefill.reused;
  // The prompt's evaluation yields the first token: counted, so plain decoding is one per token.
  stats.targetEvaluations = 1;
  stats.promptMs = now() - started;
  stats.timeToFirstTokenMs = stats.promptMs;

  const history: Token[] = [...input.prompt];
  let pending = prefill.next.token;

  for (;;) {
    history.push(pending);
    if (stop.push(pending)) break;
    input.onProgress?.(stop.tokens);
    if (signal?.aborted) {
      stop.stop('abort');
      break;
    }
    // Room for [pending, ...proposal] in the cache.
    const room = target.capacity - target.tokens.length - 1;
    if (room < 0) {
      stop.stop('contextFull');
      break;
    }
    const remaining = Math.min(stop.remaining, room + 1);
    // The policy weighs whole steps, as the user feels them: the evaluation plus the lookups, the
    // bookkeeping and the erase around it (the draft's own time is weighed apart).
    const stepStarted = now();
    const draftMsBefore = stats.draftMs;
    const proposal = await propose(input, history, remaining, useNgram, useDraft, stats, now);
    const batch = [pending, ...proposal.tokens];
    const base = target.tokens.length;
    const t0 = now();
    const predictions = await target.append(batch, batch.length);
    const ms = now() - t0;
    stats.targetMs += ms;
    stats.targetEvaluations++;
    stats.targetTokensEvaluated += batch.length;

    let accepted = 0;
    while (accepted < proposal.tokens.length && proposal.tokens[accepted] === predictions[accepted].token) accepted++;
    if (proposal.tokens.length > 0) {
      const s = stats.bySource[proposal.source];
      s.steps++;
      s.proposedTokens += proposal.tokens.length;
      s.acceptedTokens += accepted;
      policy.acceptance.record(proposal.source, proposal.tokens.length, accepted);
    }
    // Keep the cache equal to the accepted history: drop the rejected guesses.
    if (accepted < proposal.tokens.length) await target.truncate(base + 1 + accepted);
    policy.cost.recordTarget(batch.length, now() - stepStarted - (stats.draftMs - draftMsBefore));

    let stopped = false;
    for (let i = 0; i < accepted && !stopped; i++) {
      history.push(proposal.tokens[i]);
      stopped = stop.push(proposal.tokens[i]) !== undefined;
    }
    if (stopped) break;
    pending = predictions[accepted].token;
  }
  return finish();
}

async function propose(
  input: DecodeInput,
  history: readonly Token[],
  remaining: number,
  useNgram: boolean,
  useDraft: boolean,
  stats: CompletionStats,
  now: () => number,
): Promise<Proposal> {
  const none: Proposal = { source: 'ngram' as ProposalSource, tokens: [] };
  if (!useNgram && !useDraft) return none;
  const maxLen = Math.max(0, remaining - 1);
  if (maxLen === 0) return none;
  const match = useNgram && input.ngram ? input.ngram.find(history, maxLen) : null;
  const plan = input.policy.plan({
    ngramAvailable: match?.tokens.length ?? 0,
    ngramMatchLength: match?.matchLength ?? 0,
    draftAvailable: useDraft && input.draft !== undefined,
    remaining,
  });
  if (!plan) return none;
  if (plan.source === 'ngram' && match) return { ...match, tokens: match.tokens.slice(0, plan.maxLen) };
  if (plan.source === 'draft' && input.draft) {
    const t0 = now();
    const proposal = await input.draft.propose(history, plan.maxLen);
    const ms = now() - t0;
    stats.draftMs += ms;
    stats.draftEvaluations += proposal.evaluations ?? proposal.tokens.length;
    // The whole call counts (catching up with the accepted tokens is part of every step), per token
    // proposed; an unsure draft that proposes nothing still cost its time: a guess rejected at once.
    if (proposal.generationMs !== undefined) input.policy.cost.recordDraft(Math.max(1, proposal.tokens.length), proposal.generationMs);
    if (proposal.tokens.length === 0) input.policy.acceptance.record('draft', 1, 0);
    return proposal;
  }
  return none;
}
