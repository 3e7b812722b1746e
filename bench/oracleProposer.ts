import type { Token } from '../src/shared/decoding';
import { draftAcceptance, DRAFT_SOURCE } from '../src/speculation/draftModelProposer';
import { type ChainOffer, chainOffer, type ModelProposer } from '../src/speculation/proposer';
import { mulberry32 } from '../testbed/ggufWriter';

/**
 * A proposer of controlled accuracy: the target's own plain output (the oracle), each proposed token
 * replaced by a wrong one with probability 1 - a. Costs nothing, so it isolates the verify side.
 */
export class OracleProposer implements ModelProposer {
  readonly id = DRAFT_SOURCE;
  readonly asks = 'model';
  readonly acceptanceModel = draftAcceptance;
  private readonly rand: () => number;

  constructor(
    private readonly promptLength: number,
    private readonly oracle: readonly Token[],
    private readonly accuracy: number,
    private readonly vocabSize: number,
    seed: number,
  ) {
    this.rand = mulberry32(seed);
  }

  async offer(history: readonly Token[], maxLen: number): Promise<ChainOffer> {
    const at = history.length - this.promptLength;
    const tokens = this.oracle.slice(at, at + maxLen).map((t) => (this.rand() < this.accuracy ? t : (t + 1 + Math.floor(this.rand() * (this.vocabSize - 1))) % this.vocabSize));
    return chainOffer(tokens, { evaluations: 0, generationMs: 0 });
  }

  record(): void {}
}
