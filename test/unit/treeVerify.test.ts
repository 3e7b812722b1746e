// Tree verification without a model: how a tree is laid out in a unified KV cache's batch
// (src/llama/treeBatch.ts), how a fixed-shape step cuts or pads an offered tree and what it tells the
// chain it stood in for (src/speculation/treeStep.ts), the policy's tree or chain choice
// (src/speculation/treeChoice.ts), and the decoder verifying trees where the evaluator can and the
// shape is fixed — its output plain greedy decoding's, token for token — and chains everywhere else.
// test/model/unifiedContext.test.ts and the lossless suite check the same on real models.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { wantsTreeVerification } from '../../src/inference/treeVerification';
import { loadNativeAddon } from '../../src/llama/nativeAddon';
import { treeBatch } from '../../src/llama/treeBatch';
import { emptySpeculationStats } from '../../src/shared/generationStats';
import { StatsCollector } from '../../src/stats/statsCollector';
import { statsReport } from '../../src/stats/statsReport';
import type { Token } from '../../src/shared/decoding';
import type { SpeculationSettings } from '../../src/shared/settings';
import { SpeculationPolicy } from '../../src/speculation/policy';
import type { Proposer, TreeOffer, VerifiedStep } from '../../src/speculation/proposer';
import { decode } from '../../src/speculation/speculativeDecoder';
import { acceptedPath, isTokenTree, type TokenTree, treeProblem, walkTree } from '../../src/speculation/tokenTree';
import { TreeChoice } from '../../src/speculation/treeChoice';
import { SuffixProposer } from '../../src/speculation/suffixProposer';
import { chainOutcome, shapeTree, treeStepAsChain } from '../../src/speculation/treeStep';
import { StopRules } from '../../src/stopping/stopRules';
import { mulberry32 } from '../../testbed/ggufWriter';
import { FAKE_EOS, FAKE_VOCAB, FakeEvaluator, FakeTreeEvaluator, fakeDetokenize, hashModel, repetitiveModel } from '../support/fakeModel';
import { loadedModels } from '../support/loadedModels';
import { TestTreeProposer } from '../support/treeProposer';

const settings = (over: Partial<SpeculationSettings> = {}): SpeculationSettings => ({
  maxProposal: 15,
  ngramMinMatch: 2,
  ngramMaxMatch: 6,
  draftMinConfidence: 0,
  adaptive: false,
  lookahead: false,
  verifyShape: 'fixed',
  fixedShapeSize: 16,
  ...over,
});

/** A tree: under the pending token a (0) and b (1); under a: c (2); under c: d (3) and e (4). */
const TREE: TokenTree = { tokens: [10, 11, 12, 13, 14], parents: [-1, -1, 0, 2, 2] };

