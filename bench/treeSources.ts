// The tree lab's sources (bench/treeLab.ts), each offering a chain (what Draftline verifies today) or
// a tree for a step of a replayed generation: the draft model's greedy chain and EAGLE-2's dynamic
// tree from its real top-k distributions, today's n-gram proposer and a suffix source that merges
// every occurrence of the matched context, the next-edit window copy and a tree of the copy plus its
// alternatives, and hybrids of them.
import type { LlamaContextSequence } from '../src/llama/llamaTypes';
import { HistoryIndex, type NgramIndex, type SuffixMatches, suffixMatches } from '../src/ngram';
import { SUFFIX_MAX_OCCURRENCES } from '../src/inference/documentNgrams';
import { SuffixRates } from '../src/speculation/suffixAcceptance';
import { chainWithLeaves } from '../src/speculation/draftModelProposer';
import { type SuffixOffer, SuffixProposer } from '../src/speculation/suffixProposer';
import type { Token } from '../src/shared/decoding';
import type { NgramProposer } from '../src/speculation/ngramProposer';
import type { AcceptanceTracker } from '../src/speculation/acceptanceTracker';
import type { CopyAcceptance } from '../src/speculation/copyAcceptance';
import { commonPrefixLength } from '../src/speculation/greedyEvaluator';
import { chainOutcome } from '../src/speculation/treeStep';
import type { WindowCopyProposer } from '../src/speculation/windowCopyProposer';
import {
  acceptTree,
  addContinuations,
  chainTree,
  type Continuation,
  type DraftTree,
  draftTreePrefix,
  eagleTree,
  expansionLevels,
  nodeDepths,
  ScoredTrie,
  type TokenTree,
  type TopK,
} from './tokenTree';
import type { ReplaySource, StepContext, StepProposal } from './treeReplay';

/**
 * The suffix source's match lengths: up to 8 tokens as today's n-gram proposer, down to one (the
 * proposer's own: weak guesses scored as weak); today's n-gram proposer needs 3 (DEFAULT_SPECULATION).
 */
export const SUFFIX_MIN_N = 1;
export const NGRAM_MIN_N = 3;
export const SUFFIX_MAX_N = 8;

/**
 * The draft model's top-k next tokens after the prompt and any output prefix, read from a sequence of
 * its own (node-llama-cpp's probabilities), memoised by the prefix: the lab may ask for hypothetical
 * paths, and each is evaluated once. `evaluatedTokens` counts what the lab spent, not what a step
 * would: a step's draft cost is counted from the tree's shape (treeReplay.ts).
 */
export class DraftDistributions {
  private readonly memo = new Map<string, TopK>();
  evaluatedTokens = 0;
  evaluateCalls = 0;
  evaluateMs = 0;

  constructor(
    private readonly sequence: LlamaContextSequence,
    private readonly prompt: readonly Token[],
    private readonly k: number,
  ) {}

  async at(output: readonly Token[]): Promise<TopK> {
    const key = output.join(',');
    const known = this.memo.get(key);
    if (known) return known;
    const full = [...this.prompt, ...output];
    const cached = this.sequence.contextTokens as readonly Token[];
    // At least the last token is evaluated again: its output is the distribution asked for.
    const keep = Math.min(commonPrefixLength(cached, full), full.length - 1);
    if (keep < cached.length) await this.sequence.eraseContextTokenRanges([{ start: keep, end: this.sequence.nextTokenIndex }]);
    const rest = full.slice(keep);
    const firstOutput = Math.max(keep, this.prompt.length - 1);
    // Distributions are read where none is known yet (a path evaluated again after a truncation has its own).
    const keyAt = (i: number) => full.slice(this.prompt.length, keep + i + 1).join(',');
    const wanted = rest.map((_, i) => keep + i >= firstOutput && (i === rest.length - 1 || !this.memo.has(keyAt(i))));
    const items = rest.map((token, i) => (wanted[i] ? ([token, { generateNext: { token: true, probabilities: true, options: { temperature: 0 } } }] as const) : token));
    const t0 = performance.now();
    const results = await this.sequence.controlledEvaluate(items as never);
    this.evaluateMs += performance.now() - t0;
    this.evaluateCalls++;
    this.evaluatedTokens += rest.length;
    for (let i = 0; i < rest.length; i++) {
      if (!wanted[i]) continue;
      const next = results[i]?.next as { probabilities?: Map<Token, number> } | undefined;
      if (!next?.probabilities) throw new Error(`the draft gave no probabilities at position ${keep + i}`);
      const top: TopK = { tokens: [], probs: [] };
      for (const [token, p] of next.probabilities) {
        if (top.tokens.length >= this.k) break;
        top.tokens.push(token);
        top.probs.push(p);
      }
      this.memo.set(keyAt(i), top);
    }
    return this.memo.get(key)!;
  }
}

