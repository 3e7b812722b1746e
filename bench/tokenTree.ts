// The pure parts of the tree lab (bench/treeLab.ts): token trees, the path a target accepts in one,
// a trie whose nodes carry scores (estimated chances of being on the target's path) from which the
// best nodes of a verify batch are taken, continuations of a matched context merged by frequency
// (SuffixDecoding, arXiv 2411.04975), and EAGLE-2's dynamic tree expanded from a draft's top-k
// distributions (arXiv 2406.16858). No model here: distributions and token lists come in as arguments.
import type { Token } from '../src/shared/decoding';

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

/** Whether `tree` is well formed: parents before children, no two siblings with one token. */
export function isTokenTree(tree: TokenTree): boolean {
  if (tree.tokens.length !== tree.parents.length) return false;
  const seen = new Set<string>();
  for (let i = 0; i < tree.tokens.length; i++) {
    const parent = tree.parents[i]!;
    if (!(parent >= -1 && parent < i)) return false;
    const key = `${parent}:${tree.tokens[i]}`;
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
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

/**
 * The nodes of the longest root path equal to truth[from], truth[from + 1], ...: what greedy
 * verification keeps of the tree (the target's own token after it comes on top). Siblings never
 * share a token (isTokenTree), so the path is unique.
 */
export function acceptedPath(tree: TokenTree, truth: readonly Token[], from: number): number[] {
  const path: number[] = [];
  let parent = -1;
  for (let at = from; at < truth.length; at++) {
    let next = -1;
    for (let i = parent + 1; i < tree.tokens.length; i++) {
      if (tree.parents[i] === parent && tree.tokens[i] === truth[at]) {
        next = i;
        break;
      }
    }
    if (next < 0) break;
    path.push(next);
    parent = next;
  }
  return path;
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
  /** Children by parent + 1 (index 0: the root's). */
  private readonly kids: number[][] = [[]];
  private readonly index = new Map<string, number>();

  get size(): number {
    return this.tokens.length;
  }

  child(parent: number, token: Token): number | undefined {
    return this.index.get(`${parent}:${token}`);
  }

  /** Adds (or rescores) one node under `parent` (−1: the root); its score becomes the higher of the two. */
  addNode(parent: number, token: Token, score: number, expanded = false): number {
    const key = `${parent}:${token}`;
    const existing = this.index.get(key);
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
    this.index.set(key, i);
    return i;
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
 * scale × share × decay^depth below `parent`.
 */
export function addContinuations(trie: ScoredTrie, continuations: readonly Continuation[], options: { parent?: number; scale?: number; decay?: number } = {}): void {
  const parent = options.parent ?? -1;
  const scale = options.scale ?? 1;
  const decay = options.decay ?? 1;
  const total = continuations.reduce((n, c) => n + c.weight, 0);
  if (!(total > 0)) return;
  // Weight through each node of the continuations' own trie (keyed by its path).
  const through = new Map<string, number>();
  for (const c of continuations) {
    let key = '';
    for (const token of c.tokens) {
      key += `${token},`;
      through.set(key, (through.get(key) ?? 0) + c.weight);
    }
  }
  for (const c of continuations) {
    let key = '';
    let factor = scale;
    const scores = c.tokens.map((token) => {
      key += `${token},`;
      factor *= decay;
      return (factor * through.get(key)!) / total;
    });
    trie.addPath(c.tokens, scores, parent);
  }
}

/** An occurrence of the context's last `length` tokens in a source: source[end − length, end). */
export interface Occurrence {
  source: number;
  end: number;
  length: number;
}

/**
 * Every place where the context's ending recurs in the sources, with how long the match is (at most
 * maxN, at least minN). `searchEnd[s]` bounds where an occurrence in source s may end (exclusive of
 * the token after it): the context itself passed as a source must not match its own tail.
 */
export function suffixOccurrences(context: readonly Token[], sources: readonly (readonly Token[])[], options: { minN: number; maxN: number; searchEnd?: readonly number[] }): Occurrence[] {
  const out: Occurrence[] = [];
  const n = context.length;
  if (n === 0) return out;
  const last = context[n - 1];
  for (let s = 0; s < sources.length; s++) {
    const src = sources[s]!;
    const lastEnd = Math.min(options.searchEnd?.[s] ?? src.length, src.length);
    for (let end = 1; end <= lastEnd; end++) {
      if (src[end - 1] !== last) continue;
      const cap = Math.min(options.maxN, end, n);
      let m = 1;
      while (m < cap && src[end - 1 - m] === context[n - 1 - m]) m++;
      if (m >= options.minN) out.push({ source: s, end, length: m });
    }
  }
  return out;
}

/**
 * SuffixDecoding's candidates: the continuations (up to maxLen tokens) after the occurrences of the
 * longest matched ending of the context, one weight each, the latest of each source first (at most
 * `maxOccurrences`). Occurrences whose surroundings are the same tokens (the same text seen through
 * two sources: the prompt and the open document it was cut from) count once. Empty when nothing
 * matches minN tokens.
 */
export function suffixContinuations(
  context: readonly Token[],
  sources: readonly (readonly Token[])[],
  options: { minN: number; maxN: number; maxLen: number; searchEnd?: readonly number[]; maxOccurrences?: number },
): { matchLength: number; continuations: Continuation[] } {
  const occurrences = suffixOccurrences(context, sources, options);
  const longest = occurrences.reduce((m, o) => Math.max(m, o.length), 0);
  const chosen = occurrences.filter((o) => o.length === longest).sort((a, b) => a.source - b.source || b.end - a.end);
  const seen = new Set<string>();
  const continuations: Continuation[] = [];
  for (const o of chosen) {
    if (continuations.length >= (options.maxOccurrences ?? Number.POSITIVE_INFINITY)) break;
    const src = sources[o.source]!;
    const tokens = src.slice(o.end, o.end + options.maxLen) as Token[];
    if (tokens.length === 0) continue;
    const key = src.slice(Math.max(0, o.end - 2 * options.maxN), o.end + options.maxLen).join(',');
    if (seen.has(key)) continue;
    seen.add(key);
    continuations.push({ tokens, weight: 1 });
  }
  return { matchLength: longest, continuations };
}

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
