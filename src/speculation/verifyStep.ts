// One verify step of the speculative decoder (speculativeDecoder.ts): the target evaluates the
// pending token and the proposal in ONE batch — a chain (padded to the fixed shape when there is
// one), or on a fixed shape a token tree where the target's evaluator verifies trees — and the step
// keeps what the target's greedy decoding would write. Both count the step in the statistics and
// tell the policy and the proposers how the offer fared.
import type { Token } from '../shared/decoding';
import type { SpeculationStats } from '../shared/generationStats';
import type { GreedyEvaluator } from './greedyEvaluator';
import type { SpeculationPolicy } from './policy';
import type { Offer, Proposer, TreeOffer } from './proposer';
import { chainOutcome, shapeTree, treeStepAsChain } from './treeStep';
import { padToShape } from './verifyShape';

/** A step's proposal: the tokens verified as a chain, and the source's offer they came from (none: a plain step). */
export interface StepProposal {
  tokens: readonly Token[];
  chosen?: { proposer: Proposer; offer: Offer };
}

export const NO_PROPOSAL: StepProposal = { tokens: [] };

/** What a step needs of the decode around it. */
export interface StepContext {
  target: GreedyEvaluator;
  policy: SpeculationPolicy;
  spec: SpeculationStats;
  /** Proposers that learn from every output of a verify batch. */
  observers: readonly Proposer[];
  /** The accepted history, ending with the pending token. */
  history: readonly Token[];
  now: () => number;
}

/** What a step kept, and when its evaluation ended (the profile's verify/erase split). */
export interface StepResult {
  kind: 'chain' | 'tree';
  batchLength: number;
  /** The guesses the target agreed with, in order. */
  accepted: Token[];
  /** The target's own token after them: the next pending token. */
  next: Token;
  evaluatedAt: number;
}

/** Nodes a tree may hold after the pending token where `target` verifies trees on this fixed shape (0: chains only). */
export function targetTreeRoom(target: GreedyEvaluator, shape: number): number {
  return shape > 1 && target.verifyTree && shape - 1 <= (target.maxTreeNodes ?? Number.POSITIVE_INFINITY) ? shape - 1 : 0;
}

/** The tree of a step that verifies one, where the step's shape, the target and the policy allow it. */
export function treeToVerify(c: StepContext, proposal: StepProposal, shape: number): { proposer: Proposer; offer: TreeOffer } | null {
  const chosen = proposal.chosen;
  if (targetTreeRoom(c.target, shape) === 0 || chosen?.offer.kind !== 'tree') return null;
  return c.policy.verifiesTree(chosen.proposer.id, shape) ? { proposer: chosen.proposer, offer: chosen.offer } : null;
}

/** The target's evaluation of [pending, ...proposal] (padded to `shape` when fixed), the rejected tail erased. */
export async function chainStep(c: StepContext, pending: Token, proposal: StepProposal, shape: number): Promise<StepResult> {
  const { target, spec } = c;
  const batch = shape > 1 ? padToShape(pending, proposal.tokens, shape) : [pending, ...proposal.tokens];
  const guesses = batch.slice(1);
  const base = target.tokens.length;
  const t0 = c.now();
  // With the guesses as `expected`, outputs after the first rejection need not be read (unless a proposer learns from them).
  const predictions = await target.append(batch, batch.length, false, c.observers.length > 0 ? undefined : guesses);
  const evaluatedAt = c.now();
  countEvaluation(spec, batch.length, evaluatedAt - t0);
  let accepted = 0;
  while (accepted < guesses.length && guesses[accepted] === predictions[accepted]!.token) accepted++;
  const acceptedProposed = Math.min(accepted, proposal.tokens.length);
  if (proposal.chosen && proposal.tokens.length > 0) {
    const { proposer, offer } = proposal.chosen;
    const s = spec.bySource[proposer.id]!;
    s.steps++;
    s.proposedTokens += proposal.tokens.length;
    s.acceptedTokens += acceptedProposed;
    c.policy.record(proposer.id, offer, proposal.tokens.length, acceptedProposed);
    if (offer.kind === 'tree' && shape > 1) c.policy.trees.recordChain(proposer.id, acceptedProposed);
    proposer.record(proposal.tokens.length, acceptedProposed);
  }
  countPadding(spec, guesses.length - proposal.tokens.length, accepted - acceptedProposed);
  if (c.observers.length > 0) {
    const step = { history: c.history, guesses, predictions: predictions.map((p) => p.token), accepted };
    for (const observer of c.observers) observer.observe!(step);
  }
  // Keep the cache equal to the accepted history: drop the rejected guesses.
  if (accepted < guesses.length) await target.truncate(base + 1 + accepted);
  return { kind: 'chain', batchLength: batch.length, accepted: guesses.slice(0, accepted), next: predictions[accepted]!.token, evaluatedAt };
}

