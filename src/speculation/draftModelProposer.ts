import type { Token } from '../shared/decoding';
import { syncAndPredictNext, type GreedyEvaluator } from './greedyEvaluator';
import { type AcceptanceModel, type ChainOffer, chainOffer, type ModelProposer } from './proposer';

/** The draft's source: a geometric acceptance rate from this prior, its ms per token charged by the policy. */
export const DRAFT_SOURCE = 'draft';
export const draftAcceptance = (): AcceptanceModel => ({ prior: 0.5 });

/**
 * Greedy proposals from the draft model's own long-lived sequence. Its cache follows the accepted
 * history (longest common prefix reused), so after a rejection only the correction is evaluated.
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

  async offer(history: readonly Token[], maxLen: number): Promise<ChainOffer> {
    const tokens: Token[] = [];
    if (maxLen <= 0 || history.length + maxLen >= this.draft.capacity) return chainOffer(tokens, { evaluations: 0 });
    const t0 = this.now();
    const first = await syncAndPredictNext(this.draft, history, true);
    // A call that first caught up with a whole prompt says nothing about the cost per step.
    const representative = first.evaluated <= 8;
    let evaluations = 1;
    let next = first.next;
    // Stop early when the draft itself is unsure: an unlikely guess mostly costs verify time.
    while ((next.confidence ?? 1) >= this.minConfidence) {
      tokens.push(next.token);
      if (tokens.length >= maxLen) break;
      [next] = await this.draft.append([next.token], 1, true);
      evaluations++;
    }
    return chainOffer(tokens, { evaluations, generationMs: representative ? this.now() - t0 : undefined });
  }

  record(): void {}
}
