// How a token tree is laid out in one batch of a unified KV cache (one stream for every sequence,
// where a cell may belong to several sequences): the batch is [pending, ...tree nodes], node i at the
// position of its depth after the pending token; each root-to-leaf path gets a sequence id of its own
// and a node belongs to the ids of every path through it, the pending token to the request's own
// sequence and to all of them. A token attends to the cells of its first sequence up to its own
// position, so a node sees the cached history (copied into each path id before the step), the pending
// token and its own ancestors, never a sibling branch. Pure: src/llama/unifiedSequenceEvaluator.ts
// decodes it and joins the accepted path's cells to the request's sequence.
import type { Token } from '../shared/decoding';
import { childrenOf, nodeDepths, type TokenTree, treeProblem } from '../speculation/tokenTree';

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

/**
 * The batch verifying `tree` after `pending` at position `first` (the sequence's cached length) on
 * sequence `main`, with `pathIds` free for the tree's root-to-leaf paths. Throws with the reason for a
 * malformed tree, one of more nodes than `maxNodes`, or one with more leaves than path ids.
 */
export function treeBatch(main: number, pathIds: readonly number[], first: number, pending: Token, tree: TokenTree, maxNodes: number): TreeBatch {
  const problem = treeProblem(tree, maxNodes);
  if (problem) throw new Error(`cannot verify the tree: ${problem}`);
  const n = tree.tokens.length;
  const children = childrenOf(tree);
  const depths = nodeDepths(tree);
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
