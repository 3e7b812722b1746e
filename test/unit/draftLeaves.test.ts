// The draft's chain with leaves (speculation/draftModelProposer.ts): where a step may verify a tree,
// the draft's next likeliest tokens at each drafted depth fill the batch beside its chain, read from
// the distributions the chain's own evaluations computed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Token } from '../../src/shared/decoding';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import { DRAFT_TREE_TOP, DraftModelProposer } from '../../src/speculation/draftModelProposer';
import type { RankedNext } from '../../src/speculation/greedyEvaluator';
import { SpeculationPolicy } from '../../src/speculation/policy';
import { offeredChain, type TreeOffer } from '../../src/speculation/proposer';
import { decode } from '../../src/speculation/speculativeDecoder';
import { isTokenTree, nodeDepths } from '../../src/speculation/tokenTree';
import { StopRules } from '../../src/stopping/stopRules';
import { FAKE_EOS, FAKE_VOCAB, FakeEvaluator, FakeTreeEvaluator, fakeDetokenize, hashModel } from '../support/fakeModel';

/** The ranked tokens after a history: distinct, the first the greedy one, with falling probabilities. */
type Ranking = (history: readonly Token[]) => { tokens: Token[]; probabilities: number[] };

/** A draft whose distribution after each history is `ranking`'s: append gives its greedy token and probability, appendRanked the ranks. */
class RankedDraft extends FakeEvaluator {
  rankedReads = 0;

  constructor(private readonly ranking: Ranking) {
    super(
      (h) => ranking(h).tokens[0]!,
      4096,
      (h) => ranking(h).probabilities[0]!,
    );
  }

  async appendRanked(input: readonly Token[], outputs: number, top: number, withProbabilities = false): Promise<RankedNext[]> {
    const greedy = await this.append(input, outputs);
    this.rankedReads += greedy.length;
    const first = this.cached.length - outputs;
    return greedy.map((_, j) => {
      const r = this.ranking(this.cached.slice(0, first + j + 1));
      const tokens = r.tokens.slice(0, top);
      const probabilities = r.probabilities.slice(0, top);
      return { tokens, margin: Math.log(probabilities[0]! / probabilities[1]!), ...(withProbabilities ? { probabilities } : {}) };
    });
  }
}

/** Ranks the target's token first or second (as a hash of the history decides), then two others; the first rank's probability varies too. */
function rankingAround(target: (h: readonly Token[]) => Token, seed: number): Ranking {
  const pick = hashModel(seed, 1000, 2);
  return (h) => {
    const truth = target(h);
    const roll = pick(h);
    const others = [1, 2, 3].map((k) => (truth + k * 7) % (FAKE_VOCAB - 1));
    const tokens = roll < 300 ? [others[0]!, truth, others[1]!, others[2]!] : [truth, others[0]!, others[1]!, others[2]!];
    const top = roll < 100 ? 0.3 : 0.55 + (roll % 400) / 1000;
    const rest = 1 - top;
    return { tokens, probabilities: [top, rest * 0.6, rest * 0.25, rest * 0.1] };
  };
}

const target = hashModel(17, FAKE_VOCAB - 1, 2);