/** Where the draft's distributions come from at a step: the output accepted so far, then a path. */
export type DraftAt = (position: number, path: readonly Token[]) => Promise<TopK>;

/**
 * The draft's greedy chain, as Draftline's DraftModelProposer drafts it: its most likely token after
 * each, up to `budget`, stopping once its own probability falls below `minConfidence` (0: never).
 * Each drafted token's evaluation is a draft batch of one.
 */
export async function draftChain(at: DraftAt, step: StepContext, minConfidence: number): Promise<StepProposal> {
  const path: Token[] = [];
  let calls = 0;
  while (path.length < step.budget) {
    const top = await at(step.position, path);
    calls++;
    if (top.tokens.length === 0 || top.probs[0]! < minConfidence) break;
    path.push(top.tokens[0]!);
  }
  // Call 0 evaluates the pending token (the step's first batch); call j + 1 evaluated node j.
  const expanded = path.map((_, j) => j + 1 < calls);
  return { tree: chainTree(path), draftLevels: expanded.filter(Boolean).map(() => 1), expanded };
}

/**
 * The draft's greedy chain (as draftChain drafts it) with, at each of its depths, the draft's next
 * most likely tokens as leaves: the distributions the chain's own draft batches computed, so the tree
 * costs no draft batch more than the chain. The chain's nodes first, then the leaves by their path's
 * draft probability, up to `budget`.
 */
export async function draftChainWithLeaves(at: DraftAt, step: StepContext, minConfidence: number, k: number): Promise<StepProposal> {
  const path: Token[] = [];
  const tops: TopK[] = [];
  while (path.length < step.budget) {
    const top = await at(step.position, path);
    tops.push(top);
    if (top.tokens.length === 0 || top.probs[0]! < minConfidence) break;
    path.push(top.tokens[0]!);
  }
  // The draft's k likeliest at each depth, as DraftModelProposer reads them.
  const tree = chainWithLeaves(
    path,
    tops.map((top) => ({ tokens: top.tokens.slice(0, k), probabilities: top.probs.slice(0, k) })),
    step.budget,
  );
  // Call 0 evaluated the pending token, call j + 1 chain node j; no leaf was evaluated.
  const expanded = tree.tokens.map((_, j) => j < path.length && j + 1 < tops.length);
  return { tree, draftLevels: path.filter((_, j) => j + 1 < tops.length).map(() => 1), expanded };
}

/** EAGLE-2's trees at each position, built once to the largest batch (a smaller batch's is a prefix). */
export class DraftTrees {
  private readonly built = new Map<string, Promise<DraftTree>>();

  constructor(
    private readonly at: DraftAt,
    private readonly maxNodes: number,
  ) {}

  tree(position: number, k: number): Promise<DraftTree> {
    const key = `${position}:${k}`;
    let t = this.built.get(key);
    if (!t) {
      t = eagleTree((path) => this.at(position, path), { k, maxNodes: this.maxNodes });
      this.built.set(key, t);
    }
    return t;
  }
}

/** EAGLE-2's tree of `budget` nodes at the step, with the draft batches a level-by-level expansion takes. */
export async function eagleProposal(trees: DraftTrees, step: StepContext, k: number): Promise<StepProposal> {
  const { tree, expanded } = draftTreePrefix(await trees.tree(step.position, k), step.budget);
  return { tree, draftLevels: expansionLevels(nodeDepths(tree), expanded), expanded };
}

/** Tokens of `path` that the accepted nodes of `tree` agree with, from the root. */
export function agreedPrefix(tree: TokenTree, accepted: readonly number[], path: readonly Token[]): number {
  return commonPrefixLength(
    accepted.map((i) => tree.tokens[i]!),
    path,
  );
}

/**
 * The suffix source: Draftline's suffix proposer (src/speculation/suffixProposer.ts), as it ships: the
 * history's and the index's occurrences of the longest matched ending (ngram/suffixMatches.ts), merged
 * by frequency, scored with the rates it learns per match length (kept across generations, as a
 * policy keeps them), its tree the best B − 1 nodes. `minN` leaves out matches shorter than that (the
 * n-gram proposer's rule, to see what the short ones add). It learns from its chain: the tokens of
 * its likeliest path the accepted path agreed with.
 */
