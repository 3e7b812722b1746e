// The next-edit replay counted under cost tables (bench/editReplay.ts countReplay): ours against
// llama-server's ported proposers on the same perfect output, the headroom of lengths chosen knowing
// the output, and the table the bench prints.
import { documentSuffixProposer } from '../src/inference/documentNgrams';
import { DEFAULT_SPECULATION } from '../src/inference/inferenceSession';
import { COPY_MAX_PROPOSAL } from '../src/speculation/copyAcceptance';
import { commonPrefixLength } from '../src/speculation/greedyEvaluator';
import { SpeculationPolicy } from '../src/speculation/policy';
import { type LookupProposer, offeredChain } from '../src/speculation/proposer';
import { WindowCopyProposer } from '../src/speculation/windowCopyProposer';
import { type CountedCase, countReplay, geometricMean, h100VerifyCost, type OwnVariant, tableVerifyCost } from './editReplay';
import { lengthsKnownVariant, STEP_KINDS, type StepKind } from './lengthHeadroom';
import { NgramModProposer, NgramModState, NgramSimpleProposer } from './llamaServerProposers';
import { fmt, median } from './stats';
import { mulberry32 } from '../testbed/ggufWriter';

/**
 * The replay's rivals, for one run over a corpus's cases: llama-server's two model-free spec types,
 * ported, with the server's defaults; ngram-mod's table kept across the cases, as one server slot
 * keeps it across requests.
 */
export function replayRivals(): Record<RivalName, (promptLength: number) => LookupProposer> {
  const modState = new NgramModState();
  return {
    'ngram-simple': () => new NgramSimpleProposer(),
    'ngram-mod': (promptLength: number) => new NgramModProposer(promptLength, modState),
  };
}
const RIVAL_NAMES = ['ngram-simple', 'ngram-mod'] as const;
type RivalName = (typeof RIVAL_NAMES)[number];

/**
 * Our other proposers on the same replay: the suffix proposer alone, and after the copy (as the hybrid
 * mode orders them: the copy first), over the prompt and the output (no index: the replay has no open
 * documents), each under an adaptive policy kept across the cases like the copy's.
 */
export const OWN_REPLAY_VARIANTS: Record<string, () => OwnVariant> = {
  'suffix (ours)': () => {
    const policy = new SpeculationPolicy({ ...DEFAULT_SPECULATION, adaptive: true });
    return { policy, proposers: () => [documentSuffixProposer(null, undefined, DEFAULT_SPECULATION, policy)] };
  },
  'copy + suffix (ours)': () => {
    const policy = new SpeculationPolicy({ ...DEFAULT_SPECULATION, adaptive: true });
    return { policy, proposers: copyThenSuffix(policy) };
  },
};

/** The window copy, then the suffix proposer scored with `policy`'s rates: 'copy + suffix (ours)'. */
function copyThenSuffix(policy: SpeculationPolicy): OwnVariant['proposers'] {
  return (promptLength, copySource, cursor) => [new WindowCopyProposer(copySource, promptLength, { cursor }), documentSuffixProposer(null, undefined, DEFAULT_SPECULATION, policy)];
}

/** 'copy + suffix (ours)' with the lengths of each kind of step known, and of every kind ('all'): bench/lengthHeadroom.ts. */
export const LENGTH_HEADROOM_VARIANTS: Record<StepKind | 'all', () => OwnVariant> = {
  ...(Object.fromEntries(STEP_KINDS.map((k) => [k, lengthsKnownVariant([k], copyThenSuffix)])) as Record<StepKind, () => OwnVariant>),
  all: lengthsKnownVariant(STEP_KINDS, copyThenSuffix),
};

export interface CountedReplay {
  table: string;
  cases: number;
  /** Plain's cost over ours and over each rival's (the ported ones and our other proposers), median over the cases. */
  copy: number;
  rivals: Record<string, number>;
  tokensPerEvaluation: number;
  rivalTokensPerEvaluation?: Record<string, number>;
  /** The headroom: the copy, and the copy with the suffix proposer, each length chosen knowing the output (countKnownLengths). */
  knownLengths?: Record<string, { speedup: number; tokensPerEvaluation: number }>;
  /** Geometric means over the cases of the same ratios: ours (`copy`) and each rival's. */
  geometricMean?: { copy: number; rivals: Record<string, number> };
  /** The medians of ORDER_MODES in each of SHUFFLED_ORDERS seeded orders of the cases, by mode. */
  shuffled?: Record<string, number[]>;
  /**
   * The best of ours over the better ported rival (the two chosen by their medians) case by case: the
   * median and the geometric mean of the per-case ratios (the table's own figure is a ratio of medians).
   */
  bestOverPortedPerCase?: { median: number; geometricMean: number };
  /**
   * Where the length choice loses (bench/lengthHeadroom.ts): 'copy + suffix (ours)' with the lengths of
   * one kind of step known ('all': of every kind), median speedups.
   */
  lengthHeadroom?: Record<StepKind | 'all', number>;
}