describe('a token tree in one batch of a unified KV cache', () => {
  it('puts each node at its depth, in the path sequences of every leaf below it, the pending token in all of them and its own', () => {
    const b = treeBatch(0, [4, 5, 6, 7], 100, 9, TREE, 15);
    assert.deepEqual([...b.tokens], [9, 10, 11, 12, 13, 14]);
    assert.deepEqual([...b.positions], [100, 101, 101, 102, 103, 103]);
    // Leaves in node order: b (1), d (3), e (4) → path ids 4, 5, 6.
    assert.deepEqual(b.paths, [4, 5, 6]);
    const ids: number[][] = [];
    let at = 0;
    for (const count of b.seqCounts) {
      ids.push([...b.seqIds.subarray(at, at + count)]);
      at += count;
    }
    assert.deepEqual(ids, [[0, 4, 5, 6], [5, 6], [4], [5, 6], [5], [6]]);
    assert.deepEqual(b.pathOf, [5, 4, 5, 5, 6]);
    assert.equal(b.depth, 3);
    assert.ok(b.outputs.every((o) => o === 1));
  });

  it('walks from the target’s own tokens: the child it would write, until none is', () => {
    const b = treeBatch(0, [1, 2, 3], 0, 9, TREE, 15);
    // Batch index i + 1 is node i: after the pending token 10 (a), after a 12 (c), after c 14 (e), after e 99.
    const predictions = [10, 12, 55, 14, 77, 99];
    assert.deepEqual(
      walkTree(TREE, b.children, (i) => predictions[i]!),
      { path: [0, 2, 4], next: 99 },
    );
    assert.deepEqual(
      walkTree(TREE, b.children, () => 50),
      { path: [], next: 50 },
    );
    // The same path acceptedPath finds knowing the truth.
    assert.deepEqual(acceptedPath(TREE, [10, 12, 14, 99], 0), [0, 2, 4]);
  });

  it('refuses, with the reason, a tree with duplicate siblings, a parent after its child, more nodes than the batch or more leaves than path sequences', () => {
    assert.match(treeProblem({ tokens: [5, 5], parents: [-1, -1] }, 15)!, /repeats token 5 of a sibling/);
    assert.match(treeProblem({ tokens: [5, 6], parents: [1, -1] }, 15)!, /does not come before it/);
    assert.match(treeProblem({ tokens: [5, 6], parents: [-1, 2] }, 15)!, /does not come before it/);
    assert.match(treeProblem({ tokens: [1, 2, 3, 4], parents: [-1, 0, 1, 2] }, 3)!, /4 nodes: more than the 3/);
    assert.match(treeProblem({ tokens: [1, 2], parents: [-1] }, 3)!, /a parent per node/);
    assert.match(treeProblem({ tokens: [1, -2], parents: [-1, 0] }, 3)!, /no valid token/);
    assert.equal(treeProblem(TREE, 5), null);
    assert.throws(() => treeBatch(0, [1, 2], 0, 9, TREE, 15), /3 leaves, more than the 2 path sequences/);
    assert.throws(() => treeBatch(0, [1, 2, 3], 0, 9, { tokens: [5, 5], parents: [-1, -1] }, 15), /cannot verify the tree: .*sibling/);
  });
});

describe('a fixed-shape step of a tree offer', () => {
  const offer = (tree: TokenTree, chain: Token[]): TreeOffer => ({ kind: 'tree', tree, chain });

  it('keeps the first nodes of a larger tree (a tree still), and pads a smaller one below the end of its likeliest path', () => {
    const cut = shapeTree(offer(TREE, [10, 12, 13]), 3, 9);
    assert.deepEqual(cut, { tree: { tokens: [10, 11, 12], parents: [-1, -1, 0] }, offered: 3 });
    const padded = shapeTree(offer(TREE, [10, 12, 13]), 8, 9);
    assert.equal(padded.offered, 5);
    assert.deepEqual(padded.tree.tokens, [10, 11, 12, 13, 14, 13, 13, 13]);
    assert.deepEqual(padded.tree.parents, [-1, -1, 0, 2, 2, 3, 5, 6]);
    assert.ok(isTokenTree(padded.tree));
    // The chain ends inside the tree (at c, which has children): the padding goes below its first leaf.
    assert.deepEqual(shapeTree(offer(TREE, [10, 12]), 6, 9).tree.parents.slice(5), [3]);
    // Nothing on offer: the pending token repeated, as a chain's padding.
    assert.deepEqual(shapeTree(offer({ tokens: [], parents: [] }, []), 3, 9).tree, { tokens: [9, 9, 9], parents: [-1, 0, 1] });
  });

  it('knows what the likeliest chain would have kept, and shows observers a root path with the target’s token after each position', () => {
    assert.deepEqual(chainOutcome([10, 12, 13], [10, 12, 14], 99), { proposed: 3, accepted: 2 });
    assert.deepEqual(chainOutcome([11], [10], 5), { proposed: 1, accepted: 0 });
    assert.deepEqual(chainOutcome([10, 12], [10], 12), { proposed: 2, accepted: 2 });
    // The chain goes on past what the step could check: verified only as far as it agreed.
    assert.deepEqual(chainOutcome([10, 12, 13, 15], [10], 12), { proposed: 2, accepted: 2 });
    const step = treeStepAsChain([1, 2, 9], TREE, [0], [10, 12, 70, 13, 80, 90]);
    // Accepted a (0), then on through a's first child c (2) and c's first child d (3).
    assert.deepEqual(step.guesses, [10, 12, 13]);
    assert.deepEqual(step.predictions, [10, 12, 13, 80]);
    assert.equal(step.accepted, 1);
  });
});

