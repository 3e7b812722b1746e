// The tree lab's pure parts (bench/tokenTree.ts, bench/treeReplay.ts, bench/treeSources.ts): the
// path greedy verification accepts in a tree, the scored trie and its best nodes, continuations
// merged by frequency, suffix matches, EAGLE-2's expansion on a made-up distribution, and the
// counting of a replayed generation.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CopyAcceptance } from '../../../src/speculation/copyAcceptance';
import { WindowCopyProposer } from '../../../src/speculation/windowCopyProposer';
import { mulberry32 } from '../../../testbed/ggufWriter';
import { acceptedPath, acceptTree, addContinuations, chainTree, draftTreePrefix, eagleTree, expansionLevels, isTokenTree, nodeDepths, ScoredTrie, type TokenTree, type TopK } from '../../tokenTree';
import { h100VerifyCost } from '../../editReplay';
import { type CostTable, interpolatedRatio, monotoneCurve, type ReplaySource, replayGeneration } from '../../treeReplay';
import { SuffixProposer } from '../../../src/speculation/suffixProposer';
import { shapeTree } from '../../../src/speculation/treeStep';
import { candidateBound, CopySource, draftChain, resyncContinuations, SuffixTreeSource } from '../../treeSources';

describe('tree acceptance walk', () => {
  // root ─ 1 ─ 2 ─ 3
  //      │   └ 4 ─ 5
  //      └ 6
  const tree: TokenTree = { tokens: [1, 2, 6, 3, 4, 5], parents: [-1, 0, -1, 1, 0, 4] };

  it('accepts the longest root path equal to the output, wherever the branch sits', () => {
    assert.ok(isTokenTree(tree));
    assert.deepEqual(acceptedPath(tree, [9, 1, 4, 5, 7], 1), [0, 4, 5]);
    assert.equal(acceptTree(tree, [1, 2, 3, 8], 0), 3);
    assert.equal(acceptTree(tree, [6, 2], 0), 1);
    assert.equal(acceptTree(tree, [7, 1], 0), 0);
  });

  it('stops at the end of the output, and an empty tree accepts nothing', () => {
    assert.equal(acceptTree(tree, [1, 4], 0), 2);
    assert.equal(acceptTree(tree, [1], 1), 0);
    assert.equal(acceptTree({ tokens: [], parents: [] }, [1, 2], 0), 0);
  });

  it('a chain accepts its longest prefix equal to the output', () => {
    assert.equal(acceptTree(chainTree([5, 6, 7, 8]), [5, 6, 9, 8], 0), 2);
    assert.deepEqual(nodeDepths(chainTree([5, 6, 7])), [1, 2, 3]);
  });

  it('tells malformed trees: a parent after its child, two siblings with one token', () => {
    assert.equal(isTokenTree({ tokens: [1, 2], parents: [1, -1] }), false);
    assert.equal(isTokenTree({ tokens: [1, 1], parents: [-1, -1] }), false);
    assert.equal(isTokenTree({ tokens: [1, 1], parents: [-1, 0] }), true);
  });
});

describe('scored trie', () => {
  it('merges paths, keeps the higher score of a node, and takes the best nodes a parent before its child', () => {
    const trie = new ScoredTrie();
    trie.addPath([1, 2, 3], [0.9, 0.5, 0.4]);
    trie.addPath([1, 4], [0.2, 0.6]);
    trie.addPath([7], [0.7]);
    assert.equal(trie.size, 5);
    assert.equal(trie.scores[trie.find([1])!], 0.9);
    // Best-first: 1 (0.9), 7 (0.7), then 1→4 (0.6) before 1→2 (0.5): a child may outscore its sibling's subtree.
    const { tree, from } = trie.best(4);
    assert.deepEqual(tree.tokens, [1, 7, 4, 2]);
    assert.deepEqual(tree.parents, [-1, -1, 0, 0]);
    assert.ok(isTokenTree(tree));
    assert.deepEqual(
      from.map((i) => trie.tokens[i]),
      [1, 7, 4, 2],
    );
  });

  it('a child outscoring its parent still comes after it; ties go to the shallower node', () => {
    const trie = new ScoredTrie();
    trie.addPath([1, 2], [0.1, 0.9]);
    trie.addPath([3, 4], [0.5, 0.5]);
    trie.addPath([5], [0.5]);
    assert.deepEqual(trie.best(5).tree.tokens, [3, 5, 4, 1, 2]);
    assert.deepEqual(trie.best(2).tree.tokens, [3, 5]);
  });
});

