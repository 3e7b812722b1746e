import { emptySpeculationStats, type DecoderStats, type SpeculationStats } from '../shared/generationStats';
import type { DecodeMode, Token } from '../shared/decoding';
import type { StopRules } from '../stopping/stopRules';
import { syncPromptAndPredictNext, type GreedyEvaluator } from './greedyEvaluator';
import type { SourceOffer, SpeculationPolicy } from './policy';
import { offeredChain, type Proposer } from './proposer';
import { VariableStepCosts } from './costModel';
import { ShapeHistory } from './verifyShape';
import { chainStep, NO_PROPOSAL, type StepContext, type StepProposal, targetTreeRoom, treeStep, treeToVerify } from './verifyStep';

export interface DecodeInput {
  mode: DecodeMode;
  target: GreedyEvaluator;
  prompt: readonly Token[];
  stop: StopRules;
  policy: SpeculationPolicy;
  /**
   * The sources it proposes from, the one the policy prefers when several pay first: for a mode,
   * speculation/modeProposers.ts's proposersFor. One proposer per id; none used in plain mode.
   */
  proposers?: readonly Proposer[];
  signal?: AbortSignal;
  /** Called after each step with the tokens accepted so far (streaming, progress). */
  onProgress?(tokens: readonly Token[]): void;
  now?: () => number;
  /** Filled with where each step's time went (bench/profile.ts). */
  profile?: StepProfile;
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
 * chose for the generation, the proposal padded to it; padding is verified like any guess. There, a
 * source that offers a token tree has it verified as a tree where the target's evaluator verifies
 * trees (GreedyEvaluator.verifyTree) and the policy finds it pays (speculation/verifyStep.ts): the
 * batch holds the tree instead of filler, and the longest root path the target agrees with is kept.
 */
export async function decode(input: DecodeInput): Promise<DecoderStats> {
  const now = input.now ?? (() => performance.now());
  const { target, stop, policy, signal } = input;
  const proposers = input.mode === 'plain' ? [] : (input.proposers ?? []);
  const ids = new Set(proposers.map((p) => p.id));
  if (ids.size < proposers.length) throw new Error(`decode: two proposers share an id (${proposers.map((p) => p.id).join(', ')})`);
  // Proposers that learn from every output of a verify batch: with one, outputs past the first rejection are read too.
  const observers = proposers.filter((p) => p.observe);
  const spec: SpeculationStats = emptySpeculationStats(input.mode, [...ids]);
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
  const variableCosts = new VariableStepCosts(policy.cost);
  const finish = (): DecoderStats => {
    variableCosts.finish();
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
  // 0: variable shapes; 1: plain steps only; else the fixed size of every step.
  let shape = input.mode === 'plain' ? 0 : policy.chooseShape(proposers);
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
    const proposal = shape === 1 ? NO_PROPOSAL : await propose(policy, proposers, history, remaining, spec, now, shape, treeRoom(target, policy, shape));
    const step: StepContext = { target, policy, spec, observers, history, now };
    const t0 = now();
    const tree = treeToVerify(step, proposal, shape);
    const result = tree ? await treeStep(step, pending, tree.proposer, tree.offer, shape) : await chainStep(step, pending, proposal, shape);
    const accepted = result.accepted.length;
    const t2 = now();
    const warm = shapes.record(result.batchLength);
    // The policy weighs whole steps, as the user feels them: the evaluation plus the lookups, the
    // bookkeeping and the erase around it (the draft's own time is weighed apart). A step is
    // measured from the end of the previous one, so its stop rules and callbacks count too. With
    // fixed shapes (a graph backend) only warm steps count: a step that re-captures the graph costs
    // what no steady shape does; with variable ones a change of size is charged to the speculation
    // that caused it (VariableStepCosts).
    const stepMs = t2 - stepStarted - (spec.draftMs - draftMsBefore);
    if (shape === 0) variableCosts.record(result.batchLength, stepMs);
    else if (warm) policy.cost.recordTarget(result.batchLength, stepMs);
    if (shape > 1) {
      if (warm) policy.trees.recordStepMs(result.kind, shape, stepMs);
      policy.recordShapeStep(shape, accepted + 1);
      fixedRun.steps++;
      fixedRun.tokens += accepted + 1;
      if (!policy.keepShape(shape, fixedRun.steps, fixedRun.tokens)) shape = 1;
    }
    if (profile) {
      profile.steps++;
      profile.proposeMs += t0 - tPropose;
      profile.verifyMs += result.evaluatedAt - t0;
      profile.eraseMs += t2 - result.evaluatedAt;
      profile.bookkeepingMs += tPropose - stepStarted;
      profile.totalMs += t2 - stepStarted;
    }
    stepStarted = t2;

    let stopped = false;
    for (let i = 0; i < accepted && !stopped; i++) {
      history.push(result.accepted[i]!);
      stopped = stop.push(result.accepted[i]!) !== undefined;
    }
    if (stopped) break;
    pending = result.next;
  }
  return finish();
}

/** Nodes a tree of this step may hold where the target verifies trees on this fixed shape (0: chains only). */
function treeRoom(target: GreedyEvaluator, policy: SpeculationPolicy, shape: number): number {
  return policy.mayVerifyTrees(shape) ? targetTreeRoom(target, shape) : 0;
}

/**
 * The step's proposal. The lookups are asked every step (also when another source wins: the window
 * copy follows the output through the window); a source that runs a model only once chosen, for the
 * length the policy chose. With a fixed shape (`shape` > 1) the batch costs the same whatever it
 * holds: the lookups offer up to shape − 1 tokens and the chosen one's whole offer is verified; where
 * the policy chose none, the longest offer is (the first of equals). A model is told the tree room
 * (`treeNodes`), where a step may verify a tree.
 */
async function propose(
  policy: SpeculationPolicy,
  proposers: readonly Proposer[],
  history: readonly Token[],
  remaining: number,
  spec: SpeculationStats,
  now: () => number,
  shape: number,
  treeNodes: number,
): Promise<StepProposal> {
  if (proposers.length === 0) return NO_PROPOSAL;
  const maxLen = shape > 1 ? shape - 1 : Math.max(0, remaining - 1);
  if (maxLen === 0) return NO_PROPOSAL;
  const offers: SourceOffer[] = proposers.map((proposer) => (proposer.asks === 'lookup' ? { proposer, offer: proposer.offer(history, maxLen) } : { proposer }));
  const plan = policy.plan(offers, remaining);
  if (!plan) {
    if (shape <= 1) return NO_PROPOSAL;
    let longest = NO_PROPOSAL;
    for (const { proposer, offer } of offers) if (offer && offeredChain(offer).length > longest.tokens.length) longest = { tokens: offeredChain(offer), chosen: { proposer, offer } };
    return longest;
  }
  const { proposer, offer } = offers.find((o) => o.proposer.id === plan.source)!;
  if (proposer.asks === 'lookup') return offer ? { tokens: shape > 1 ? offeredChain(offer) : offeredChain(offer).slice(0, plan.maxLen), chosen: { proposer, offer } } : NO_PROPOSAL;
  const t0 = now();
  const asked = await proposer.offer(history, plan.maxLen, treeNodes);
  spec.draftMs += now() - t0;
  const tokens = asked ? offeredChain(asked).slice(0, plan.maxLen) : [];
  spec.draftEvaluations += asked?.evaluations ?? tokens.length;
  // The whole call counts (catching up with the accepted tokens is part of every step), per token
  // proposed; an unsure model that proposes nothing still cost its time: a guess rejected at once.
  if (asked?.generationMs !== undefined) policy.cost.recordProposal(proposer.id, Math.max(1, tokens.length), asked.generationMs);
  if (tokens.length === 0) policy.recordEmpty(proposer.id);
  return asked ? { tokens, chosen: { proposer, offer: asked } } : NO_PROPOSAL;
}