/**
 * Seeded orders of the cases counted besides the corpus's own. One adaptive policy learns across the
 * cases, as a session's does, so what it knows when it meets a case depends on the cases before it:
 * in the corpus's order a package's cases come together, and a median over the cases moves with the
 * order. The spread over these orders says how far a difference between two medians can be trusted.
 */
export const SHUFFLED_ORDERS = 4;

/** The modes counted again in each shuffled order: ours (the copy alone, the copy with the suffix proposer) and the better ported rival. */
const ORDER_MODES = { own: 'copy + suffix (ours)', ported: 'ngram-simple' } as const;

/** `items` in a seeded random order (Fisher-Yates over mulberry32): the same order for a seed at every commit. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const random = mulberry32(seed);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The ported ones among a replay's rivals (the others are ours). */
export const isPorted = (name: string) => (RIVAL_NAMES as readonly string[]).includes(name);
export const rivalLabel = (name: string) => (isPorted(name) ? `${name} (llama-server's, ported)` : name);

/** The cost tables the replay is counted under where no such machine is at hand. */
const COUNT_TABLES: [string, (batch: number) => number][] = [
  ['H100 (issue #39: 1 + 0.06 (b - 1))', h100VerifyCost],
  ["issue #39's CPU (llama-bench, 1.5B Q8_0, 2 threads)", tableVerifyCost()],
];

/** The counted replay of `cases` under each cost table, with the headroom of known lengths. */
export async function countedUnderTables(cases: CountedCase[]): Promise<CountedReplay[]> {
  const out: CountedReplay[] = [];
  for (const [table, cost] of COUNT_TABLES) {
    const { perCase, ...replay } = await countReplay(cases, cost, replayRivals(), OWN_REPLAY_VARIANTS);
    const counted: CountedReplay = { table, ...replay, knownLengths: knownLengths(cases, cost) };
    counted.bestOverPortedPerCase = perCaseRatio(counted, perCase);
    counted.shuffled = await countedInShuffledOrders(cases, cost);
    counted.lengthHeadroom = (await countReplay(cases, cost, {}, LENGTH_HEADROOM_VARIANTS)).rivals as Record<StepKind | 'all', number>;
    out.push(counted);
  }
  return out;
}

/** The medians of the copy and ORDER_MODES over SHUFFLED_ORDERS seeded orders of `cases`. */
async function countedInShuffledOrders(cases: CountedCase[], cost: (batch: number) => number): Promise<Record<string, number[]>> {
  const medians: Record<string, number[]> = { copy: [], [ORDER_MODES.own]: [], [ORDER_MODES.ported]: [] };
  for (let seed = 1; seed <= SHUFFLED_ORDERS; seed++) {
    const r = await countReplay(shuffled(cases, seed), cost, { [ORDER_MODES.ported]: replayRivals()[ORDER_MODES.ported] }, { [ORDER_MODES.own]: OWN_REPLAY_VARIANTS[ORDER_MODES.own]! });
    medians.copy!.push(r.copy);
    medians[ORDER_MODES.own]!.push(r.rivals[ORDER_MODES.own]!);
    medians[ORDER_MODES.ported]!.push(r.rivals[ORDER_MODES.ported]!);
  }
  return medians;
}

/** The best of ours over the better ported rival, case by case (CountedReplay.bestOverPortedPerCase). */
export function perCaseRatio(counted: CountedReplay, perCase: { copy: number[]; rivals: Record<string, number[]> }): { median: number; geometricMean: number } {
  const { best, ported } = bestAndPorted(counted);
  const of = (name: string) => (name === 'copy' ? perCase.copy : perCase.rivals[name]!);
  const ratios = of(best).map((x, i) => x / of(ported)[i]!);
  return { median: median(ratios) ?? Number.NaN, geometricMean: geometricMean(ratios) };
}