describe('continuations merged by frequency', () => {
  it("a node's score is its share of the continuations' weight, times scale and decay per token", () => {
    const trie = new ScoredTrie();
    addContinuations(
      trie,
      [
        { tokens: [1, 2], weight: 1 },
        { tokens: [1, 2], weight: 1 },
        { tokens: [1, 3], weight: 2 },
        { tokens: [4], weight: 4 },
      ],
      { scale: 0.5, decay: 0.8 },
    );
    const score = (path: number[]) => trie.scores[trie.find(path)!]!;
    assert.ok(Math.abs(score([1]) - 0.5 * 0.8 * 0.5) < 1e-12);
    assert.ok(Math.abs(score([1, 2]) - 0.5 * 0.64 * 0.25) < 1e-12);
    assert.ok(Math.abs(score([1, 3]) - 0.5 * 0.64 * 0.25) < 1e-12);
    assert.ok(Math.abs(score([4]) - 0.5 * 0.8 * 0.5) < 1e-12);
  });

  it('continuations go under the given parent', () => {
    const trie = new ScoredTrie();
    const [, at] = trie.addPath([1, 2], [1, 1]);
    addContinuations(trie, [{ tokens: [9], weight: 1 }], { parent: at });
    assert.notEqual(trie.find([1, 2, 9]), undefined);
  });
});

/** A made-up draft: at each path, k tokens with probabilities drawn from the path's own seed. */
function fakeDraft(k: number): (path: readonly number[]) => TopK {
  return (path) => {
    const rand = mulberry32(path.reduce((h, t) => (h * 31 + t + 7) >>> 0, 17));
    const raw = Array.from({ length: k }, () => rand() ** 2);
    const total = raw.reduce((a, b) => a + b, 0) * 1.25;
    const order = raw.map((p, i) => ({ p: p / total, t: 10 * (path.length + 1) + i })).sort((a, b) => b.p - a.p);
    return { tokens: order.map((o) => o.t), probs: order.map((o) => o.p) };
  };
}

/** Every node of the k-ary draft tree to `depth`, with its cumulative probability. */
function allNodes(dist: (path: readonly number[]) => TopK, depth: number): { path: number[]; score: number }[] {
  const out: { path: number[]; score: number }[] = [];
  const walk = (path: number[], score: number) => {
    if (path.length === depth) return;
    const top = dist(path);
    top.tokens.forEach((t, i) => {
      const node = { path: [...path, t], score: score * top.probs[i]! };
      out.push(node);
      walk(node.path, node.score);
    });
  };
  walk([], 1);
  return out;
}

describe("EAGLE-2's expansion on a made-up distribution", () => {
  it('takes the n nodes of highest cumulative probability, a prefix of it for a smaller n', async () => {
    const dist = fakeDraft(3);
    const t = await eagleTree(dist, { k: 3, maxNodes: 15 });
    assert.equal(t.tokens.length, 15);
    // Deeper nodes than one below the tree's deepest score no more than their ancestors there.
    const best = allNodes(dist, Math.max(...t.depths) + 1)
      .map((n) => n.score)
      .sort((a, b) => b - a)
      .slice(0, 15);
    assert.deepEqual(
      [...t.scores].sort((a, b) => b - a),
      best,
    );
    for (const n of [1, 5, 9]) {
      const small = await eagleTree(dist, { k: 3, maxNodes: n });
      const prefix = draftTreePrefix(t, n);
      assert.deepEqual(small.tokens, prefix.tree.tokens);
      assert.deepEqual(small.parents, prefix.tree.parents);
      assert.ok(isTokenTree(prefix.tree));
    }
  });

  it('expands only the nodes whose children were in reach, each once, the draft asked once per expansion', async () => {
    const dist = fakeDraft(4);
    const asked: string[] = [];
    const t = await eagleTree(
      (path) => {
        asked.push(path.join(','));
        return dist(path);
      },
      { k: 2, maxNodes: 12 },
    );
    // The root, then one ask per expanded node.
    const expanded = t.expandedAt.filter((at) => at !== undefined).length;
    assert.equal(asked.length, 1 + expanded);
    assert.equal(new Set(asked).size, asked.length);
    // Every node but those at the root hangs under an expanded node, expanded before it was taken.
    t.parents.forEach((p, i) => {
      if (p >= 0) assert.ok(t.expandedAt[p]! <= i);
    });
    // Only k children a node.
    const children = new Map<number, number>();
    for (const p of t.parents) children.set(p, (children.get(p) ?? 0) + 1);
    for (const n of children.values()) assert.ok(n <= 2);
    // The levels a level-by-level expansion batches: expanded nodes by depth.
    const { tree, expanded: flags } = draftTreePrefix(t, 12);
    const levels = expansionLevels(nodeDepths(tree), flags);
    assert.equal(
      levels.reduce((a, b) => a + b, 0),
      flags.filter(Boolean).length,
    );
  });

  it('a draft that is sure of one token makes a chain', async () => {
    const sure = (path: readonly number[]): TopK => ({ tokens: [path.length + 100, 1], probs: [1, 0] });
    const t = await eagleTree(sure, { k: 2, maxNodes: 5 });
    assert.deepEqual(t.tokens, [100, 101, 102, 103, 104]);
    assert.deepEqual(t.parents, [-1, 0, 1, 2, 3]);
  });
});

