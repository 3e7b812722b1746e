// The tree lab's counting (bench/treeLab.ts): a generation replayed step by step against the target's
// known greedy output, each step verifying what a proposer offers (a chain or a tree) in one target
// evaluation, and each step's cost weighed by a cost table: the target's V(b)/V(1) and the draft
// batches it took. Pure: no model, no clock.
import type { Token } from '../src/shared/decoding';
import { acceptedPath, type TokenTree } from './tokenTree';

/** What a source offers for one step. */
export interface StepProposal {
  tree: TokenTree;
  /**
   * Draft batches after the step's first (the first evaluates the accepted tokens the draft has not
   * seen: the catch-up, counted by the replay): sizes in order. Absent: the draft did not run.
   */
  draftLevels?: number[];
  /** Per tree node: the draft evaluated its token (its KV stays the draft's once accepted). */
  expanded?: boolean[];
}

export interface StepContext {
  /** Output tokens accepted so far (the last one is the pending token the batch starts with). */
  position: number;
  /** The prompt and the accepted output. */
  history: readonly Token[];
  /** Nodes the batch has room for after the pending token: B − 1. */
  budget: number;
}

/** A proposer replayed: offers a tree for a step, and hears which of its nodes were accepted. */
export interface ReplaySource {
  propose(step: StepContext): StepProposal | Promise<StepProposal>;
  /** `accepted`: the nodes of the accepted path; `next`: the target's token after it (none at the output's end). */
  record?(step: StepContext, proposal: StepProposal, accepted: number[], next: Token | undefined): void;
}

/**
 * A cost table, in evaluations of one target token: `verify(b)` is V(b)/V(1), `draft(b)` a draft
 * batch of b tokens. `fixedShape`: every step verifies a batch of B whatever it holds (a graph
 * backend's fixed shape); else the pending token and the proposal's nodes (a CPU's variable shape).
 */
export interface CostTable {
  name: string;
  fixedShape: boolean;
  verify(batch: number): number;
  draft(batch: number): number;
}

/** The replay of one generation by one source at one batch size. */
export interface ReplayCount {
  /** Output tokens (the first one the prompt's evaluation yields). */
  tokens: number;
  /** Target evaluations: the prompt's and one a step. */
  evaluations: number;
  steps: number;
  /** Tree nodes verified (padding to a fixed shape not counted). */
  nodes: number;
  /** Tokens the draft evaluated, and in how many batches (a level-by-level expansion: one batch a depth). */
  draftTokens: number;
  draftBatches: number;
  /** Cost of the steps by table name (the prompt's evaluation left out, as for plain decoding). */
  cost: Record<string, number>;
  /** Plain decoding's cost of the same tokens: one evaluation of one token each after the first. */
  plainCost: Record<string, number>;
}

/**
 * Replays a generation whose target output is `truth` after `prompt`: each step the source offers
 * a tree of at most `batch` − 1 nodes after the pending token; the longest root path equal to the
 * truth is accepted, and the target's own token after it, so the step advances accepted + 1. The
 * draft's catch-up is counted as the step's first draft batch: the accepted tokens since the draft
 * last evaluated its own accepted path.
 */
export async function replayGeneration(prompt: readonly Token[], truth: readonly Token[], source: ReplaySource, batch: number, tables: readonly CostTable[]): Promise<ReplayCount> {
  const count: ReplayCount = {
    tokens: truth.length,
    evaluations: truth.length > 0 ? 1 : 0,
    steps: 0,
    nodes: 0,
    draftTokens: 0,
    draftBatches: 0,
    cost: Object.fromEntries(tables.map((t) => [t.name, 0])),
    plainCost: Object.fromEntries(tables.map((t) => [t.name, Math.max(0, truth.length - 1) * t.verify(1)])),
  };
  const history: Token[] = [...prompt, ...truth.slice(0, 1)];
  // History tokens whose KV the draft holds: the prompt, before the first step.
  let draftSynced = prompt.length;
  let position = Math.min(1, truth.length);
  while (position < truth.length) {
    const step: StepContext = { position, history, budget: batch - 1 };
    const proposal = await source.propose(step);
    const tree = proposal.tree;
    if (tree.tokens.length > batch - 1) throw new Error(`a proposal of ${tree.tokens.length} nodes does not fit a batch of ${batch}`);
    const path = acceptedPath(tree, truth, position);
    source.record?.(step, proposal, path, truth[position + path.length]);
    count.steps++;
    count.evaluations++;
    count.nodes += tree.tokens.length;
    const verified = tables.map((t) => t.verify(t.fixedShape ? batch : 1 + tree.tokens.length));
    if (proposal.draftLevels) {
      const levels = [history.length - draftSynced, ...proposal.draftLevels];
      count.draftTokens += levels.reduce((n, b) => n + b, 0);
      count.draftBatches += levels.length;
      tables.forEach((t, i) => {
        verified[i]! += levels.reduce((n, b) => n + t.draft(b), 0);
      });
      // The draft keeps the KV of its own accepted nodes, as far as it evaluated them in a row.
      let kept = 0;
      while (kept < path.length && proposal.expanded?.[path[kept]!]) kept++;
      draftSynced = history.length + kept;
    }
    tables.forEach((t, i) => {
      count.cost[t.name]! += verified[i]!;
    });
    const advance = Math.min(path.length + 1, truth.length - position);
    history.push(...truth.slice(position, position + advance));
    position += advance;
  }
  return count;
}