/** The best of ours and the better ported rival, by their medians ('copy': the copy alone). */
function bestAndPorted(c: CountedReplay): { best: string; ported: string } {
  const names = Object.keys(c.rivals);
  const byMedian = (a: string, b: string) => ((a === 'copy' ? c.copy : c.rivals[a]!) >= (b === 'copy' ? c.copy : c.rivals[b]!) ? a : b);
  return { best: ['copy', ...names.filter((n) => !isPorted(n))].reduce(byMedian), ported: names.filter(isPorted).reduce(byMedian) };
}

/** How sure the counted medians are: each in the corpus's order and in the shuffled orders, and the geometric mean, for the copy and ORDER_MODES. */
export function countedOrderSummary(counted: CountedReplay[]): string[] {
  const rows = counted.filter((c) => c.shuffled && c.geometricMean);
  if (!rows.length) return [];
  // Each mode: its label, its key in CountedReplay.shuffled, and its median and geometric mean in the corpus's order.
  const modes = [
    { label: 'copy (ours)', key: 'copy', median: (c: CountedReplay) => c.copy, mean: (c: CountedReplay) => c.geometricMean!.copy },
    ...[ORDER_MODES.own, ORDER_MODES.ported].map((n) => ({ label: rivalLabel(n), key: n, median: (c: CountedReplay) => c.rivals[n]!, mean: (c: CountedReplay) => c.geometricMean!.rivals[n]! })),
  ];
  return [
    `| cost table | mode | median, the corpus's order | medians, ${SHUFFLED_ORDERS} shuffled orders: min / max | geometric mean, the corpus's order |`,
    '|---|---|---|---|---|',
    ...rows.flatMap((c) =>
      modes.map((m) => {
        const spread = c.shuffled![m.key]!;
        return `| ${c.table} | ${m.label} | ${fmt(m.median(c), 2)}x | ${fmt(Math.min(...spread), 2)}x / ${fmt(Math.max(...spread), 2)}x | ${fmt(m.mean(c), 2)}x |`;
      }),
    ),
    '',
    `How sure: one adaptive policy learns across the cases (as a session's does), so a median moves with their order; the same replay counted again in ${SHUFFLED_ORDERS} seeded random orders (bench/countedReplay.ts shuffled), and the geometric mean over the cases in the corpus's order. A difference between two medians smaller than the spread of the shuffled ones is within what the order alone moves.`,
  ];
}

/** Where ours ('copy + suffix (ours)') loses in choosing lengths: its median with the lengths of each kind of step known. */
export function lengthHeadroomSummary(counted: CountedReplay[]): string[] {
  const rows = counted.filter((c) => c.lengthHeadroom);
  if (!rows.length) return [];
  const kinds = Object.keys(rows[0]!.lengthHeadroom!) as (StepKind | 'all')[];
  return [
    `| cost table | ${ORDER_MODES.own}: as chosen | ${kinds.map((k) => `lengths known: ${k}`).join(' | ')} |`,
    `|---|---|${kinds.map(() => '---|').join('')}`,
    ...rows.map((c) => `| ${c.table} | ${fmt(c.rivals[ORDER_MODES.own]!, 2)}x | ${kinds.map((k) => `${fmt(c.lengthHeadroom![k], 2)}x`).join(' | ')} |`),
    '',
    "Where the length choice loses: ours again with the steps of one kind verifying exactly what the output agrees with (a plain step where their first guess is wrong), the policy choosing the rest (bench/lengthHeadroom.ts). cursor: the window's copy before the output's first edit; resync: a copy right after re-synchronising; run: a copy continuing a fully accepted one; suffix: the suffix proposer's. all: every kind (about countKnownLengths's headroom, reached through the same policy's choice of source).",
  ];
}

/** The copy, and the copy with the suffix proposer, each step's length chosen knowing the output, up to the copy's longest proposal. */
function knownLengths(cases: CountedCase[], cost: (batch: number) => number): CountedReplay['knownLengths'] {
  const copy = (c: CountedCase) => new WindowCopyProposer(c.copySource, c.prompt.length, { cursor: c.copyCursor, offerLength: COPY_MAX_PROPOSAL });
  const policy = new SpeculationPolicy({ ...DEFAULT_SPECULATION, adaptive: true });
  return {
    copy: countKnownLengths(cases, cost, (c) => [copy(c)], COPY_MAX_PROPOSAL),
    'copy + suffix': countKnownLengths(cases, cost, (c) => [copy(c), documentSuffixProposer(null, undefined, DEFAULT_SPECULATION, policy)], COPY_MAX_PROPOSAL),
  };
}