/**
 * The target's evaluation of [pending, ...tree] on a fixed shape: the offer's tree cut or padded to
 * shape − 1 nodes, the accepted path kept by the evaluator (GreedyEvaluator.verifyTree). The source's
 * acceptance is recorded as its likeliest chain would have fared (what its acceptance model weighs),
 * the tree's own outcome in the statistics and the policy's tree choice.
 */
export async function treeStep(c: StepContext, pending: Token, proposer: Proposer, offer: TreeOffer, shape: number): Promise<StepResult> {
  const { spec } = c;
  const shaped = shapeTree(offer, shape - 1, pending);
  const predictions: Token[] | undefined = c.observers.length > 0 ? [] : undefined;
  const t0 = c.now();
  const verdict = await c.target.verifyTree!(pending, shaped.tree, predictions);
  const evaluatedAt = c.now();
  const batchLength = shaped.tree.tokens.length + 1;
  countEvaluation(spec, batchLength, evaluatedAt - t0);
  spec.treeSteps = (spec.treeSteps ?? 0) + 1;
  const accepted = verdict.path.map((node) => shaped.tree.tokens[node]!);
  // Padding hangs below the offer's nodes: the accepted path enters it only after them.
  const acceptedOffered = verdict.path.filter((node) => node < shaped.offered).length;
  const s = spec.bySource[proposer.id]!;
  s.steps++;
  s.proposedTokens += shaped.offered;
  s.acceptedTokens += acceptedOffered;
  s.treeSteps = (s.treeSteps ?? 0) + 1;
  s.treeNodes = (s.treeNodes ?? 0) + shaped.offered;
  s.treeAccepted = (s.treeAccepted ?? 0) + acceptedOffered;
  const asChain = chainOutcome(offer.chain.slice(0, shape - 1), accepted, verdict.next);
  if (asChain.proposed > 0) c.policy.record(proposer.id, offer, asChain.proposed, asChain.accepted);
  // Both without padding, as a chain step's recordChain counts it.
  c.policy.trees.recordTree(proposer.id, acceptedOffered, asChain.accepted);
  proposer.record(asChain.proposed, asChain.accepted);
  countPadding(spec, shaped.tree.tokens.length - shaped.offered, accepted.length - acceptedOffered);
  if (predictions) {
    const step = treeStepAsChain(c.history, shaped.tree, verdict.path, predictions);
    for (const observer of c.observers) observer.observe!(step);
  }
  return { kind: 'tree', batchLength, accepted, next: verdict.next, evaluatedAt };
}

function countEvaluation(spec: SpeculationStats, tokens: number, ms: number): void {
  spec.targetMs += ms;
  spec.targetEvaluations++;
  spec.targetTokensEvaluated += tokens;
}

function countPadding(spec: SpeculationStats, tokens: number, accepted: number): void {
  if (tokens <= 0) return;
  spec.paddingTokens = (spec.paddingTokens ?? 0) + tokens;
  spec.paddingAccepted = (spec.paddingAccepted ?? 0) + accepted;
}