/** Sums of replays (one source, one batch size, many generations), and the per-generation speedups. */
export interface ReplayTally extends ReplayCount {
  cases: number;
  /** Plain's cost over the source's, per generation with at least one step, by table. */
  speedups: Record<string, number[]>;
  /** Tokens per evaluation per generation. */
  tokensPerEvaluation: number[];
}

export function emptyTally(tables: readonly CostTable[]): ReplayTally {
  const zero = () => Object.fromEntries(tables.map((t) => [t.name, 0]));
  return {
    cases: 0,
    tokens: 0,
    evaluations: 0,
    steps: 0,
    nodes: 0,
    draftTokens: 0,
    draftBatches: 0,
    cost: zero(),
    plainCost: zero(),
    speedups: Object.fromEntries(tables.map((t) => [t.name, []])),
    tokensPerEvaluation: [],
  };
}

export function addToTally(tally: ReplayTally, r: ReplayCount): void {
  tally.cases++;
  tally.tokens += r.tokens;
  tally.evaluations += r.evaluations;
  tally.steps += r.steps;
  tally.nodes += r.nodes;
  tally.draftTokens += r.draftTokens;
  tally.draftBatches += r.draftBatches;
  for (const name of Object.keys(r.cost)) {
    tally.cost[name]! += r.cost[name]!;
    tally.plainCost[name]! += r.plainCost[name]!;
    if (r.steps > 0) tally.speedups[name]!.push(r.plainCost[name]! / r.cost[name]!);
  }
  if (r.evaluations > 0) tally.tokensPerEvaluation.push(r.tokens / r.evaluations);
}

/** Tokens per target evaluation over all generations (the prompt's evaluation counted, as regime 1 counts it). */
export const tokensPerEvaluation = (t: ReplayTally): number => (t.evaluations ? t.tokens / t.evaluations : Number.NaN);

/** Plain's cost over the source's, all generations pooled. */
export const pooledSpeedup = (t: ReplayTally, table: string): number => (t.cost[table] ? t.plainCost[table]! / t.cost[table]! : Number.NaN);

/** V(b)/V(1) from measured sizes: linear between them, at the last two's slope beyond, never below 1. */
export function interpolatedRatio(measured: Readonly<Record<number, number>>): (batch: number) => number {
  const points = Object.entries(measured)
    .map(([b, ms]) => [Number(b), ms] as const)
    .sort((a, b) => a[0] - b[0]);
  const one = measured[1];
  if (one === undefined || !(one > 0) || points.length < 2) throw new Error('a measured cost needs V(1) and one larger size');
  return (batch) => {
    let i = 1;
    while (i < points.length - 1 && points[i]![0] < batch) i++;
    const [b0, v0] = points[i - 1]!;
    const [b1, v1] = points[i]!;
    const v = v0 + ((v1 - v0) * (batch - b0)) / (b1 - b0);
    return Math.max(1, v / one);
  };
}

/** Each size's cost at least the largest of the smaller sizes'. */
export function monotoneCurve(ms: Readonly<Record<number, number>>): Record<number, number> {
  let floor = 0;
  const out: Record<number, number> = {};
  for (const b of Object.keys(ms)
    .map(Number)
    .sort((x, y) => x - y)) {
    floor = Math.max(floor, ms[b]!);
    out[b] = floor;
  }
  return out;
}