describe('a scored tree that leaves out deep nodes of its own chain', () => {
  it('tells its source no miss the step did not verify', () => {
    // After the match: 1 2 3 4 twice over (through 3, 4 and 3, 5), 6 once, 7 once. Three nodes hold
    // 1 and its likelier siblings 6 and 7, not the chain's 2 and 3.
    const proposer = new SuffixProposer(() => ({ matchLength: 1, continuations: [[1, 2, 3, 4], [1, 2, 3, 5], [6], [7]] }));
    const offer = proposer.offer([9], 3)!;
    assert.deepEqual(offer.chain, [1, 2, 3]);
    const shaped = shapeTree(offer, 3, 9);
    assert.deepEqual([...shaped.tree.tokens].sort(), [1, 6, 7]);
    // The target writes 1 2 3 4: the tree keeps 1, and the target's own token after it is 2.
    const accepted = acceptedPath(shaped.tree, [1, 2, 3, 4], 0).map((node) => shaped.tree.tokens[node]!);
    assert.deepEqual(accepted, [1]);
    // The chain's 2 agrees; its 3 was never verified, so the source hears of two tokens kept, not a miss at the third.
    assert.deepEqual(chainOutcome(offer.chain, accepted, 2), { proposed: 2, accepted: 2 });
  });
});

describe('tree or chain, per source (the policy on a fixed shape)', () => {
  it('verifies a tree until it was measured, then whichever keeps more tokens per step over its cost, trying trees again now and then', () => {
    const choice = new TreeChoice();
    assert.equal(choice.prefersTree('s', 16), true);
    for (let i = 0; i < 20; i++) choice.recordTree('s', 3, 1);
    assert.equal(choice.prefersTree('s', 16), true);
    // A tree step that costs twice a chain step's, for 4 tokens against 2: even.
    for (let i = 0; i < 30; i++) {
      choice.recordStepMs('tree', 16, 20);
      choice.recordStepMs('chain', 16, 10);
    }
    assert.ok(Math.abs(choice.costRatio(16) - 2) < 1e-9);
    assert.equal(choice.prefersTree('s', 16), true);
    for (let i = 0; i < 40; i++) choice.recordTree('s', 1, 1);
    let trees = 0;
    for (let i = 0; i < 64; i++) if (choice.prefersTree('s', 16)) trees++;
    assert.ok(trees > 0 && trees < 16, `${trees} of 64 steps tried a tree`);
    assert.deepEqual(Object.keys(choice.snapshot(16)), ['s']);
    assert.equal(choice.snapshot(16).s!.verifies, 'chain');
  });

  it('never with variable shapes', () => {
    assert.equal(new SpeculationPolicy(settings({ verifyShape: 'variable' })).verifiesTree('s', 16), false);
    assert.equal(new SpeculationPolicy(settings()).verifiesTree('s', 16), true);
    assert.equal(new SpeculationPolicy(settings()).verifiesTree('s', 1), false);
  });
});

