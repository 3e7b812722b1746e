// The tree lab's own parts (bench/treeLab.ts): EAGLE-2's dynamic tree expanded from a draft's top-k
// distributions (arXiv 2406.16858). Token trees and the scored trie are src/speculation/tokenTree.ts,
// the suffix source src/speculation/suffixProposer.ts. No model here: distributions come in as arguments.
import type { Token } from '../src/shared/decoding';
import type { TokenTree } from '../src/speculation/tokenTree';

export { acceptedPath, acceptTree, addContinuations, chainTree, type Continuation, isTokenTree, nodeDepths, ScoredTrie, type TokenTree } from '../src/speculation/tokenTree';

/** A draft model's most likely next tokens after a context, most likely first, with their probabilities. */
export interface TopK {
  tokens: Token[];
  probs: number[];
}

/** EAGLE-2's tree as built, node by node in the order taken (a prefix of it is the tree of a smaller batch). */
export interface DraftTree {
  tokens: Token[];
  parents: number[];
  /** Cumulative draft probability of each node's path. */
  scores: number[];
  depths: number[];
  /**
   * When each node was expanded (the draft evaluated on its path to give its children): the number of
   * nodes taken before; undefined when never. The root's expansion (the step's first draft batch) is
   * not listed: every tree needs it.
   */
  expandedAt: (number | undefined)[];
}

/**
 * EAGLE-2's dynamic draft tree, best-first: the candidate with the highest cumulative draft
 * probability is taken next, until `maxNodes`; a taken node's top-k children become candidates once
 * it is expanded, and it is expanded only when its children might be taken next (its own score, an
 * upper bound of theirs, is the highest on offer): the fewest draft evaluations that give these
 * nodes. The first n nodes are the tree of a batch of n + 1 tokens (the pending one first).
 */
export async function eagleTree(dist: (path: readonly Token[]) => TopK | Promise<TopK>, options: { k: number; maxNodes: number }): Promise<DraftTree> {
  const tree: DraftTree = { tokens: [], parents: [], scores: [], depths: [], expandedAt: [] };
  type Candidate = { kind: 'node'; token: Token; parent: number; score: number; depth: number; order: number } | { kind: 'expand'; node: number; score: number; depth: number; order: number };
  let order = 0;
  const frontier: Candidate[] = [];
  const paths: Token[][] = [];
  const offer = (parent: number, top: TopK, base: number, depth: number) => {
    for (let r = 0; r < Math.min(options.k, top.tokens.length); r++) {
      frontier.push({ kind: 'node', token: top.tokens[r]!, parent, score: base * top.probs[r]!, depth, order: order++ });
    }
  };
  // Ties: a node before an expansion (free), the shallower first, then the older.
  const before = (a: Candidate, b: Candidate) => (a.score !== b.score ? a.score > b.score : a.kind !== b.kind ? a.kind === 'node' : a.depth !== b.depth ? a.depth < b.depth : a.order < b.order);
  offer(-1, await dist([]), 1, 1);
  while (tree.tokens.length < options.maxNodes && frontier.length > 0) {
    let pick = 0;
    for (let f = 1; f < frontier.length; f++) if (before(frontier[f]!, frontier[pick]!)) pick = f;
    const c = frontier.splice(pick, 1)[0]!;
    if (c.kind === 'node') {
      const i = tree.tokens.length;
      tree.tokens.push(c.token);
      tree.parents.push(c.parent);
      tree.scores.push(c.score);
      tree.depths.push(c.depth);
      tree.expandedAt.push(undefined);
      paths.push(c.parent < 0 ? [c.token] : [...paths[c.parent]!, c.token]);
      frontier.push({ kind: 'expand', node: i, score: c.score, depth: c.depth, order: order++ });
    } else {
      tree.expandedAt[c.node] = tree.tokens.length;
      offer(c.node, await dist(paths[c.node]!), c.score, c.depth + 1);
    }
  }
  return tree;
}

/** The first n nodes of a draft tree as a token tree, and which of them were expanded by then. */
export function draftTreePrefix(tree: DraftTree, n: number): { tree: TokenTree; expanded: boolean[] } {
  const count = Math.min(n, tree.tokens.length);
  const expanded = tree.expandedAt.slice(0, count).map((at) => at !== undefined && at < count);
  return { tree: { tokens: tree.tokens.slice(0, count), parents: tree.parents.slice(0, count) }, expanded };
}

/**
 * The draft batches of a level-by-level expansion of a tree: one batch per depth, holding the expanded
 * nodes of that depth (each evaluated on its own path, as a tree attention mask allows); the root's
 * batch is not counted here. Sizes in order of depth.
 */
export function expansionLevels(depths: readonly number[], expanded: readonly boolean[]): number[] {
  const byDepth = new Map<number, number>();
  for (let i = 0; i < depths.length; i++) if (expanded[i]) byDepth.set(depths[i]!, (byDepth.get(depths[i]!) ?? 0) + 1);
  return [...byDepth.entries()].sort((a, b) => a[0] - b[0]).map(([, count]) => count);
}
