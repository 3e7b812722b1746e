// Token trees: several candidate continuations of a history verified by the target in one evaluation,
// the root path the target agrees with kept (greedy verification walks it). A trie whose nodes carry
// scores (estimated chances of lying on the target's path) takes candidates from several sources and
// gives the best nodes a verify batch holds; continuations of a matched context merge into it by
// frequency (SuffixDecoding, arXiv 2411.04975).
import type { Token } from '../shared/decoding';

/**
 * A token tree verified in one target evaluation after the pending token (its root): node i holds
 * tokens[i] and hangs under parents[i] (−1: under the root). Parents come before their children.
 */
export interface TokenTree {
  tokens: Token[];
  parents: number[];
}

/** A chain as a tree: each token under the one before it. */
export function chainTree(tokens: readonly Token[]): TokenTree {
  return { tokens: [...tokens], parents: tokens.map((_, i) => i - 1) };
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

/** Whether `tree` is well formed: parents before children, no two siblings with one token. */
export function isTokenTree(tree: TokenTree): boolean {
  return treeProblem(tree, Number.POSITIVE_INFINITY) === null;
}

/** Depth of every node (1 for the root's children). */
export function nodeDepths(tree: TokenTree): number[] {
  const depths: number[] = [];
  for (let i = 0; i < tree.parents.length; i++) {
    const parent = tree.parents[i]!;
    depths.push(parent < 0 ? 1 : depths[parent]! + 1);
  }
  return depths;
}

/** Each node's children by parent + 1 (index 0: the root's), in node order. */
export function childrenOf(tree: TokenTree): number[][] {
  const children: number[][] = Array.from({ length: tree.tokens.length + 1 }, () => []);
  for (let i = 0; i < tree.parents.length; i++) children[tree.parents[i]! + 1]!.push(i);
  return children;
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

/**
 * The nodes of the longest root path equal to truth[from], truth[from + 1], ...: what greedy
 * verification keeps of the tree (the target's own token after it comes on top). Siblings never
 * share a token (isTokenTree), so the path is unique.
 */
export function acceptedPath(tree: TokenTree, truth: readonly Token[], from: number): number[] {
  let depth = from;
  return walkTree(tree, childrenOf(tree), () => truth[depth++]!).path;
}

/** How many of the tree's tokens greedy verification accepts at `from`. */
export function acceptTree(tree: TokenTree, truth: readonly Token[], from: number): number {
  return acceptedPath(tree, truth, from).length;
}

/**
 * A trie of candidate tokens under the root, each node scored by the estimated chance that it lies
 * on the target's path; several sources add to it (a node's score is the best any gave it), and
 * `best(n)` takes the n nodes a verify batch holds. `expanded` marks nodes whose token the draft
 * model evaluated (their KV is the draft's: what it must catch up on after the step).
 */
export class ScoredTrie {
  readonly tokens: Token[] = [];
  readonly parents: number[] = [];
  readonly scores: number[] = [];
  readonly depths: number[] = [];
  readonly expanded: boolean[] = [];
  /** Children by parent + 1 (index 0: the root's); looked through for a token (siblings are few). */
  private readonly kids: number[][] = [[]];

  get size(): number {
    return this.tokens.length;
  }

  child(parent: number, token: Token): number | undefined {
    const kids = this.kids[parent + 1];
    if (kids) for (const kid of kids) if (this.tokens[kid] === token) return kid;
    return undefined;
  }

  /** Adds (or rescores) one node under `parent` (−1: the root); its score becomes the higher of the two. */
  addNode(parent: number, token: Token, score: number, expanded = false): number {
    const existing = this.child(parent, token);
    if (existing !== undefined) {
      if (score > this.scores[existing]!) this.scores[existing] = score;
      if (expanded) this.expanded[existing] = true;
      return existing;
    }
    const i = this.tokens.length;
    this.tokens.push(token);
    this.parents.push(parent);
    this.scores.push(score);
    this.depths.push(parent < 0 ? 1 : this.depths[parent]! + 1);
    this.expanded.push(expanded);
    this.kids.push([]);
    this.kids[parent + 1]!.push(i);
    return i;
  }

  /** Node i's score becomes `score` if that is higher. */
  raise(i: number, score: number): void {
    if (score > this.scores[i]!) this.scores[i] = score;
  }

  /** Adds a path under `parent`, node j scored `scores[j]`; returns the nodes. */
  addPath(path: readonly Token[], scores: readonly number[], parent = -1): number[] {
    const nodes: number[] = [];
    let at = parent;
    for (let j = 0; j < path.length; j++) {
      at = this.addNode(at, path[j]!, scores[j] ?? 0);
      nodes.push(at);
    }
    return nodes;
  }

  /** The node at the end of `path` from `parent`, or undefined. */
  find(path: readonly Token[], parent = -1): number | undefined {
    let at: number | undefined = parent;
    for (const token of path) {
      at = this.child(at, token);
      if (at === undefined) return undefined;
    }
    return at;
  }

  /**
   * The best `n` nodes as a tree, taken best-first from the root (a node only after its parent): the
   * highest score first, ties to the shallower, then to the older node. With scores that never grow
   * from a parent to its child this is the n best-scored nodes overall (EAGLE-2's reranking).
   * `from` maps each tree node to its trie node.
   */
  best(n: number): { tree: TokenTree; from: number[] } {
    const tree: TokenTree = { tokens: [], parents: [] };
    const from: number[] = [];
    const position = new Map<number, number>();
    const frontier = [...this.kids[0]!];
    while (tree.tokens.length < n && frontier.length > 0) {
      let pick = 0;
      for (let f = 1; f < frontier.length; f++) if (this.before(frontier[f]!, frontier[pick]!)) pick = f;
      const node = frontier[pick]!;
      frontier.splice(pick, 1);
      position.set(node, tree.tokens.length);
      tree.tokens.push(this.tokens[node]!);
      const parent = this.parents[node]!;
      tree.parents.push(parent < 0 ? -1 : position.get(parent)!);
      from.push(node);
      frontier.push(...this.kids[node + 1]!);
    }
    return { tree, from };
  }

  private before(a: number, b: number): boolean {
    const sa = this.scores[a]!;
    const sb = this.scores[b]!;
    if (sa !== sb) return sa > sb;
    if (this.depths[a] !== this.depths[b]) return this.depths[a]! < this.depths[b]!;
    return a < b;
  }
}

/** A continuation of a matched context, with how much it counts. */
export interface Continuation {
  tokens: Token[];
  weight: number;
}

/**
 * Adds continuations to `trie` under `parent`, merged by frequency: a node's share is the weight of
 * the continuations through it over the weight of all, scaled by `scale` and by `decay` per token
 * (the chance that the source's guesses hold that far), so that a node scores
 * scale × share × decay^depth below `parent`; or, with `reach`, scale × share × reach[depth] (a
 * chance per depth that is not one rate to a power: the last entry beyond it).
 */
export function addContinuations(trie: ScoredTrie, continuations: readonly Continuation[], options: { parent?: number; scale?: number; decay?: number; reach?: readonly number[] } = {}): void {
  const parent = options.parent ?? -1;
  const scale = options.scale ?? 1;
  const decay = options.decay ?? 1;
  const reach = options.reach;
  const total = continuations.reduce((n, c) => n + c.weight, 0);
  if (!(total > 0)) return;
  // The weight through each node: the continuations' paths put in unscored first, counted on the way.
  const through = new Map<number, number>();
  const paths = continuations.map((c) => {
    let at = parent;
    return c.tokens.map((token) => {
      at = trie.addNode(at, token, 0);
      through.set(at, (through.get(at) ?? 0) + c.weight);
      return at;
    });
  });
  for (const path of paths) {
    let factor = scale;
    for (let j = 0; j < path.length; j++) {
      factor = reach ? scale * (reach[j + 1] ?? reach.at(-1)!) : factor * decay;
      trie.raise(path[j]!, (factor * through.get(path[j]!)!) / total);
    }
  }
}
