// A proposal source for the tests of tree verification that offers real trees: several branches,
// some right and some wrong. Given the target's greedy output (`truth`, from a plain run of the same
// request), where the history follows it the tree holds the right continuation (whole, or wrong from
// some token on) among wrong siblings that share some of its prefix, and random branches; elsewhere
// (past a divergence at a tie, or where it chooses to) only random branches. Nodes come in a random
// order that keeps parents before children, and the offer's likeliest chain is sometimes the right
// branch, sometimes a wrong one: what a verifier of trees must walk from the target's own tokens.
import type { Token } from '../../src/shared/decoding';
import type { LookupProposer, TreeOffer } from '../../src/speculation/proposer';
import { ScoredTrie, type TokenTree } from '../../src/speculation/tokenTree';

export class TestTreeProposer implements LookupProposer<TreeOffer> {
  readonly id = 'test-trees';
  readonly asks = 'lookup';
  offers = 0;
  /** Offers that held the right continuation's first token. */
  offersWithTruth = 0;

  constructor(
    /** The prompt then the target's greedy output. */
    private readonly truth: readonly Token[],
    /** Valid tokens to make wrong branches of. */
    private readonly pool: readonly Token[],
    private readonly rand: () => number,
    /** Largest tree offered (the verify batch holds this many nodes after the pending token). */
    private readonly maxNodes = 15,
  ) {}

  offer(history: readonly Token[], maxLen: number): TreeOffer | null {
    const limit = Math.min(maxLen, this.maxNodes);
    if (limit < 1) return null;
    const trie = new ScoredTrie();
    const onTruth = history.length < this.truth.length && history.every((t, i) => t === this.truth[i]);
    const right = onTruth ? this.truth.slice(history.length, history.length + 1 + Math.floor(this.rand() * limit)) : [];
    const branches: Token[][] = [];
    if (right.length > 0 && this.rand() < 0.85) {
      // Right up to a point, and sometimes wrong after it (the walk must stop there).
      const branch = [...right];
      if (branch.length > 1 && this.rand() < 0.3) branch[1 + Math.floor(this.rand() * (branch.length - 1))] = this.wrong(branch[0]!);
      branches.push(branch);
      this.offersWithTruth++;
      // Wrong siblings along it: its prefix, then another token.
      for (let k = Math.floor(this.rand() * 4); k > 0; k--) {
        const at = Math.floor(this.rand() * right.length);
        branches.push([...right.slice(0, at), this.wrong(right[at]!), ...this.randomTokens(Math.floor(this.rand() * 3))]);
      }
    }
    for (let k = Math.floor(this.rand() * 3) + (branches.length === 0 ? 1 : 0); k > 0; k--) branches.push(this.randomTokens(1 + Math.floor(this.rand() * 4)));
    for (const branch of branches)
      trie.addPath(
        branch,
        branch.map(() => this.rand()),
      );
    const best = trie.best(limit).tree;
    if (best.tokens.length === 0) return null;
    const tree = shuffled(best, this.rand);
    this.offers++;
    // The likeliest chain: the right branch or another, as far as the tree holds it.
    const chainOf = branches[Math.floor(this.rand() * branches.length)]!;
    return { kind: 'tree', tree, chain: rootPathTokens(tree, chainOf) };
  }

  record(): void {}

  private wrong(right: Token): Token {
    const candidates = this.pool.filter((t) => t !== right);
    return candidates[Math.floor(this.rand() * candidates.length)]!;
  }

  private randomTokens(n: number): Token[] {
    return Array.from({ length: n }, () => this.pool[Math.floor(this.rand() * this.pool.length)]!);
  }
}

/** `tree`'s nodes in a random order that keeps every parent before its children. */
export function shuffled(tree: TokenTree, rand: () => number): TokenTree {
  const placed = new Map<number, number>();
  const out: TokenTree = { tokens: [], parents: [] };
  const ready = tree.parents.flatMap((p, i) => (p < 0 ? [i] : []));
  while (ready.length > 0) {
    const node = ready.splice(Math.floor(rand() * ready.length), 1)[0]!;
    placed.set(node, out.tokens.length);
    out.tokens.push(tree.tokens[node]!);
    const parent = tree.parents[node]!;
    out.parents.push(parent < 0 ? -1 : placed.get(parent)!);
    tree.parents.forEach((p, i) => {
      if (p === node) ready.push(i);
    });
  }
  return out;
}

/** The longest root path of `tree` that spells a prefix of `tokens`. */
export function rootPathTokens(tree: TokenTree, tokens: readonly Token[]): Token[] {
  const out: Token[] = [];
  let at = -1;
  for (const token of tokens) {
    const child = tree.tokens.findIndex((t, i) => tree.parents[i] === at && t === token);
    if (child < 0) break;
    out.push(token);
    at = child;
  }
  return out;
}
