import type { Token } from '../shared/decoding';
import { type EvaluatedNext, type GreedyEvaluator, type RankedNext, syncAndPredictNext, syncAndRankNext } from './greedyEvaluator';
import { type AcceptanceModel, type ChainOffer, chainOffer, type ModelProposer, type TreeOffer } from './proposer';
import type { TokenTree } from './tokenTree';

/** The draft's source: a geometric acceptance rate from this prior, its ms per token charged by the policy. */
export const DRAFT_SOURCE = 'draft';
export const draftAcceptance = (): AcceptanceModel => ({ prior: 0.5 });

/**
 * Tokens the draft's distribution is read for at each drafted position when its chain may be verified
 * as a tree: its greedy token and the next ones, the leaves (docs/BENCHMARK.md, "Token trees").
 */
export const DRAFT_TREE_TOP = 4;

/**
 * Greedy proposals from the draft model's own long-lived sequence. Its cache follows the accepted
 * history (longest common prefix reused), so after a rejection only the correction is evaluated.
 *
 * Where the step may verify a tree (`treeNodes` > 1: the room of a fixed verify shape that the
 * target verifies trees on), the chain comes with leaves: at each depth, the draft's next most likely
 * tokens after its greedy one, read from the distributions the chain's own evaluations computed (no
 * draft evaluation more). The batch's room beyond the chain, padding otherwise, then holds the
 * likeliest alternatives to each drafted token; a leaf the target agrees with adds one token to the
 * step.
 */
export class DraftModelProposer implements ModelProposer {
  readonly id = DRAFT_SOURCE;
  readonly asks = 'model';
  readonly acceptanceModel = draftAcceptance;

  constructor(
    private readonly draft: GreedyEvaluator,
    private readonly minConfidence: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  async offer(history: readonly Token[], maxLen: number, treeNodes = 0): Promise<ChainOffer | TreeOffer> {
    const tokens: Token[] = [];
    if (maxLen <= 0 || history.length + maxLen >= this.draft.capacity) return chainOffer(tokens, { evaluations: 0 });
    const t0 = this.now();
    // Leaves fill the room the chain leaves: where it stops short of the batch (unsure, or asked for fewer).
    const ranked = treeNodes > 1 && this.draft.appendRanked ? new DraftLeaves(this.draft) : null;
    const first = ranked ? await ranked.sync(history) : await syncAndPredictNext(this.draft, history, true);
    // A call that first caught up with a whole prompt says nothing about the cost per step.
    const representative = first.evaluated <= 8;
    let evaluations = 1;
    let next: EvaluatedNext | null = first.next;
    // Stop early when the draft itself is unsure: an unlikely guess mostly costs verify time.
    while (next && (next.confidence ?? 1) >= this.minConfidence) {
      tokens.push(next.token);
      if (tokens.length >= maxLen) break;
      next = ranked ? await ranked.append(next.token) : (await this.draft.append([next.token], 1, true))[0]!;
      evaluations++;
    }
    const fields = { evaluations, generationMs: representative ? this.now() - t0 : undefined };
    if (!ranked) return chainOffer(tokens, fields);
    return { kind: 'tree', tree: ranked.tree(tokens, treeNodes), chain: tokens, ...fields };
  }

  record(): void {}
}

/** The draft's distributions at each depth of a chain being drafted, and the tree of its leaves. */
class DraftLeaves {
  /** Index d: the draft's ranked tokens and their probabilities after d tokens of the chain. */
  private readonly depths: { tokens: Token[]; probabilities: number[] }[] = [];

  constructor(private readonly draft: GreedyEvaluator) {}

  /** As syncAndPredictNext, the next token ranked. */
  async sync(history: readonly Token[]): Promise<{ next: EvaluatedNext | null; evaluated: number }> {
    const { next, evaluated } = await syncAndRankNext(this.draft, history, DRAFT_TREE_TOP);
    return { next: this.keep(next), evaluated };
  }

  /** The drafted `token` evaluated, the next one ranked. */
  async append(token: Token): Promise<EvaluatedNext | null> {
    const [next] = await this.draft.appendRanked!([token], 1, DRAFT_TREE_TOP, true);
    return this.keep(next!);
  }

  /**
   * A depth's distribution kept; its greedy token with its probability, as the chain reads it (none: a
   * row with no token read, where drafting stops).
   */
  private keep(ranked: RankedNext): EvaluatedNext | null {
    if (ranked.tokens.length === 0) return null;
    const probabilities = ranked.probabilities ?? [];
    this.depths.push({ tokens: ranked.tokens, probabilities });
    return probabilities.length > 0 ? { token: ranked.tokens[0]!, confidence: probabilities[0]! } : { token: ranked.tokens[0]! };
  }

  /** The chain and its leaves, `nodes` nodes in all (chainWithLeaves). */
  tree(chain: readonly Token[], nodes: number): TokenTree {
    return chainWithLeaves(chain, this.depths, nodes);
  }
}

/**
 * The chain, then leaves up to `nodes` nodes in all: at depth d (under chain node d − 1, the root at
 * d = 0) the draft's ranked tokens there (`depths[d]`, the greedy first) other than the chain's, each
 * scored by the chance of the chain up to it times its own probability, the likeliest first. Where the
 * chain stopped unsure (a distribution at depth chain.length), its greedy token there is a leaf too.
 */
export function chainWithLeaves(chain: readonly Token[], depths: readonly { tokens: readonly Token[]; probabilities: readonly number[] }[], nodes: number): TokenTree {
  const tree: TokenTree = { tokens: [...chain], parents: chain.map((_, i) => i - 1) };
  const leaves: { parent: number; token: Token; score: number }[] = [];
  let reach = 1;
  for (let d = 0; d < depths.length && d <= chain.length; d++) {
    const { tokens, probabilities } = depths[d]!;
    for (let r = 0; r < tokens.length; r++) if (tokens[r] !== chain[d]) leaves.push({ parent: d - 1, token: tokens[r]!, score: reach * (probabilities[r] ?? 0) });
    reach *= probabilities[0] ?? 0;
  }
  leaves.sort((a, b) => b.score - a.score);
  for (const leaf of leaves.slice(0, Math.max(0, nodes - chain.length))) {
    tree.tokens.push(leaf.token);
    tree.parents.push(leaf.parent);
  }
  return tree;
}
