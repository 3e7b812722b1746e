// How a token tree is laid out in one batch of a unified KV cache (one stream for every sequence,
// where a cell may belong to several sequences): the batch is [pending, ...tree nodes], node i at the
// position of its depth after the pending token; each root-to-leaf path gets a sequence id of its own
// and a node belongs to the ids of every path through it, the pending token to the request's own
// sequence and to all of them. A token attends to the cells of its first sequence up to its own
// position, so a node sees the cached history (copied into each path id before the step), the pending
// token and its own ancestors, never a sibling branch. Pure: src/llama/unifiedSequenceEvaluator.ts
// decodes it and joins the accepted path's cells to the request's sequence.
import type { Token } from '../shared/decoding';
import type { TokenTree } from '../speculation/tokenTree';

/** The batch of one tree step, in the shapes the native addon's unifiedDecode takes. */
export interface TreeBatch {
  tokens: Int32Array;
  positions: Int32Array;
  /** How many sequence ids each token belongs to, and the ids, in token order. */
  seqCounts: Int32Array;
  seqIds: Int32Array;
  /** Every token is an output: the greedy walk may read any of them. */
  outputs: Uint8Array;
  /** The path ids used, one per leaf (the others stay empty). */
  paths: number[];
  /** Each node's first path id (a path through it): what its attention reads. */
  pathOf: number[];
  /** The deepest node's depth (1 for the root's children; 0 for an empty tree). */
  depth: number;
  /** Children of each node by parent + 1 (index 0: the pending token's). */
  children: number[][];
}

/** Why `tree` cannot be verified as a tree (malformed, or larger than `maxNodes`); null when it can. */
export function treeProblem(tree: TokenTree, maxNodes: number): string | null {
  if (!tree || !Array.isArray(tree.tokens) || !Array.isArray(tree.parents)) return 'a token tree has tokens and parents';
  const n = tree.tokens.length;
  if (tree.parents.length !== n) return `a token tree has a parent per node: ${n} tokens, ${tree.parents.length} parents`;
  if (n > maxNodes) return `the tree has ${n} nodes: more than the ${maxNodes} a batch holds after the pending token`;
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) {
    const parent = tree.parents[i]!;
    const token = tree.tokens[i]!;
    if (!Number.isInteger(token) || token < 0) return `node ${i} has no valid token (${token})`;
    if (!Number.isInteger(parent) || parent < -1 || parent >= i) return `node ${i}'s parent ${parent} does not come before it (parents come before their children)`;
    const key = `${parent}:${token}`;
    if (seen.has(key)) return `node ${i} repeats token ${token} of a sibling under ${parent < 0 ? 'the pending token' : `node ${parent}`}`;
    seen.add(key);
  }
  return null;
}

/**
 * The batch verifying `tree` after `pending` at position `first` (the sequence's cached length) on
 * sequence `main`, with `pathIds` free for the tree's root-to-leaf paths. Throws with the reason for a
 * malformed tree, one of more nodes than `maxNodes`, or one with more leaves than path ids.
 */
export function treeBatch(main: number, pathIds: readonly number[], first: number, pending: Token, tree: TokenTree, maxNodes: number): TreeBatch {
  const problem = treeProblem(tree, maxNodes);
  if (problem) throw new Error(`cannot verify the tree: ${problem}`);
  const n = tree.tokens.length;
  const children: number[][] = Array.from({ length: n + 1 }, () => []);
  const depths: number[] = [];
  for (let i = 0; i < n; i++) {
    const parent = tree.parents[i]!;
    children[parent + 1]!.push(i);
    depths.push(parent < 0 ? 1 : depths[parent]! + 1);
  }
  const leaves: number[] = [];
  for (let i = 0; i < n; i++) if (children[i + 1]!.length === 0) leaves.push(i);
  if (leaves.length > pathIds.length) throw new Error(`cannot verify the tree: it has ${leaves.length} leaves, more than the ${pathIds.length} path sequences`);
  // The ids of every path through each node, in leaf order (a leaf's path id on it and its ancestors).
  const through: number[][] = Array.from({ length: n }, () => []);
  const paths = leaves.map((leaf, j) => {
    const id = pathIds[j]!;
    for (let at = leaf; at >= 0; at = tree.parents[at]!) through[at]!.push(id);
    return id;
  });
  const seqIds: number[] = [main, ...paths];
  const seqCounts = [1 + paths.length];
  for (let i = 0; i < n; i++) {
    seqCounts.push(through[i]!.length);
    seqIds.push(...through[i]!);
  }
  return {
    tokens: Int32Array.from([pending, ...tree.tokens]),
    positions: Int32Array.from([first, ...depths.map((d) => first + d)]),
    seqCounts: Int32Array.from(seqCounts),
    seqIds: Int32Array.from(seqIds),
    outputs: new Uint8Array(n + 1).fill(1),
    paths,
    pathOf: through.map((ids) => ids[0]!),
    depth: depths.reduce((a, b) => Math.max(a, b), 0),
    children,
  };
}

/**
 * Greedy acceptance on a verified tree: from the pending token's output (batch index 0), the child
 * whose token is the target's greedy token there, then that node's output (batch index node + 1), and
 * so on. `predictionAt(batchIndex)` is the target's greedy token after that batch position. Returns the
 * accepted nodes and the target's token after the last of them.
 */
export function walkTree(tree: TokenTree, children: readonly (readonly number[])[], predictionAt: (batchIndex: number) => Token): { path: number[]; next: Token } {
  const path: number[] = [];
  let at = -1;
  for (;;) {
    const next = predictionAt(at + 1);
    const child = children[at + 1]!.find((c) => tree.tokens[c] === next);
    if (child === undefined) return { path, next };
    path.push(child);
    at = child;
  }
}