/** The counted replays as a table: ours (the copy, and our other proposers) and the ported rivals, and ours over the better of those. */
export function countedSummary(counted: CountedReplay[]): string[] {
  if (!counted.length) return [];
  const names = Object.keys(counted[0]!.rivals);
  const ported = names.filter(isPorted);
  const known = Object.keys(counted[0]!.knownLengths ?? {});
  const cell = (c: CountedReplay, n: string) => `${fmt(c.rivals[n]!, 2)}x${c.rivalTokensPerEvaluation?.[n] !== undefined ? `, ${fmt(c.rivalTokensPerEvaluation[n], 1)}` : ''}`;
  return [
    `| cost table | cases | copy (ours): speedup, tok/eval | ${names.map((n) => `${rivalLabel(n)}: speedup, tok/eval`).join(' | ')} | copy over the better ported | the best of ours over the better ported | ${known.map((n) => `${n}, lengths known: speedup, tok/eval`).join(' | ')} |`,
    `|---|---|---|${names.map(() => '---|').join('')}---|---|${known.map(() => '---|').join('')}`,
    ...counted.map((c) => {
      const betterPorted = Math.max(...ported.map((n) => c.rivals[n]!));
      const bestOurs = Math.max(c.copy, ...names.filter((n) => !isPorted(n)).map((n) => c.rivals[n]!));
      const knownCells = known.map((n) => (c.knownLengths?.[n] ? `${fmt(c.knownLengths[n].speedup, 2)}x, ${fmt(c.knownLengths[n].tokensPerEvaluation, 1)}` : '-'));
      const perCase = c.bestOverPortedPerCase ? ` (per case: median ${fmt(c.bestOverPortedPerCase.median, 2)}x, geometric mean ${fmt(c.bestOverPortedPerCase.geometricMean, 2)}x)` : '';
      return `| ${c.table} | ${c.cases} | ${fmt(c.copy, 2)}x, ${fmt(c.tokensPerEvaluation, 1)} | ${names.map((n) => cell(c, n)).join(' | ')} | ${fmt(c.copy / betterPorted, 2)}x | ${fmt(bestOurs / betterPorted, 2)}x${perCase} | ${knownCells.join(' | ')} |`;
    }),
  ];
}

/**
 * The counted replay's headroom in length choice: each step verifies exactly the part of the sources'
 * offers that the output agrees with (the longest among them; a plain step when none agrees), as a
 * policy that knew the output would. What these proposers allow with every length chosen perfectly;
 * the gap from a policy's figure to this one is its choice of lengths, the gap from this one to the
 * whole output in one step the proposers' content. Median over the cases of plain's cost over this.
 */
export function countKnownLengths(
  cases: readonly CountedCase[],
  cost: (batch: number) => number,
  proposers: (c: CountedCase) => LookupProposer[],
  longest: number,
): { speedup: number; tokensPerEvaluation: number } {
  const speedups: number[] = [];
  const perEvaluation: number[] = [];
  for (const c of cases) {
    const sources = proposers(c);
    const { expected } = c;
    const history = [...c.prompt, expected[0]!];
    // As replayPerfectModel counts both runs: the prompt's last token evaluated again for the first token.
    let spent = cost(1);
    let evaluations = 1;
    while (history.length - c.prompt.length < expected.length) {
      const at = history.length - c.prompt.length;
      let agreed = 0;
      let by: LookupProposer | undefined;
      for (const source of sources) {
        const offer = source.offer(history, longest);
        const chain = offer ? offeredChain(offer) : [];
        const n = commonPrefixLength(chain, expected.slice(at, at + chain.length));
        if (n > agreed) [agreed, by] = [n, source];
      }
      by?.record(agreed, agreed);
      spent += cost(agreed + 1);
      evaluations++;
      history.push(...expected.slice(at, Math.min(expected.length, at + agreed + 1)));
    }
    speedups.push(expected.length / spent);
    perEvaluation.push(expected.length / evaluations);
  }
  return { speedup: median(speedups)!, tokensPerEvaluation: median(perEvaluation)! };
}