describe('the draft chain with leaves', () => {
  it('offers its chain unchanged, and where a tree has room the ranked tokens at each depth as leaves, likeliest first', async () => {
    const ranking = rankingAround(target, 5);
    for (const history of [
      [1, 2, 3, 4],
      [9, 8, 7, 6, 5],
      [40, 41, 2, 13, 5, 6],
    ]) {
      const chainOnly = await new DraftModelProposer(new RankedDraft(ranking), 0.5).offer(history, 6);
      assert.equal(chainOnly.kind, 'chain');
      const offer = (await new DraftModelProposer(new RankedDraft(ranking), 0.5).offer(history, 6, 15)) as TreeOffer;
      assert.equal(offer.kind, 'tree');
      assert.deepEqual(offer.chain, offeredChain(chainOnly));
      const { tree } = offer;
      assert.ok(isTokenTree(tree) && tree.tokens.length <= 15 && tree.tokens.length > offer.chain.length);
      // The chain first, each under the one before.
      offer.chain.forEach((token, i) => {
        assert.equal(tree.tokens[i], token);
        assert.equal(tree.parents[i], i - 1);
      });
      // Every leaf: a ranked token at its depth other than the chain's, scored by the chain's chance up to it times its own.
      const depths = nodeDepths(tree);
      const scores: number[] = [];
      for (let i = offer.chain.length; i < tree.tokens.length; i++) {
        const parent = tree.parents[i]!;
        assert.ok(parent < offer.chain.length, 'a leaf hangs under the chain');
        const before = [...history, ...offer.chain.slice(0, depths[i]! - 1)];
        const r = ranking(before);
        const rank = r.tokens.indexOf(tree.tokens[i]!);
        assert.ok(rank >= 0 && rank < DRAFT_TREE_TOP && tree.tokens[i] !== offer.chain[depths[i]! - 1]);
        let reach = 1;
        for (let d = 0; d < depths[i]! - 1; d++) reach *= ranking([...history, ...offer.chain.slice(0, d)]).probabilities[0]!;
        scores.push(reach * r.probabilities[rank]!);
      }
      for (let i = 1; i < scores.length; i++) assert.ok(scores[i - 1]! >= scores[i]!, `leaves likeliest first: ${scores}`);
      // Where the chain stopped unsure, its greedy token there is a leaf.
      if (offer.chain.length < 6) {
        const stopped = ranking([...history, ...offer.chain]).tokens[0]!;
        const at = tree.tokens.findIndex((t, i) => i >= offer.chain.length && t === stopped && tree.parents[i] === offer.chain.length - 1);
        assert.ok(at >= 0 || tree.tokens.length === 15, 'the unsure greedy token is a leaf (unless the room ran out)');
      }
    }
  });

  it('stays a chain where no tree can be verified, or where the draft cannot rank; a tree never outgrows its room', async () => {
    const ranking = rankingAround(target, 9);
    assert.equal((await new DraftModelProposer(new RankedDraft(ranking), 0.5).offer([1, 2, 3], 6)).kind, 'chain');
    assert.equal((await new DraftModelProposer(new RankedDraft(ranking), 0.5).offer([1, 2, 3], 6, 1)).kind, 'chain');
    const plainDraft = new FakeEvaluator((h) => ranking(h).tokens[0]!);
    assert.equal((await new DraftModelProposer(plainDraft, 0.5).offer([1, 2, 3], 6, 15)).kind, 'chain');
    // A sure draft fills the room with its chain: nothing beside it.
    const sure: Ranking = (h) => ({ tokens: [target(h), 1, 2, 3].filter((t, i, a) => a.indexOf(t) === i), probabilities: [0.97, 0.01, 0.01, 0.01] });
    const full = (await new DraftModelProposer(new RankedDraft(sure), 0.5).offer([1, 2, 3], 7, 7)) as TreeOffer;
    assert.equal(full.chain.length, 7);
    assert.deepEqual(full.tree.tokens, full.chain);
    for (const room of [3, 6, 9]) {
      const offer = (await new DraftModelProposer(new RankedDraft(ranking), 0.5).offer([5, 6, 7], 8, room)) as TreeOffer;
      assert.ok(offer.tree.tokens.length <= Math.max(room, offer.chain.length), `room ${room}: ${offer.tree.tokens.length} nodes`);
    }
  });

  it('on a fixed shape where the target verifies trees: equal to plain greedy decoding, the leaves verified, in fewer target evaluations than the chain', async () => {
    const stop = () => new StopRules({ detokenize: fakeDetokenize, isEndToken: (t) => t === FAKE_EOS, maxTokens: 60 });
    const settings = { ...DEFAULT_SPECULATION, adaptive: false, verifyShape: 'fixed' as const, fixedShapeSize: 16, maxProposal: 8 };
    const totals = { tree: 0, chain: 0, treeSteps: 0 };
    for (let seed = 1; seed <= 8; seed++) {
      const prompt = Array.from({ length: 10 }, (_, i) => (seed * 13 + i * 5) % (FAKE_VOCAB - 1));
      const plain = stop();
      await decode({ mode: 'plain', target: new FakeEvaluator(target), prompt, stop: plain, policy: new SpeculationPolicy(settings) });
      const run = async (treeTarget: boolean) => {
        const s = stop();
        const draft = new RankedDraft(rankingAround(target, seed));
        const stats = await decode({
          mode: 'draft',
          target: treeTarget ? new FakeTreeEvaluator(target) : new FakeEvaluator(target),
          prompt,
          stop: s,
          policy: new SpeculationPolicy(settings),
          proposers: [new DraftModelProposer(draft, 0.5)],
        });
        assert.deepEqual(s.tokens, plain.tokens, `seed ${seed}, ${treeTarget ? 'tree' : 'chain'}`);
        return stats.speculation;
      };
      const tree = await run(true);
      const chain = await run(false);
      totals.tree += tree.targetEvaluations;
      totals.chain += chain.targetEvaluations;
      totals.treeSteps += tree.treeSteps ?? 0;
      assert.equal(chain.treeSteps, undefined);
    }
    assert.ok(totals.treeSteps > 20, JSON.stringify(totals));
    // The same chains either way: the leaves alone make the difference.
    assert.ok(totals.tree < totals.chain * 0.9, JSON.stringify(totals));
  });
});