describe('draft chain', () => {
  it('stops where the draft is unsure, having evaluated the last node to learn it', async () => {
    const probs = [0.9, 0.8, 0.2];
    const at = async (_p: number, path: readonly number[]): Promise<TopK> => ({ tokens: [path.length + 1], probs: [probs[path.length] ?? 1] });
    const r = await draftChain(at, { position: 1, history: [0], budget: 7 }, 0.35);
    assert.deepEqual(r.tree.tokens, [1, 2]);
    assert.deepEqual(r.expanded, [true, true]);
    assert.deepEqual(r.draftLevels, [1, 1]);
    const full = await draftChain(at, { position: 1, history: [0], budget: 3 }, 0);
    assert.deepEqual(full.tree.tokens, [1, 2, 3]);
    // The budget's last node is drafted, never evaluated.
    assert.deepEqual(full.expanded, [true, true, false]);
  });
});

const unitTable: CostTable = { name: 'unit', fixedShape: false, verify: (b) => b, draft: (b) => b / 2 };
const flatTable: CostTable = { name: 'flat', fixedShape: true, verify: h100VerifyCost, draft: () => 0 };

describe('replayed generation', () => {
  const truth = Array.from({ length: 20 }, (_, i) => 100 + i);
  const perfect: ReplaySource = { propose: (s) => ({ tree: chainTree(truth.slice(s.position, s.position + s.budget)) }) };

  it('plain decoding: one evaluation a token', async () => {
    const r = await replayGeneration([1, 2], truth, { propose: () => ({ tree: chainTree([]) }) }, 8, [unitTable]);
    assert.equal(r.evaluations, truth.length);
    assert.equal(r.steps, truth.length - 1);
    assert.equal(r.cost.unit, r.plainCost.unit);
  });

  it('a perfect source advances B tokens a step; costs follow the table and the shape', async () => {
    const r = await replayGeneration([1, 2], truth, perfect, 8, [unitTable, flatTable]);
    // 19 tokens after the first: 8 + 8 + 3.
    assert.equal(r.steps, 3);
    assert.equal(r.evaluations, 4);
    assert.equal(r.nodes, 7 + 7 + 3);
    // Variable shape: each step its own batch (1 + nodes); fixed: B every step.
    assert.equal(r.cost.unit, 8 + 8 + 4);
    assert.ok(Math.abs(r.cost.flat! - 3 * h100VerifyCost(8)) < 1e-12);
    assert.equal(r.plainCost.unit, 19);
  });

  it("counts the draft's catch-up and levels", async () => {
    // Proposes the truth's next 3 tokens, the first two evaluated by the draft in two batches.
    const source: ReplaySource = {
      propose: (s) => ({ tree: chainTree(truth.slice(s.position, s.position + 3)), draftLevels: [1, 1], expanded: [true, true, false] }),
    };
    const r = await replayGeneration([], truth.slice(0, 9), source, 8, [unitTable]);
    // Steps at 1 and 5 accept 3 (+1), the one at 9 ends. Catch-up: 1 token first, then 2 (the third node was never evaluated, and the target's own).
    assert.equal(r.steps, 2);
    assert.equal(r.draftBatches, 3 + 3);
    assert.equal(r.draftTokens, 1 + 2 + 2 + 2);
  });

  it('refuses a tree larger than the batch', async () => {
    await assert.rejects(replayGeneration([], truth, { propose: () => ({ tree: chainTree([1, 2, 3]) }) }, 3, [unitTable]));
  });
});

describe('cost curves', () => {
  it('interpolates V(b)/V(1) between measured sizes and beyond them at the last slope', () => {
    const ratio = interpolatedRatio({ 1: 2, 4: 5, 8: 9 });
    assert.equal(ratio(1), 1);
    assert.equal(ratio(2), 1.5);
    assert.equal(ratio(8), 4.5);
    assert.equal(ratio(12), 6.5);
  });

  it('a larger batch never costs less than a smaller one', () => {
    assert.deepEqual(monotoneCurve({ 4: 3, 1: 2, 2: 1.5, 8: 2.5 }), { 1: 2, 2: 2, 4: 3, 8: 3 });
  });
});

