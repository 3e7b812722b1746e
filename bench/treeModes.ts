// Chain and tree side by side (`npm run bench -- --trees on`, regime 1 and the edits regime): where the
// target verifies token trees (src/inference/treeVerification.ts: its unified KV context), each
// lossless mode runs twice on the same fixed verify shape B — its sources' tree offers verified as
// trees, and as their likeliest chains (SpeculationSettings.verifyTrees false) — each with a policy of
// its own kept across the tasks; the suffix proposer (which offers trees) beside the mode's sources. On a CPU the shape is forced (a CPU has no fixed shape of its own:
// there a batch costs about what it holds, so both are slower than Draftline's default there, the tree
// the more); the counted tokens per target evaluation are the hardware-independent figure.
import type { DecodeOverrides, InferenceSession } from '../src/inference/inferenceSession';
import { DEFAULT_SPECULATION, replaysGraphs } from '../src/inference/inferenceSession';
import type { DecodeMode } from '../src/shared/decoding';
import type { DecoderStats } from '../src/shared/generationStats';
import type { SpeculationSettings } from '../src/shared/settings';
import { SpeculationPolicy } from '../src/speculation/policy';
import { fmt } from './stats';

/** A lossless mode run both ways: `hybrid chain`, `hybrid tree`. */
export type TreeVariant = `${DecodeMode} ${'chain' | 'tree'}`;

/** `--trees`: Draftline's default (trees where the target computes on CUDA), forced on, or off. */
export type TreesOption = 'auto' | 'on' | 'off';

export class TreeSideBySide {
  private readonly settings = new Map<TreeVariant, SpeculationSettings>();
  private readonly policies = new Map<TreeVariant, SpeculationPolicy>();

  private constructor(
    readonly size: number,
    readonly modes: TreeVariant[],
    graphReplay: boolean,
    base: SpeculationSettings,
  ) {
    for (const mode of modes) {
      const settings: SpeculationSettings = { ...base, graphReplay, verifyShape: 'fixed', fixedShapeSize: size, verifyTrees: mode.endsWith(' tree') };
      this.settings.set(mode, settings);
      this.policies.set(mode, new SpeculationPolicy(settings));
    }
  }

  /** The variants of `baseModes` where `session`'s target verifies trees, on `base`'s settings (the run's: adaptive or not); null elsewhere (nothing to compare). */
  static for(session: InferenceSession, baseModes: readonly DecodeMode[], size: number, base: SpeculationSettings = DEFAULT_SPECULATION): TreeSideBySide | null {
    if (!session.info.treeVerification?.used || baseModes.length === 0) return null;
    return new TreeSideBySide(
      size,
      baseModes.flatMap((m): TreeVariant[] => [`${m} chain`, `${m} tree`]),
      replaysGraphs(session.info),
      base,
    );
  }

  static isVariant(mode: string): mode is TreeVariant {
    return /^(ngram|draft|hybrid|copy) (chain|tree)$/.test(mode);
  }

  /** The decode mode a variant runs. */
  static baseMode(mode: TreeVariant): DecodeMode {
    return mode.split(' ')[0] as DecodeMode;
  }

  /**
   * What a request of the variant decodes with: its settings, its own policy, and the suffix proposer
   * beside the mode's own sources (the one that offers trees).
   */
  overrides(mode: TreeVariant): DecodeOverrides {
    const speculation = this.settings.get(mode)!;
    return { speculation, policy: this.policies.get(mode)!, suffix: true };
  }
}

/** A run's tree figures: steps that verified a tree, their nodes and the nodes kept (every source's). */
export function treeCounts(stats: DecoderStats): { steps: number; nodes: number; accepted: number } {
  const out = { steps: stats.speculation.treeSteps ?? 0, nodes: 0, accepted: 0 };
  for (const s of Object.values(stats.speculation.bySource)) {
    out.nodes += s.treeNodes ?? 0;
    out.accepted += s.treeAccepted ?? 0;
  }
  return out;
}

/** The side-by-side table: per base mode, tokens per evaluation and decode speed of chain and tree. */
export function sideBySideTable(
  size: number,
  bases: readonly DecodeMode[],
  rows: readonly { mode: string; tasks: number; tokensPerEvaluation: number | null; tokensPerSecond: number | null; identical: number; ties?: number }[],
  trees: ReadonlyMap<string, { steps: number; nodes: number; accepted: number }>,
  /** The target's backend has no fixed shapes of its own (no graph replay): the bench forced it. */
  forcedShape: boolean,
): string[] {
  const ratio = (a: number | null | undefined, b: number | null | undefined) => (a && b ? `${fmt(a / b, 2)}x` : '-');
  const lines = [
    `Chain and tree side by side on a fixed verify shape of ${size} (the same sources; their tree offers verified as trees, or as their likeliest chains).${forcedShape ? ' Here the fixed shape is forced (this backend has none of its own): a batch costs about what it holds, so both run slower than Draftline does here (variable shapes, chains), the tree the more; tokens per target evaluation is the figure that carries to a GPU.' : ''}`,
    '',
    '| mode | tok/eval chain | tok/eval tree | tree / chain | tok/s chain | tok/s tree | tree / chain | tree steps | tree nodes kept | identical (chain, tree) |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const base of bases) {
    const chain = rows.find((r) => r.mode === `${base} chain`);
    const tree = rows.find((r) => r.mode === `${base} tree`);
    if (!chain || !tree) continue;
    const t = trees.get(`${base} tree`) ?? { steps: 0, nodes: 0, accepted: 0 };
    const identical = (r: typeof chain) => `${r.identical}/${r.tasks}${r.ties ? ` (+${r.ties} at ties)` : ''}`;
    lines.push(
      `| ${base} | ${fmt(chain.tokensPerEvaluation, 2)} | ${fmt(tree.tokensPerEvaluation, 2)} | ${ratio(tree.tokensPerEvaluation, chain.tokensPerEvaluation)} | ${fmt(chain.tokensPerSecond, 0)} | ${fmt(tree.tokensPerSecond, 0)} | ${ratio(tree.tokensPerSecond, chain.tokensPerSecond)} | ${t.steps} | ${t.nodes ? `${t.accepted}/${t.nodes}` : '-'} | ${identical(chain)}, ${identical(tree)} |`,
    );
  }
  return [...lines, ''];
}
