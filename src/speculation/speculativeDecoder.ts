import type { LookaheadPool } from './lookaheadPool';
import { emptySpeculationStats, type DecoderStats, type SpeculationStats } from '../shared/generationStats';
import type { DecodeMode, Token } from '../shared/decoding';
import type { StopRules } from '../stopping/stopRules';
import { syncPromptAndPredictNext, type GreedyEvaluator } from './greedyEvaluator';
import type { ShapeOffers, SpeculationPolicy } from './policy';
import type { CopyProposer, DraftProposer, NgramProposer, Proposal } from './proposers';
import { padToShape, ShapeHistory } from './verifyShape';

export interface DecodeInput {
  mode: DecodeMode;
  target: GreedyEvaluator;
  prompt: readonly Token[];
  stop: StopRules;
  policy: SpeculationPolicy;
  ngram?: NgramProposer;
  draft?: DraftProposer;
  /**
   * The next-edit window's copy proposer (speculation/windowCopyProposer.ts): used by 'copy' (alone)
   * and 'hybrid' (first, then n-grams, lookahead, draft) when given.
   */
  copy?: CopyProposer;
  signal?: AbortSignal;
  /** Called after each step with the tokens accepted so far (streaming, progress). */
  onProgress?(tokens: readonly Token[]): void;
  now?: () => number;
  /** Filled with where each step's time went (bench/profile.ts). */
  profile?: StepProfile;
  /**
   * The target's outputs after rejected guesses, kept as a third source (n-gram modes only). With
   * it, every output of a verify batch is read, not only those up to the first rejection.
   */
  lookahead?: LookaheadPool;
}

/** Wall time of the decode loop by phase, summed over steps (the prompt's evaluation left out). */
export interface StepProfile {
  steps: number;
  /** Proposer lookups, the draft model and the policy's plan. */
  proposeMs: number;
  /** The target's evaluation of [pending, ...proposal], outputs read. */
  verifyMs: number;
  /** Counting the accepted guesses and erasing the rejected ones from the KV cache. */
  eraseMs: number;
  /** Acceptance and cost bookkeeping, stop rules, progress callback. */
  bookkeepingMs: number;
  /** Whole steps, start to end. */
  totalMs: number;
}

export function emptyStepProfile(): StepProfile {
  return { steps: 0, proposeMs: 0, verifyMs: 0, eraseMs: 0, bookkeepingMs: 0, totalMs: 0 };
}

/**
 * Lossless speculative decoding. Each step the target evaluates [pending, ...proposal] in ONE batch;
 * the proposal's longest prefix that equals the target's own greedy choices is kept, plus the
 * target's token after it (the correction, or a bonus token when all were right). The rejected tail
 * is erased from the KV cache. Every emitted token is the target's argmax given the tokens before
 * it, so the output equals plain greedy decoding token for token.
 *
 * With a fixed verify shape (speculation/verifyShape.ts) every step's batch has the size the policy
 * chose for the generation, the proposal padded to it; padding is verified like any guess.
 */