describe('window copy as a tree', () => {
  it('resync alternatives: every other place the output ending occurs, near with one token, far with three', () => {
    const window = [
      1, 2, 3, 9, 1, 2, 4, 5, 6, 7, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
      9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 30,
    ];
    const alts = resyncContinuations([1, 2], window, { near: 6, exclude: 6, maxLen: 2 });
    // Near position 6 (excluded): position 2 ([1, 2] then 3) matches 2 tokens; far away, 2 tokens are not enough.
    assert.deepEqual(alts, [{ tokens: [3, 9], weight: 2 }]);
    const far = resyncContinuations([1, 2, 3], window, { near: 6, maxLen: 1 });
    assert.deepEqual(far, [
      { tokens: [9], weight: 3 },
      { tokens: [30], weight: 3 },
    ]);
  });

  it('without alternatives the copy source is the window copy chain', () => {
    const window = [10, 11, 12, 13, 14, 15];
    const prompt = [1, 2, 3];
    const source = new CopySource(new WindowCopyProposer(window, prompt.length), prompt.length, window, new CopyAcceptance(), { resync: false });
    const proposal = source.propose({ position: 1, history: [...prompt, 10], budget: 4 });
    assert.deepEqual(proposal.tree.tokens, [11, 12, 13, 14]);
    assert.deepEqual(proposal.tree.parents, [-1, 0, 1, 2]);
  });

  it('with alternatives it keeps the copy and adds the other resumptions where the copy is unsure', () => {
    // The output copied [10, 11] and then diverged with 20: the copy resumes after the only 20 (near), an alternative after the other.
    const window = [10, 11, 12, 20, 21, 22, 23, 20, 30, 31];
    const prompt = [1];
    const source = new CopySource(new WindowCopyProposer(window, prompt.length), prompt.length, window, new CopyAcceptance(), { resync: true });
    const history = [...prompt, 10, 11, 20];
    const proposal = source.propose({ position: 3, history, budget: 6 });
    assert.ok(isTokenTree(proposal.tree));
    const roots = proposal.tree.tokens.filter((_, i) => proposal.tree.parents[i] === -1);
    assert.deepEqual(new Set(roots), new Set([21, 30]));
  });
});

describe('candidate bound', () => {
  it('follows the output through the whole candidate trie as deep as the batch allows, whatever the scores', async () => {
    const trie = new ScoredTrie();
    trie.addPath([1, 2, 3, 4], [0.9, 0.9, 0.9, 0.9]);
    trie.addPath([1, 5, 6, 7], [0.1, 0.01, 0.01, 0.01]);
    const truth = [0, 1, 5, 6, 7, 8];
    const bound = candidateBound({ trie: () => trie }, truth);
    const p = await bound.propose({ position: 1, history: [0], budget: 3 });
    assert.deepEqual(p.tree.tokens, [1, 5, 6]);
    // A budget-limited tree of the same trie keeps the likelier branch and accepts less.
    assert.equal(acceptTree(trie.best(3).tree, truth, 1), 1);
  });
});

describe('the suffix source learning from a tree step', () => {
  it('learns as the decoder does: a chain node the tree left out counts as unverified, not as a miss', () => {
    // 1 and its likelier siblings 6 and 7 take the three nodes; the chain is 1 2 3.
    const offer = new SuffixProposer(() => ({ matchLength: 1, continuations: [[1, 2, 3, 4], [1, 2, 3, 5], [6], [7]] })).offer([9], 3)!;
    const tree = shapeTree(offer, 3, 9).tree;
    const accepted = acceptedPath(tree, [1, 2, 3, 4], 0);
    const learned = new SuffixTreeSource(() => ({ documents: null }));
    // The target's token after the accepted 1 is 2: the chain kept 2 of the 2 tokens the step could check.
    learned.learnFromTree(offer, tree, accepted, 2);
    const [verified, missed] = [new SuffixTreeSource(() => ({ documents: null })), new SuffixTreeSource(() => ({ documents: null }))];
    verified.rates.record(offer, 2, 2);
    missed.rates.record(offer, 3, 2);
    assert.deepEqual(learned.reach(1, 3), verified.reach(1, 3));
    assert.notDeepEqual(learned.reach(1, 3), missed.reach(1, 3));
  });
});