describe('the decoder with tree offers', () => {
  const models = [hashModel(3, FAKE_VOCAB - 1, 2), repetitiveModel(5, 3), repetitiveModel(11, 6)];
  const prompts = (rand: () => number) => Array.from({ length: 12 }, () => Array.from({ length: 8 + Math.floor(rand() * 20) }, () => Math.floor(rand() * (FAKE_VOCAB - 1))));
  const stop = () => new StopRules({ detokenize: fakeDetokenize, isEndToken: (t) => t === FAKE_EOS, maxTokens: 60 });
  const plainOf = async (model: (h: readonly Token[]) => Token, prompt: Token[]) => {
    const s = stop();
    await decode({ mode: 'plain', target: new FakeEvaluator(model), prompt, stop: s, policy: new SpeculationPolicy(settings()) });
    return [...s.tokens];
  };
  const run = async (target: FakeEvaluator, proposer: Proposer, prompt: Token[], over: Partial<SpeculationSettings> = {}) => {
    const s = stop();
    const stats = await decode({ mode: 'hybrid', target, prompt, stop: s, policy: new SpeculationPolicy(settings(over)), proposers: [proposer] });
    return { tokens: [...s.tokens], stats, cache: [...target.tokens] };
  };

  it('verifies trees on a fixed shape where the evaluator can, equal to plain greedy decoding, in fewer evaluations than their chains', async () => {
    const rand = mulberry32(21);
    const pool = Array.from({ length: FAKE_VOCAB - 1 }, (_, i) => i);
    let treeEvaluations = 0;
    let chainEvaluations = 0;
    let treeSteps = 0;
    for (const model of models) {
      for (const prompt of prompts(rand)) {
        const plain = await plainOf(model, prompt);
        const truth = [...prompt, ...plain];
        const tree = await run(new FakeTreeEvaluator(model), new TestTreeProposer(truth, pool, mulberry32(prompt.length)), prompt);
        assert.deepEqual(tree.tokens, plain);
        // The cache holds exactly the history: nothing of a rejected branch.
        assert.deepEqual(tree.cache, [...prompt, ...plain].slice(0, tree.cache.length));
        const chain = await run(new FakeEvaluator(model), new TestTreeProposer(truth, pool, mulberry32(prompt.length)), prompt);
        assert.deepEqual(chain.tokens, plain);
        assert.equal(chain.stats.speculation.treeSteps, undefined);
        treeEvaluations += tree.stats.speculation.targetEvaluations;
        chainEvaluations += chain.stats.speculation.targetEvaluations;
        treeSteps += tree.stats.speculation.treeSteps ?? 0;
        const s = tree.stats.speculation.bySource['test-trees']!;
        assert.equal(s.treeSteps, tree.stats.speculation.treeSteps);
        assert.ok(s.treeAccepted! <= s.treeNodes! && s.acceptedTokens <= s.proposedTokens);
        // Every step a batch of 16: the shape never changes.
        assert.equal(tree.stats.speculation.batchShapes, 1);
      }
    }
    assert.ok(treeSteps > 100, `${treeSteps} tree steps`);
    assert.ok(treeEvaluations < chainEvaluations * 0.9, `trees ${treeEvaluations} evaluations, chains ${chainEvaluations}`);
  });

  it('verifies chains with variable shapes (a CPU), and where the evaluator has no verifyTree', async () => {
    const model = models[1]!;
    const prompt = [1, 2, 3, 4, 5, 6, 7, 8];
    const plain = await plainOf(model, prompt);
    const pool = [1, 2, 3, 4, 5, 6, 7, 8, 9];
    const variable = await run(new FakeTreeEvaluator(model), new TestTreeProposer([...prompt, ...plain], pool, mulberry32(1)), prompt, { verifyShape: 'variable' });
    assert.deepEqual(variable.tokens, plain);
    assert.equal(variable.stats.speculation.treeSteps, undefined);
    assert.ok(variable.stats.speculation.bySource['test-trees']!.steps > 0);
  });

  it('shows proposers that learn from every output a root path of the tree with the target’s token after each position', async () => {
    const model = models[0]!;
    const prompt = [3, 1, 4, 1, 5, 9, 2, 6];
    const plain = await plainOf(model, prompt);
    const pool = Array.from({ length: 20 }, (_, i) => i);
    const steps: VerifiedStep[] = [];
    const trees = new TestTreeProposer([...prompt, ...plain], pool, mulberry32(7));
    const observing: Proposer = Object.assign(Object.create(trees) as TestTreeProposer, { observe: (step: VerifiedStep) => steps.push({ ...step, history: [...step.history] }) });
    const result = await run(new FakeTreeEvaluator(model), observing, prompt);
    assert.deepEqual(result.tokens, plain);
    assert.ok(steps.length > 5);
    for (const step of steps) {
      const h = [...step.history];
      step.guesses.forEach((guess, i) => {
        assert.equal(step.predictions[i], model(h), 'the target’s token after each position of the path');
        h.push(guess);
      });
      for (let i = 0; i < step.accepted; i++) assert.equal(step.guesses[i], step.predictions[i]);
    }
  });
});