export class SuffixTreeSource implements ReplaySource {
  readonly rates = new SuffixRates();
  private readonly history = new HistoryIndex();
  private last: SuffixOffer | null = null;
  readonly proposer: SuffixProposer;

  constructor(
    /** The index the source searches (the open document's, as the session's index holds it) and the document's key. */
    readonly index: () => { documents: NgramIndex | null; key?: string },
    /** Shortest match proposed after. */
    readonly minN = SUFFIX_MIN_N,
  ) {
    this.proposer = new SuffixProposer((history, maxLen) => this.candidates(history, maxLen), this.rates);
  }

  /** The source's candidates after `history`, continuations of up to `maxLen` tokens (null: none of minN tokens or more). */
  candidates(history: readonly Token[], maxLen: number): SuffixMatches | null {
    const { documents, key } = this.index();
    const m = suffixMatches(this.history, documents, history, { maxN: SUFFIX_MAX_N, maxLen, limit: SUFFIX_MAX_OCCURRENCES, preferKey: key });
    return m && m.matchLength >= this.minN ? m : null;
  }

  /** The rates' chance per depth after a match of `matchLength` (what a node's share is scaled by). */
  reach(matchLength: number, depth: number): number[] {
    return this.rates.reach(matchLength, depth);
  }

  /** The source's whole trie after `history` (its candidates, scored), continuations of up to `budget` tokens. */
  trie(history: readonly Token[], budget: number): ScoredTrie {
    return this.proposer.candidates(history, budget)?.trie ?? new ScoredTrie();
  }

  propose(step: StepContext): StepProposal {
    this.last = this.proposer.offer(step.history, step.budget);
    return { tree: this.last?.tree ?? chainTree([]) };
  }

  record(_step: StepContext, proposal: StepProposal, accepted: number[], next: Token | undefined): void {
    if (this.last) this.learnFromTree(this.last, proposal.tree, accepted, next);
  }

  /** What an offer's chain proposed and how much of it the accepted path kept (verified as a chain). */
  learn(offer: SuffixOffer, agreed: number): void {
    this.rates.record(offer, offer.chain.length, agreed);
  }

  /**
   * What an offer's chain would have kept, learned from a step that verified a tree holding `offer`'s
   * nodes (or some of them) as the decoder learns it (treeStep.ts chainOutcome): verified only as far
   * as the step could check.
   */
  learnFromTree(offer: SuffixOffer, tree: TokenTree, accepted: readonly number[], next: Token | undefined): void {
    const tokens = accepted.map((i) => tree.tokens[i]!);
    if (next !== undefined) {
      const outcome = chainOutcome(offer.chain, tokens, next);
      if (outcome.proposed > 0) this.rates.record(offer, outcome.proposed, outcome.accepted);
      return;
    }
    // At the output's end no token follows: the chain counts as verified as far as the accepted path.
    const kept = commonPrefixLength(offer.chain, tokens);
    if (kept > 0) this.rates.record(offer, kept, kept);
  }

  /** The latest offer (what `learn` is told about by a source that builds on this one). */
  get lastOffer(): SuffixOffer | null {
    return this.last;
  }

  /** Its offer at a step, remembered for learning (for a source that builds on this one). */
  offer(history: readonly Token[], budget: number): SuffixOffer | null {
    this.last = this.proposer.offer(history, budget);
    return this.last;
  }
}

/** The suffix source's chain alone (its likeliest path, what Draftline verifies where trees are not), learning from it. */
export function suffixChain(suffix: SuffixTreeSource): ReplaySource {
  return {
    propose: (step) => ({ tree: chainTree(suffix.offer(step.history, step.budget)?.chain ?? []) }),
    record: (_step, _proposal, accepted) => {
      if (suffix.lastOffer) suffix.learn(suffix.lastOffer, accepted.length);
    },
  };
}

/** A chain from a proposer of today's interface (the n-gram proposer, a ported llama-server one). */
export function chainSource(find: (history: readonly Token[], maxLen: number) => { tokens: readonly Token[] } | null, record?: (proposed: number, accepted: number) => void): ReplaySource {
  return {
    propose: (step) => ({ tree: chainTree(find(step.history, step.budget)?.tokens ?? []) }),
    record: record ? (_step, proposal, accepted) => record(proposal.tree.tokens.length, accepted.length) : undefined,
  };
}