export async function decode(input: DecodeInput): Promise<DecoderStats> {
  const now = input.now ?? (() => performance.now());
  const { target, stop, policy, signal } = input;
  const useNgram = input.mode === 'ngram' || input.mode === 'hybrid';
  const useDraft = input.mode === 'draft' || input.mode === 'hybrid';
  const lookahead = useNgram ? input.lookahead : undefined;
  const copy = input.mode === 'copy' || input.mode === 'hybrid' ? input.copy : undefined;
  const spec: SpeculationStats = emptySpeculationStats(input.mode);
  const stats: DecoderStats = {
    promptTokens: input.prompt.length,
    reusedPromptTokens: 0,
    generatedTokens: 0,
    promptMs: 0,
    timeToFirstTokenMs: 0,
    totalMs: 0,
    stopReason: 'maxTokens',
    speculation: spec,
  };
  const started = now();
  // The decode steps' batch sizes (the prompt's evaluation is not one).
  const shapes = new ShapeHistory();
  const finish = (): DecoderStats => {
    if (shapes.distinct > 0) spec.batchShapes = shapes.distinct;
    stats.generatedTokens = stop.tokens.length;
    stats.totalMs = now() - started;
    stats.stopReason = stop.decision?.reason ?? 'maxTokens';
    if (input.mode !== 'plain') spec.policy = policy.snapshot();
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
  // What the cache keeps of the prompt: a request stopped while evaluating the rest still reports
  // what it evaluated (the cost of a keystroke, of a switch between prompts).
  const prefill = await syncPromptAndPredictNext(target, input.prompt, signal);
  stats.reusedPromptTokens = prefill.reused;
  stats.promptTokensEvaluated = prefill.evaluated;
  if (prefill.shifted > 0) stats.shiftedPromptTokens = prefill.shifted;
  if (!prefill.next) {
    stop.stop('abort');
    return finish();
  }
  // The prompt's evaluation yields the first token: counted, so plain decoding is one per token.
  spec.targetEvaluations = 1;
  stats.promptMs = now() - started;
  stats.timeToFirstTokenMs = stats.promptMs;

  const history: Token[] = [...input.prompt];
  let pending = prefill.next.token;
  const offers: ShapeOffers = { ngram: useNgram && input.ngram !== undefined, draft: useDraft && input.draft !== undefined, lookahead: lookahead !== undefined, copy: copy !== undefined };
  // 0: variable shapes; 1: plain steps only; else the fixed size of every step.
  let shape = input.mode === 'plain' ? 0 : policy.chooseShape(offers);
  if (shape > 1) spec.fixedShape = shape;
  const fixedRun = { steps: 0, tokens: 0 };

  const profile = input.profile;
  // The step's bookkeeping after its verification is timed into the next step's start.
  let stepStarted = now();
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
    // A fixed shape that no longer fits the cache ends in plain steps.
    if (shape > 1 && room + 1 < shape) shape = 1;
    const remaining = Math.min(stop.remaining, room + 1);
    const draftMsBefore = spec.draftMs;
    const tPropose = now();
    const proposal = shape === 1 ? NO_PROPOSAL : await propose(input, history, remaining, useNgram, useDraft, copy, spec, now, shape);
    const batch = shape > 1 ? padToShape(pending, proposal.tokens, shape) : [pending, ...proposal.tokens];
    const guesses = batch.slice(1);
    const base = target.tokens.length;
    const t0 = now();
    // With the guesses as `expected`, outputs after the first rejection need not be read (unless
    // the lookahead pool keeps them).
    const predictions = await target.append(batch, batch.length, false, lookahead ? undefined : guesses);
    const t1 = now();
    spec.targetMs += t1 - t0;
    spec.targetEvaluations++;
    spec.targetTokensEvaluated += batch.length;

    let accepted = 0;
    while (accepted < guesses.length && guesses[accepted] === predictions[accepted].token) accepted++;
    const acceptedProposed = Math.min(accepted, proposal.tokens.length);
    if (proposal.tokens.length > 0) {
      const s = spec.bySource[proposal.source];
      s.steps++;
      s.proposedTokens += proposal.tokens.length;
      s.acceptedTokens += acceptedProposed;
      if (proposal.source === 'copy') {
        policy.recordCopy(proposal.inRun ?? false, proposal.tokens.length, acceptedProposed, proposal.agreement);
        copy?.record(proposal.tokens.length, acceptedProposed);
      } else {
        policy.acceptance.record(proposal.source, proposal.tokens.length, acceptedProposed);
      }
    }
    if (guesses.length > proposal.tokens.length) {
      spec.paddingTokens = (spec.paddingTokens ?? 0) + guesses.length - proposal.tokens.length;
      spec.paddingAccepted = (spec.paddingAccepted ?? 0) + accepted - acceptedProposed;
    }
    if (lookahead && accepted + 1 < predictions.length) {
      // The target's continuations of the wrong history after the first rejected guess. Only the
      // pool's key length of history comes before the batch (history ends with its first token).
      const before = history.slice(-(lookahead.n - 1));
      lookahead.harvest(
        before.concat(guesses),
        before.length - 1,
        predictions.map((p) => p.token),
        accepted + 1,
      );
    }
    // Keep the cache equal to the accepted history: drop the rejected guesses.
    if (accepted < guesses.length) await target.truncate(base + 1 + accepted);
    const t2 = now();
    const warm = shapes.record(batch.length);
    // The policy weighs whole steps, as the user feels them: the evaluation plus the lookups, the
    // bookkeeping and the erase around it (the draft's own time is weighed apart). A step is
    // measured from the end of the previous one, so its stop rules and callbacks count too. With
    // fixed shapes (a graph backend) only warm steps count: a step that re-captures the graph costs
    // what no steady shape does.
    if (shape === 0 || warm) policy.cost.recordTarget(batch.length, t2 - stepStarted - (spec.draftMs - draftMsBefore));
    if (shape > 1) {
      policy.recordShapeStep(shape, accepted + 1);
      fixedRun.steps++;
      fixedRun.tokens += accepted + 1;
      if (!policy.keepShape(shape, fixedRun.steps, fixedRun.tokens)) shape = 1;
    }
    if (profile) {
      profile.steps++;
      profile.proposeMs += t0 - tPropose;
      profile.verifyMs += t1 - t0;
      profile.eraseMs += t2 - t1;
      profile.bookkeepingMs += tPropose - stepStarted;
      profile.totalMs += t2 - stepStarted;
    }
    stepStarted = t2;

    let stopped = false;
    for (let i = 0; i < accepted && !stopped; i++) {
      history.push(guesses[i]);
      stopped = stop.push(guesses[i]) !== undefined;
    }
    if (stopped) break;
    pending = predictions[accepted].token;
  }
  return finish();
}

