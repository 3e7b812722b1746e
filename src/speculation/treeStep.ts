// A tree offer as a fixed-shape step verifies it: cut or padded to the shape's B − 1 nodes (a verify
// batch costs the same whatever it holds, so a tree fills it where a chain is padded), and what the
// step tells the chain it stood in for and the proposers that learn from every output.
import type { Token } from '../shared/decoding';
import { commonPrefixLength } from './greedyEvaluator';
import type { TreeOffer, VerifiedStep } from './proposer';
import type { TokenTree } from './tokenTree';

/** The tree a step verifies and how many of its nodes are the offer's (the rest is padding). */
export interface ShapedTree {
  tree: TokenTree;
  offered: number;
}

/**
 * `offer`'s tree in exactly `nodes` nodes: its first `nodes` (parents come before their children, so
 * any first nodes are a tree; a scored tree puts its best first), or padded as a chain is
 * (verifyShape.ts padToShape): below the end of its likeliest path (or the first leaf below that),
 * repeats of that leaf's token, each under the one before. Padding is verified like any node.
 */
export function shapeTree(offer: TreeOffer, nodes: number, pending: Token): ShapedTree {
  const offered = Math.min(offer.tree.tokens.length, nodes);
  const tree: TokenTree = { tokens: offer.tree.tokens.slice(0, offered), parents: offer.tree.parents.slice(0, offered) };
  if (offered === nodes) return { tree, offered };
  const firstChild = (parent: number) => tree.parents.indexOf(parent);
  // The end of the likeliest path, then down to a leaf: a node without children takes the padding.
  let at = -1;
  for (const token of offer.chain) {
    const child = tree.parents.findIndex((p, i) => p === at && tree.tokens[i] === token);
    if (child < 0) break;
    at = child;
  }
  for (let child = firstChild(at); child >= 0; child = firstChild(at)) at = child;
  const token = at < 0 ? pending : tree.tokens[at]!;
  while (tree.tokens.length < nodes) {
    tree.tokens.push(token);
    tree.parents.push(at);
    at = tree.tokens.length - 1;
  }
  return { tree, offered };
}

/**
 * What a chain step of `chain` would have told its source, given what the tree step found the target
 * writes (the accepted tokens, then its own token after them): how many of its tokens count as
 * verified, and how many were kept. Where the chain agrees with all of that and goes on, its next
 * token was not in the tree (a scored tree may leave a deep chain node out for a likelier sibling), so
 * nothing says how the rest would have fared: the chain counts as verified only as far as it agreed.
 */
export function chainOutcome(chain: readonly Token[], accepted: readonly Token[], next: Token): { proposed: number; accepted: number } {
  const kept = commonPrefixLength(chain, [...accepted, next]);
  return { proposed: kept > accepted.length ? kept : chain.length, accepted: kept };
}

/**
 * A tree step as the proposers that learn from every output see a step (VerifiedStep): a root path —
 * the accepted nodes, then on through each node's first child to a leaf — with the target's token after
 * each of its positions (`predictions[0]` after the pending token, `predictions[i + 1]` after node i).
 */
export function treeStepAsChain(history: readonly Token[], tree: TokenTree, path: readonly number[], predictions: readonly Token[]): VerifiedStep {
  const nodes = [...path];
  for (let at = nodes.at(-1) ?? -1, child = tree.parents.indexOf(at); child >= 0; at = child, child = tree.parents.indexOf(at)) nodes.push(child);
  return {
    history,
    guesses: nodes.map((node) => tree.tokens[node]!),
    predictions: [predictions[0]!, ...nodes.map((node) => predictions[node + 1]!)],
    accepted: path.length,
  };
}