/** Draftline's fill-in-the-middle hybrid chain: the n-gram match when there is one, else the draft's greedy chain. */
export function hybridChain(ngram: NgramProposer, at: DraftAt, minConfidence: number): ReplaySource {
  return {
    propose: async (step) => {
      const match = ngram.offer(step.history, step.budget);
      if (match && match.tokens.length > 0) return { tree: chainTree(match.tokens) };
      return draftChain(at, step, minConfidence);
    },
  };
}

/**
 * Draftline's fill-in-the-middle hybrid chain with the suffix proposer in the n-gram one's place, as
 * the hybrid mode runs it: the suffix's chain where its first guess is at least as likely as the
 * draft's measured per-token acceptance (its floor beside the draft), else the draft's greedy chain.
 */
export function hybridSuffixChain(suffix: SuffixTreeSource, at: DraftAt, minConfidence: number, draftRate: AcceptanceTracker): ReplaySource {
  let used: 'suffix' | 'draft' = 'draft';
  return {
    propose: async (step) => {
      const offer = suffix.offer(step.history, step.budget);
      if (offer && offer.scores[0]! >= draftRate.rate('draft')) {
        used = 'suffix';
        return { tree: chainTree(offer.chain) };
      }
      used = 'draft';
      return draftChain(at, step, minConfidence);
    },
    record: (_step, proposal, accepted) => {
      if (used === 'suffix' && suffix.lastOffer) suffix.learn(suffix.lastOffer, accepted.length);
      else if (proposal.tree.tokens.length > 0) draftRate.record('draft', proposal.tree.tokens.length, accepted.length);
    },
  };
}

/**
 * The fill-in-the-middle hybrid tree: the suffix source's nodes and EAGLE-2's in one trie within the
 * budget. `by score`: every node by its estimated chance (the draft's cumulative probability, the
 * suffix's decayed frequency), the draft's tree built to the whole budget to be compared. `suffix
 * first`: the suffix's best nodes first where it matches, the draft's tree filling what is left (the
 * draft only runs, and only as far, as the rest needs).
 */
export function hybridTree(suffix: SuffixTreeSource, trees: DraftTrees, k: number, rule: 'by score' | 'suffix first'): ReplaySource {
  let lastOffer: SuffixOffer | null = null;
  return {
    propose: async (step) => {
      const own = suffix.trie(step.history, step.budget);
      lastOffer = suffix.offer(step.history, step.budget);
      const ranked = own.best(step.budget);
      const trie = new ScoredTrie();
      // Suffix first: above any draft probability.
      const lift = rule === 'suffix first' ? 1 : 0;
      const placed: number[] = [];
      for (let i = 0; i < ranked.tree.tokens.length; i++) {
        const parent = ranked.tree.parents[i]!;
        placed.push(trie.addNode(parent < 0 ? -1 : placed[parent]!, ranked.tree.tokens[i]!, own.scores[ranked.from[i]!]! + lift));
      }
      const room = step.budget - ranked.tree.tokens.length;
      if (rule === 'suffix first' && room === 0) return { tree: trie.best(step.budget).tree };
      const full = await trees.tree(step.position, k);
      // By score, the draft's whole tree competes; suffix first, EAGLE's nodes in order until the rest holds new ones.
      let draftNodes = Math.min(step.budget, full.tokens.length);
      if (rule === 'suffix first') {
        let fresh = 0;
        draftNodes = 0;
        const at: (number | undefined)[] = [];
        while (draftNodes < full.tokens.length && fresh < room) {
          const parent = full.parents[draftNodes]!;
          const node = parent < 0 ? trie.child(-1, full.tokens[draftNodes]!) : at[parent] === undefined ? undefined : trie.child(at[parent]!, full.tokens[draftNodes]!);
          at.push(node);
          if (node === undefined) fresh++;
          draftNodes++;
        }
      }
      const drafted = draftTreePrefix(full, draftNodes);
      const at: number[] = [];
      for (let i = 0; i < drafted.tree.tokens.length; i++) {
        const parent = drafted.tree.parents[i]!;
        at.push(trie.addNode(parent < 0 ? -1 : at[parent]!, drafted.tree.tokens[i]!, full.scores[i]!, drafted.expanded[i]));
      }
      const best = trie.best(step.budget);
      return {
        tree: best.tree,
        draftLevels: expansionLevels(nodeDepths(drafted.tree), drafted.expanded),
        expanded: best.from.map((i) => trie.expanded[i]!),
      };
    },
    record: (_step, proposal, accepted, next) => {
      if (lastOffer) suffix.learnFromTree(lastOffer, proposal.tree, accepted, next);
    },
  };
}

