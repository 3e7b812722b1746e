// What every proposal source is to the decoder and the policy (n-grams, the target's lookahead, the
// draft model, the next-edit window copy, and any later one): an id, how it is asked, what it offers
// after a history, and what it learns from verified steps. The decoder, the policy and the statistics
// know sources only through this file; a new source is its own file and one registration (the
// request's list of proposers, speculation/modeProposers.ts).
import type { SourceId, Token } from '../shared/decoding';
import type { SpeculationSettings } from '../shared/settings';
import type { TokenTree } from './tokenTree';

/**
 * A chain of tokens guessed to follow the history: the target verifies them in order in one batch and
 * keeps them up to the first it would not have written.
 */
export interface ChainOffer {
  readonly kind: 'chain';
  readonly tokens: readonly Token[];
  /**
   * How many of `tokens` the proposer's own schedule would verify: what a policy that does not measure
   * takes (all when absent); the rest is on offer to one that weighs lengths by their cost.
   */
  readonly scheduled?: number;
  /** Model evaluations spent on it (proposers that run a model); the tokens' count when absent. */
  readonly evaluations?: number;
  /** Their ms when representative of a step (not a catch-up with a whole prompt): what the policy charges per token. */
  readonly generationMs?: number;
}

/**
 * Several candidate continuations at once, as a token tree (speculation/tokenTree.ts): verified in one
 * batch where the target's evaluator verifies trees, the longest root path the target agrees with kept;
 * elsewhere its best chain (`chain`) is verified as a ChainOffer would be.
 */
export interface TreeOffer {
  readonly kind: 'tree';
  readonly tree: TokenTree;
  /** The path to verify where trees are not: the tree's likeliest root path. */
  readonly chain: readonly Token[];
  readonly scheduled?: number;
  readonly evaluations?: number;
  readonly generationMs?: number;
}

/** What a proposer offers after a history. */
export type Offer = ChainOffer | TreeOffer;

/** A verify step as the target answered it (Proposer.observe). */
export interface VerifiedStep {
  /** The accepted history, ending with the batch's first token (the target's own last one). */
  readonly history: readonly Token[];
  /** The rest of the batch: the proposal, then any padding. */
  readonly guesses: readonly Token[];
  /** The target's greedy token after each batch position: predictions[i] follows guesses[0, i). Past the first rejection they continue a wrong history. */
  readonly predictions: readonly Token[];
  /** How many of the guesses the target agreed with. */
  readonly accepted: number;
}

/**
 * How the policy weighs one source's offers, learned across generations: the policy makes one per
 * source id (Proposer.acceptanceModel) and keeps it. Without a hook it weighs the source by a
 * geometric per-token rate (AcceptanceTracker) starting at `prior`, at the settings' maxProposal.
 */
export interface AcceptanceModel<O extends Offer = Offer> {
  /** Per-token acceptance assumed before any observation (the source's overall rate starts there). */
  readonly prior: number;
  /** Longest proposal the policy verifies from this source. */
  longest?(settings: SpeculationSettings): number;
  /** Whether an offer may be proposed (an offer refused here may still fill a fixed shape's padding). */
  usable?(offer: O, settings: SpeculationSettings): boolean;
  /** Expected tokens of a step that verifies the first k tokens of `offer` (a typical offer when absent), for k = 0..limit at index k. */
  expectedTokensUpTo?(limit: number, offer?: O): ArrayLike<number>;
  /**
   * Whether the whole offer (a typical one when absent) is worth one try at a batch size never timed
   * when its estimate comes near the best: where the estimate of untimed sizes would otherwise keep
   * the policy from ever learning that long proposals pay.
   */
  triesWhole?(offer?: O): boolean;
  /** A verified offer: its first `proposed` tokens verified, `accepted` of them kept. */
  record?(offer: O, proposed: number, accepted: number): void;
}

interface ProposerBase<O extends Offer> {
  /** The source: its statistics (SpeculationStats.bySource) and the policy's estimates are kept under it. One proposer per id in a decode. */
  readonly id: SourceId;
  /** How the policy weighs this source (made once per policy); a geometric rate from a neutral prior when absent. */
  acceptanceModel?(): AcceptanceModel<O>;
  /** How its verified offer fared: its first `proposed` tokens verified (the policy may cut an offer), `accepted` kept. */
  record(proposed: number, accepted: number): void;
  /** After every verify step, what the target said at each position of the batch. A proposer with it makes the decoder read the outputs past the first rejection. */
  observe?(step: VerifiedStep): void;
}

/** Free to ask (a lookup): asked every step, also when another source is chosen, so it can follow the output. */
export interface LookupProposer<O extends Offer = Offer> extends ProposerBase<O> {
  readonly asks: 'lookup';
  /** What it offers after `history`: at most maxLen tokens, or null. */
  offer(history: readonly Token[], maxLen: number): O | null;
}

/** Costs model evaluations (a draft model): asked only once the policy chose it, for the length it chose. */
export interface ModelProposer<O extends Offer = Offer> extends ProposerBase<O> {
  readonly asks: 'model';
  /**
   * What it offers after `history`: a chain of at most maxLen tokens, or null. `treeNodes` (> 0): the
   * step may verify a tree of that many nodes (a fixed verify shape the target verifies trees on), so
   * it may offer a tree holding that chain and alternatives beside it.
   */
  offer(history: readonly Token[], maxLen: number, treeNodes?: number): Promise<O | null>;
}

export type Proposer<O extends Offer = Offer> = LookupProposer<O> | ModelProposer<O>;

/** The tokens an offer verifies as a chain: a chain's own, a tree's likeliest path. */
export function offeredChain(offer: Offer): readonly Token[] {
  return offer.kind === 'chain' ? offer.tokens : offer.chain;
}

/** A chain offer of `tokens` with the fields given. */
export function chainOffer<T extends object = object>(tokens: readonly Token[], fields?: T): ChainOffer & T {
  return { kind: 'chain', tokens, ...(fields as T) };
}