const NO_PROPOSAL: Proposal = { source: 'ngram', tokens: [] };

/**
 * The step's proposal. With a fixed shape (`shape` > 1) the batch costs the same whatever it holds:
 * the free sources (copy, n-grams, lookahead) offer up to shape − 1 tokens and the chosen one's whole
 * offer is verified; where the policy chose none, the longest free offer is; the draft, which costs a
 * token, proposes the length the policy chose.
 */
async function propose(
  input: DecodeInput,
  history: readonly Token[],
  remaining: number,
  useNgram: boolean,
  useDraft: boolean,
  copy: CopyProposer | undefined,
  spec: SpeculationStats,
  now: () => number,
  shape = 0,
): Promise<Proposal> {
  const none = NO_PROPOSAL;
  if (!useNgram && !useDraft && !copy) return none;
  const maxLen = shape > 1 ? shape - 1 : Math.max(0, remaining - 1);
  if (maxLen === 0) return none;
  // Asked every step (also when another source wins): it follows the output through the window.
  const copied = copy ? copy.find(history, maxLen) : null;
  const match = useNgram && input.ngram ? input.ngram.find(history, maxLen) : null;
  // A few map lookups: the policy prefers a long n-gram match, then this, then the draft.
  const ahead = useNgram && input.lookahead ? input.lookahead.find(history, maxLen) : [];
  const plan = input.policy.plan({
    ngramAvailable: match?.tokens.length ?? 0,
    ngramMatchLength: match?.matchLength ?? 0,
    draftAvailable: useDraft && input.draft !== undefined,
    remaining,
    lookaheadAvailable: ahead.length,
    copyAvailable: copied?.tokens.length ?? 0,
    copyScheduled: copied ? (copied.scheduled ?? copied.tokens.length) : 0,
    copyInRun: copied?.inRun ?? false,
    copyAgreement: copied?.agreement,
  });
  const take = (offered: number) => (shape > 1 ? offered : (plan?.maxLen ?? 0));
  if (!plan) {
    if (shape <= 1) return none;
    const offers: Proposal[] = [copied ?? none, match ?? none, { source: 'lookahead', tokens: ahead }];
    return offers.reduce((a, b) => (b.tokens.length > a.tokens.length ? b : a), none);
  }
  if (plan.source === 'copy' && copied) return { ...copied, tokens: copied.tokens.slice(0, take(copied.tokens.length)) };
  if (plan.source === 'ngram' && match) return { ...match, tokens: match.tokens.slice(0, take(match.tokens.length)) };
  if (plan.source === 'lookahead') return { source: 'lookahead', tokens: ahead.slice(0, take(ahead.length)) };
  if (plan.source === 'draft' && input.draft) {
    const t0 = now();
    const proposal = await input.draft.propose(history, plan.maxLen);
    const ms = now() - t0;
    spec.draftMs += ms;
    spec.draftEvaluations += proposal.evaluations ?? proposal.tokens.length;
    // The whole call counts (catching up with the accepted tokens is part of every step), per token
    // proposed; an unsure draft that proposes nothing still cost its time: a guess rejected at once.
    if (proposal.generationMs !== undefined) input.policy.cost.recordDraft(Math.max(1, proposal.tokens.length), proposal.generationMs);
    if (proposal.tokens.length === 0) input.policy.acceptance.record('draft', 1, 0);
    return proposal;
  }
  return none;
}