/** The tokens from the root to node i. */
export function pathOf(tree: TokenTree, i: number): Token[] {
  const path: Token[] = [];
  for (let at = i; at >= 0; at = tree.parents[at]!) path.unshift(tree.tokens[at]!);
  return path;
}

/** How the window copy re-synchronises (WindowCopyProposer's defaults): the alternatives use the same rules. */
export const RESYNC = { maxSuffix: 8, nearBehind: 8, nearAhead: 64, nearMinMatch: 1, farMinMatch: 3 } as const;

/**
 * The other places the copy could resume: every position of the window after an occurrence of the
 * output's ending (one token near `near`, three elsewhere, as the window copy re-synchronises), but
 * `exclude` (where the copy itself is); each continuation weighted by its match length.
 */
export function resyncContinuations(output: readonly Token[], window: readonly Token[], options: { near?: number; exclude?: number; maxLen: number }): Continuation[] {
  const out: Continuation[] = [];
  const maxM = Math.min(RESYNC.maxSuffix, output.length);
  if (maxM === 0 || options.maxLen <= 0) return out;
  const end = output.length;
  for (let e = 1; e < window.length; e++) {
    if (e === options.exclude) continue;
    let m = 0;
    while (m < maxM && m < e && window[e - 1 - m] === output[end - 1 - m]) m++;
    if (m === 0) continue;
    const near = options.near !== undefined && e >= options.near - RESYNC.nearBehind && e <= options.near + RESYNC.nearAhead;
    if (m >= (near ? RESYNC.nearMinMatch : RESYNC.farMinMatch)) out.push({ tokens: window.slice(e, e + options.maxLen) as Token[], weight: m });
  }
  return out;
}

/** Along the copy, the depths at which alternatives branch off it (deeper, the copy's own chance dwarfs theirs). */
export const COPY_BRANCH_DEPTHS = 16;

/**
 * The next-edit window copy, as a chain (what Draftline verifies) or as a tree: the copy, scored by
 * the chance that it holds so far (CopyAcceptance's first-token rate and survival curve, learned over
 * the steps as the policy learns them), and at each of its first depths the alternatives should it be
 * wrong there: where else in the window it could resume (`resync`), and the suffix source's
 * continuations of the prompt, output and open document (`suffix`), merged by weight, each scored
 * chance-to-get-there × chance-the-copy-is-wrong-there × share. With neither, the chain. Without a
 * copy, the alternatives alone (and, in `fallbackChain`, today's n-gram chain: Draftline's hybrid).
 */
export class CopySource implements ReplaySource {
  private last: { tokens: readonly Token[]; inRun: boolean; agreement?: number } | null = null;
  private lastSuffix: SuffixOffer | null = null;

  constructor(
    private readonly copy: WindowCopyProposer,
    private readonly promptLength: number,
    private readonly window: readonly Token[],
    /** How the copy fared so far (kept across generations, as the policy keeps it). */
    private readonly acceptance: CopyAcceptance,
    private readonly options: { resync: boolean; suffix?: SuffixTreeSource; suffixRoot?: boolean; fallbackChain?: NgramProposer },
  ) {}

  propose(step: StepContext): StepProposal {
    const { resync, suffix, fallbackChain } = this.options;
    if (!resync && !suffix) {
      const copied = this.offer(step);
      if (copied.length === 0 && fallbackChain) return { tree: chainTree(fallbackChain.offer(step.history, step.budget)?.tokens ?? []) };
      return { tree: chainTree(copied) };
    }
    return { tree: this.trie(step).best(step.budget).tree };
  }

  /** The copy's offer at the step (the proposer follows the output as it is asked). */
  private offer(step: StepContext): Token[] {
    const offer = this.copy.offer(step.history, step.budget);
    this.last = offer ? { tokens: offer.tokens, inRun: offer.inRun ?? false, agreement: offer.agreement } : null;
    return offer ? [...offer.tokens] : [];
  }

