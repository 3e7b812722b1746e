// Tree or chain, per source, on a fixed verify shape: at the same B the batch costs about the same
// either way (the tree step adds its path sequences' bookkeeping and a wider attention mask), so the
// choice is the expected tokens a step keeps over its measured cost. A tree step tells both figures:
// the tree's accepted path, and what its likeliest chain would have kept given the target's tokens
// (treeStep.ts chainOutcome); a chain step only the chain's.
import type { SourceId } from '../shared/decoding';
import { RetrySchedule } from './retrySchedule';

/** Weight of an older step against the latest. */
const DECAY = 0.95;
/** Steps between tries of trees for a source whose chain won (doubling up to the max). */
export const TREE_RETRY_FIRST = 8;
export const TREE_RETRY_MAX = 128;

/** A decayed mean. */
class Mean {
  private sum = 0;
  private weight = 0;
  add(value: number): void {
    this.sum = this.sum * DECAY + value;
    this.weight = this.weight * DECAY + 1;
  }
  get value(): number | undefined {
    return this.weight > 0 ? this.sum / this.weight : undefined;
  }
}

interface SourceTrees {
  /** Tokens a step keeps (the target's own token included): of the tree, and of its likeliest chain. */
  tree: Mean;
  chain: Mean;
  retry: RetrySchedule;
}

export class TreeChoice {
  private readonly sources = new Map<SourceId, SourceTrees>();
  /** ms of warm fixed-shape steps by kind and size (the same machine, the same shape: their ratio is the tree's extra cost). */
  private readonly stepMs = { tree: new Map<number, Mean>(), chain: new Map<number, Mean>() };

  private source(id: SourceId): SourceTrees {
    let s = this.sources.get(id);
    if (!s) {
      s = { tree: new Mean(), chain: new Mean(), retry: new RetrySchedule(TREE_RETRY_FIRST, TREE_RETRY_MAX) };
      this.sources.set(id, s);
    }
    return s;
  }

  /** A tree step of `id`: `treeAccepted` of its nodes kept, where its likeliest chain would have kept `chainAccepted`. */
  recordTree(id: SourceId, treeAccepted: number, chainAccepted: number): void {
    const s = this.source(id);
    s.tree.add(treeAccepted + 1);
    s.chain.add(chainAccepted + 1);
  }

  /** A chain step of `id` (its offer was a tree, verified as its chain): `accepted` kept. */
  recordChain(id: SourceId, accepted: number): void {
    this.source(id).chain.add(accepted + 1);
  }

  /** A warm fixed-shape step of `size` tokens took `ms`. */
  recordStepMs(kind: 'tree' | 'chain', size: number, ms: number): void {
    if (!(ms >= 0)) return;
    const byKind = this.stepMs[kind];
    let mean = byKind.get(size);
    if (!mean) byKind.set(size, (mean = new Mean()));
    mean.add(ms);
  }

  /** A tree step's cost over a chain step's at `size` (1 until both were measured). */
  costRatio(size: number): number {
    const tree = this.stepMs.tree.get(size)?.value;
    const chain = this.stepMs.chain.get(size)?.value;
    return tree !== undefined && chain !== undefined && chain > 0 ? tree / chain : 1;
  }

  /**
   * Whether `id`'s tree is verified at `size` rather than its likeliest chain: until a tree step of it
   * was measured, yes (a tree holds its chain: on a fixed shape it keeps at least as much); then when
   * its tokens per step over their cost are not below the chain's; and now and then again after the
   * chain won, so the estimate can recover.
   */
  prefersTree(id: SourceId, size: number): boolean {
    const s = this.source(id);
    const tree = s.tree.value;
    const chain = s.chain.value;
    if (tree === undefined || chain === undefined) return true;
    if (tree / this.costRatio(size) >= chain) {
      s.retry.reset();
      return true;
    }
    return s.retry.due();
  }

  /** What it has learned, per source (Show Stats). */
  snapshot(size: number): Record<SourceId, { tree: number; chain: number; verifies: 'tree' | 'chain' }> {
    const out: Record<SourceId, { tree: number; chain: number; verifies: 'tree' | 'chain' }> = {};
    for (const [id, s] of this.sources) {
      const tree = s.tree.value;
      const chain = s.chain.value;
      if (tree === undefined || chain === undefined) continue;
      out[id] = { tree, chain, verifies: tree / this.costRatio(size) >= chain ? 'tree' : 'chain' };
    }
    return out;
  }
}