describe('where the target verifies trees, and what Show Stats says of them', () => {
  it("'auto' only where the target computes on CUDA with layers on the GPU and the addon runs; 'on' wherever the addon runs; 'off' never", () => {
    const addon = 'addon' in loadNativeAddon();
    assert.deepEqual(wantsTreeVerification('off', 'cuda', 28, true), { used: false, reason: 'off' });
    assert.equal(wantsTreeVerification('auto', 'cuda', 28, true).used, addon);
    assert.equal(wantsTreeVerification(undefined, 'cuda', 28, true).used, addon);
    assert.equal(wantsTreeVerification('on', false, 0, true).used, addon);
    // One KV stream costs every step attention over the other sequences' cells: 'auto' waits for a proposer that offers trees.
    const idle = wantsTreeVerification('auto', 'cuda', 28, false);
    assert.equal(idle.used, false);
    if (addon) assert.match((idle as { reason: string }).reason, /no tree proposer is on/);
    assert.equal(wantsTreeVerification('on', 'cuda', 28, false).used, addon);
    // Where the backend rules trees out, that is the reason given, whatever the proposers.
    if (addon) assert.match((wantsTreeVerification('auto', false, 0, false) as { reason: string }).reason, /^the target computes on the CPU/);
    for (const [gpu, layers] of [
      [false, 0],
      ['vulkan', 12],
      ['cuda', 0],
      ['metal', 30],
    ] as const) {
      const state = wantsTreeVerification('auto', gpu, layers, true);
      assert.equal(state.used, false);
      if (addon) assert.match((state as { reason: string }).reason, /^the target computes on .*chains are verified$/);
    }
  });

  it('Show Stats: whether trees are verified and why not, the trees of each source, and tree against chain in the policy', () => {
    const stats = new StatsCollector();
    const speculation = emptySpeculationStats('hybrid', ['test-trees']);
    Object.assign(speculation, { targetEvaluations: 5, treeSteps: 4 });
    speculation.bySource['test-trees'] = { steps: 4, proposedTokens: 60, acceptedTokens: 18, treeSteps: 4, treeNodes: 60, treeAccepted: 18 };
    speculation.policy = {
      verifyMs: {},
      proposeMsPerToken: {},
      acceptance: {},
      bestLength: {},
      retryInterval: {},
      verifyShape: { mode: 'fixed', size: 16 },
      trees: { 'test-trees': { tree: 5.5, chain: 3.25, verifies: 'tree' } },
    };
    const result = { promptTokens: 10, reusedPromptTokens: 0, generatedTokens: 22, promptMs: 1, timeToFirstTokenMs: 1, totalMs: 10, stopReason: 'maxTokens' as const, speculation };
    stats.record({ at: Date.now(), latencyMs: 10, fromCache: false, chars: 22, stats: result });
    const used = statsReport(stats, 'hybrid', { kind: 'local', model: 't', local: loadedModels({ treeVerification: { used: true } }) });
    assert.match(used, /Token trees: verified in one batch where verify batches have a fixed shape/);
    assert.match(used, /acceptance test-trees \| .*\(18\/60 in 4 proposals; 4 of them token trees, 18\/60 nodes kept\)/);
    assert.match(used, /test-trees: tree vs chain \| 5\.50 vs 3\.25 tokens a step: its tree is verified/);
    const not = statsReport(stats, 'hybrid', { kind: 'local', model: 't', local: loadedModels({ treeVerification: { used: false, reason: 'the target computes on the CPU' } }) });
    assert.match(not, /Token trees: chains only: the target computes on the CPU/);
  });
});