  /** Every candidate of the step, scored: the copy and the alternatives along it (and the suffix's own at the root, `suffixRoot`). */
  trie(step: StepContext): ScoredTrie {
    const copied = this.offer(step);
    const { resync, suffix } = this.options;
    const trie = new ScoredTrie();
    // Chance that the copy is right through each depth.
    const reach = [1];
    for (let d = 1; d <= copied.length; d++) {
      reach.push(reach[d - 1]! * this.acceptance.depthRate(d, this.last!.inRun, this.last!.agreement));
    }
    const nodes = trie.addPath(copied, reach.slice(1));
    const pointer = this.copy.position;
    if (suffix) {
      // The suffix source's natural best guess here, to learn its rates from.
      this.lastSuffix = suffix.offer(step.history, step.budget);
      // By score: its own candidates at the root too, each by its own chance (the copy's among them where they agree).
      if (this.options.suffixRoot) {
        const own = suffix.trie(step.history, step.budget);
        const placed = new Map<number, number>();
        for (let i = 0; i < own.size; i++) copyInto(trie, own, i, placed);
      }
    }
    for (let j = 0; j <= Math.min(copied.length, COPY_BRANCH_DEPTHS); j++) {
      const holds = j < copied.length ? reach[j + 1]! / reach[j]! : 0;
      const scale = reach[j]! * (1 - holds);
      const maxLen = step.budget - j;
      if (!(scale > 0) || maxLen <= 0) continue;
      const history = j === 0 ? step.history : [...step.history, ...copied.slice(0, j)];
      const differs = (c: Continuation) => j >= copied.length || c.tokens[0] !== copied[j];
      const groups: { continuations: Continuation[]; decay?: number; reach?: number[] }[] = [];
      if (resync) {
        const output = history.slice(this.promptLength);
        const at = pointer === null ? undefined : pointer + j;
        groups.push({ continuations: resyncContinuations(output, this.window, { near: at, exclude: at, maxLen }).filter(differs), decay: this.acceptance.continuationRate(1, false) });
      }
      const found = suffix?.candidates(history, maxLen);
      if (suffix && found) {
        const continuations = found.continuations.map((tokens) => ({ tokens, weight: found.matchLength })).filter(differs);
        groups.push({ continuations, reach: suffix.reach(found.matchLength, maxLen) });
      }
      const total = groups.reduce((n, g) => n + g.continuations.reduce((m, c) => m + c.weight, 0), 0);
      for (const g of groups) {
        const weight = g.continuations.reduce((m, c) => m + c.weight, 0);
        if (weight > 0) addContinuations(trie, g.continuations, { parent: j === 0 ? -1 : nodes[j - 1], scale: (scale * weight) / total, decay: g.decay, reach: g.reach });
      }
    }
    return trie;
  }

  record(_step: StepContext, proposal: StepProposal, accepted: number[], next: Token | undefined): void {
    if (this.last && this.last.tokens.length > 0) {
      const agreed = agreedPrefix(proposal.tree, accepted, this.last.tokens);
      // The copy's tokens the tree kept (alternatives may take the place of its deepest).
      const proposed = acceptTree(proposal.tree, this.last.tokens, 0);
      this.copy.record(proposed, Math.min(agreed, proposed));
      this.acceptance.record(this.last.inRun, proposed, Math.min(agreed, proposed), this.last.agreement);
    }
    if (this.options.suffix && this.lastSuffix) this.options.suffix.learnFromTree(this.lastSuffix, proposal.tree, accepted, next);
  }
}

/** Node i of `from` (its ancestors first, as `from` holds them) into `to`, by its path; its score the higher of the two. */
function copyInto(to: ScoredTrie, from: ScoredTrie, i: number, placed = new Map<number, number>()): number {
  const known = placed.get(i);
  if (known !== undefined) return known;
  const parent = from.parents[i]!;
  const at = to.addNode(parent < 0 ? -1 : copyInto(to, from, parent, placed), from.tokens[i]!, from.scores[i]!, from.expanded[i]);
  placed.set(i, at);
  return at;
}

/**
 * What a tree of a source's candidates could accept at best: the output's longest path through the
 * source's whole candidate trie (no budget but depth), as a chain. Knows the output: a bound on the
 * source's candidates, not a source; the tree a builder keeps of them is at most this.
 */
export function candidateBound(inner: { trie(step: StepContext): ScoredTrie; record?: ReplaySource['record'] }, truth: readonly Token[]): ReplaySource {
  return {
    propose: (step) => {
      const trie = inner.trie(step);
      const path: Token[] = [];
      let at: number | undefined = -1;
      for (let d = 0; d < step.budget && step.position + d < truth.length; d++) {
        at = trie.child(at, truth[step.position + d]!);
        if (at === undefined) break;
        path.push(truth[step.position + d]!);
      }
      return { tree: chainTree(path) };
    },
    record: inner.record ? (step, proposal, accepted, next) => inner.record!(step, proposal, accepted, next) : undefined,
  };
}
