// Replay of a perfect next-edit model (issue #39's bench): the target's batches are real and timed, but
// what the "model" writes is the true updated window, so acceptance is decided against it. This is
// the speed a real next-edit model reaches at 100% accuracy on this machine, with the window copy
// proposer feeding it: the engine's ceiling, measurable without a trained next-edit model.
import type { SpeculationSettings } from '../src/shared/settings';
import type { Token } from '../src/shared/decoding';
import { DEFAULT_SPECULATION } from '../src/settings/declaredSettings';
import { commonPrefixLength, type EvaluatedNext, type GreedyEvaluator } from '../src/speculation/greedyEvaluator';
import { SpeculationPolicy } from '../src/speculation/policy';
import { decode } from '../src/speculation/speculativeDecoder';
import type { LookupProposer, Proposer } from '../src/speculation/proposer';
import { sourceStats } from '../src/shared/generationStats';
import { WindowCopyProposer, type WindowCopyOptions } from '../src/speculation/windowCopyProposer';
import { StopRules } from '../src/stopping/stopRules';
import { median as statsMedian } from './stats';

/** Issue #39's measured CPU verify cost V(b)/V(1) (llama-bench, 1.5B-shaped Q8_0, 2 threads, depth 512). */
export const ISSUE_CPU_VERIFY_COST: readonly [batch: number, ratio: number][] = [
  [1, 1],
  [2, 1.67],
  [4, 2.19],
  [8, 3.49],
  [12, 4.6],
  [16, 5.64],
  [24, 7.86],
  [32, 10.3],
];

/** An H100's verify cost as issue #39 gives it: ≈ 1 + 0.06 (b − 1). */
export const h100VerifyCost = (batch: number): number => 1 + 0.06 * (batch - 1);

/** V(b)/V(1) from a table of measured sizes: linear between them, at the last two's slope beyond. */
export function tableVerifyCost(table: readonly [number, number][] = ISSUE_CPU_VERIFY_COST): (batch: number) => number {
  return (batch) => {
    for (let i = 1; i < table.length; i++) {
      const [b0, r0] = table[i - 1]!;
      const [b1, r1] = table[i]!;
      if (batch <= b1) return r0 + ((r1 - r0) * (batch - b0)) / (b1 - b0);
    }
    const [b0, r0] = table.at(-2)!;
    const [b1, r1] = table.at(-1)!;
    return r1 + ((r1 - r0) / (b1 - b0)) * (batch - b1);
  };
}

/**
 * Proposers replayed beside the copy, on the same batches and perfect output: llama-server's (a fresh
 * one per run, its drafts verified whole, as the server verifies them), or ours (made per run, under
 * a policy the caller keeps across cases, as a session keeps its own).
 */
export type Rival = ((promptLength: number) => LookupProposer) | OwnVariant;

export interface OwnVariant {
  policy: SpeculationPolicy;
  proposers(promptLength: number, copySource: readonly Token[], copyCursor?: number): Proposer[];
  /** Told the expected output before each run (a headroom's policy that knows it: bench/lengthHeadroom.ts). */
  begin?(expected: readonly Token[]): void;
}

export interface ReplayInput {
  /** The real target (a sequence of a loaded model): its batches are what is timed. */
  target: GreedyEvaluator;
  prompt: readonly Token[];
  /** The true output (the updated window, its end marker included if the model writes one). */
  expected: readonly Token[];
  /** The current window as the prompt shows it: what the copy proposer copies. */
  copySource: readonly Token[];
  /** The cursor's token in copySource (generation.ts copyCursorToken), when the prompt gives it. */
  copyCursor?: number;
  copyOptions?: Partial<WindowCopyOptions>;
  /**
   * Speculation settings of the replay's policy. Default: not adaptive, so the proposer's own schedule
   * decides every length (issue #39's figures); adaptive: the measured cost model bounds it too.
   */
  speculation?: Partial<SpeculationSettings>;
  /**
   * Other proposers replayed on the same batches and perfect output, by name (llama-server's ngram
   * types: bench/llamaServerProposers.ts): each a fresh proposer per run, its drafts verified whole
   * (up to `rivalMaxProposal` tokens), as the server verifies them.
   */
  rivals?: Record<string, Rival>;
  rivalMaxProposal?: number;
  /**
   * The policy of the plain and copy runs, kept by the caller across cases as a session keeps its own
   * (its cost model learns this machine's verify cost): adaptive, it picks each copy length from the
   * offer. Default: a fresh one per run from `speculation`.
   */
  policy?: SpeculationPolicy;
  /** V(b)/V(1) for the analytic bound; default issue #39's CPU measurement. */
  verifyCost?: (batch: number) => number;
  /** Plain and replay runs each (alternating, medians reported). */
  repeats?: number;
  /**
   * True once the output so far holds a final edit (it re-synchronised with the window after one: what
   * the worker streams to the editor). With it, each run reports when that happened.
   */
  hasFinalEdit?(outputSoFar: readonly Token[]): boolean;
  now?: () => number;
}

export interface ReplayRun {
  /** Target evaluations, the prompt's last one included (it yields the first token), as DecoderStats counts them. */
  evaluations: number;
  tokensPerEvaluation: number;
  /** From the request to the window's last token, the prompt already cached (median of the repeats). */
  ms: number;
  /** Decode steps' batch sizes (the prompt's evaluation left out), from the last repeat. */
  batches: number[];
  /** From the request to the first final edit (median of the repeats), when hasFinalEdit was given and one came. */
  firstEditMs?: number;
}

export interface ReplayResult {
  tokens: number;
  plain: ReplayRun;
  replay: ReplayRun & { proposedTokens: number; acceptedTokens: number };
  /** plain.ms / replay.ms. */
  speedup: number;
  /** Each of ReplayInput.rivals: its run, and plain.ms over its ms. */
  rivals: Record<string, ReplayRun & { proposedTokens: number; acceptedTokens: number; speedup: number }>;
  bound: {
    /** Of the perfect model fed by this proposer: every token verified, none wasted but the edits. */
    tokensPerEvaluation: number;
    /** Plain's steps over the replay's, each weighed by verifyCost: what the batches alone allow. */
    speedup: number;
  };
  /** Measured ms of one batch, by size (both runs, all repeats): this machine's own V(b). */
  batchMs: Record<number, number>;
}

/**
 * A GreedyEvaluator over a real one whose "greedy token" after each position is the true next token of
 * `sequence` (prompt + expected output) while the cache agrees with it: the real model computes (and
 * is timed), the perfect model answers.
 */
class PerfectModel implements GreedyEvaluator {
  readonly timings = new Map<number, number[]>();
  batches: number[] = [];

  constructor(
    private readonly inner: GreedyEvaluator,
    private readonly sequence: readonly Token[],
    private readonly now: () => number,
  ) {}

  get tokens(): readonly Token[] {
    return this.inner.tokens;
  }

  get capacity(): number {
    return this.inner.capacity;
  }

  async append(input: readonly Token[], outputs: number): Promise<EvaluatedNext[]> {
    const base = this.inner.tokens.length;
    const t0 = this.now();
    // Every output is read: a verify step of the real decoder reads them up to the first rejection, so
    // this overstates its cost a little (the logits are computed either way).
    await this.inner.append(input, outputs);
    const ms = this.now() - t0;
    this.batches.push(input.length);
    const times = this.timings.get(input.length) ?? [];
    times.push(ms);
    this.timings.set(input.length, times);
    const agree = commonPrefixLength(this.inner.tokens, this.sequence);
    const out: EvaluatedNext[] = [];
    for (let i = 0; i < outputs; i++) {
      const at = base + input.length - outputs + i;
      // Off the true sequence (after a rejected guess) the answer is never used: any token will do.
      out.push({ token: agree > at && at + 1 < this.sequence.length ? this.sequence[at + 1]! : -1 });
    }
    return out;
  }

  truncate(length: number): Promise<void> {
    return this.inner.truncate(length);
  }
}

/** The median (of an even count, the mean of the middle two), as every other table of the bench reads it (stats.ts). */
const median = (values: number[]) => statsMedian(values) ?? Number.NaN;

/**
 * Plain decoding (one evaluation per expected token) and the copy proposer's speculative decoding of a
 * perfect next-edit model, on the same real target, the prompt cached for both.
 */
export async function replayPerfectModel(input: ReplayInput): Promise<ReplayResult> {
  const now = input.now ?? (() => performance.now());
  const { prompt, expected } = input;
  if (expected.length === 0) throw new Error('nothing to replay: the expected output is empty');
  const model = new PerfectModel(input.target, [...prompt, ...expected], now);
  const settings: SpeculationSettings = { ...DEFAULT_SPECULATION, adaptive: false, ...input.speculation };
  // The prompt once, before both: each run then evaluates only its last token again.
  await input.target.truncate(commonPrefixLength(input.target.tokens, prompt));
  if (input.target.tokens.length < prompt.length) await input.target.append(prompt.slice(input.target.tokens.length), 0);

  type Mode = 'plain' | 'copy' | `rival:${string}`;
  const rivalMax = input.rivalMaxProposal ?? 64;
  const runOnce = async (mode: Mode) => {
    const stop = new StopRules({ detokenize: () => '', isEndToken: () => false, maxTokens: expected.length });
    model.batches = [];
    const started = now();
    let firstEditMs: number | undefined;
    const rival = mode.startsWith('rival:') ? input.rivals![mode.slice('rival:'.length)]! : undefined;
    const own = rival && typeof rival !== 'function' ? rival : undefined;
    own?.begin?.(expected);
    const proposers: Proposer[] = own
      ? own.proposers(prompt.length, input.copySource, input.copyCursor)
      : rival
        ? [(rival as (promptLength: number) => LookupProposer)(prompt.length)]
        : mode === 'copy'
          ? [new WindowCopyProposer(input.copySource, prompt.length, { cursor: input.copyCursor, ...input.copyOptions })]
          : [];
    const stats = await decode({
      mode: mode === 'plain' ? 'plain' : 'copy',
      target: model,
      prompt,
      stop,
      policy: own ? own.policy : rival ? new SpeculationPolicy({ ...settings, adaptive: false, copyMaxProposal: rivalMax }) : (input.policy ?? new SpeculationPolicy(settings)),
      proposers,
      now,
      onProgress: input.hasFinalEdit
        ? (tokens) => {
            if (firstEditMs === undefined && input.hasFinalEdit!(tokens)) firstEditMs = now() - started;
          }
        : undefined,
    });
    if (stop.tokens.length !== expected.length || stop.tokens.some((t, i) => t !== expected[i])) throw new Error(`${mode} replay did not write the expected output`);
    // What its sources proposed and the target kept.
    const proposed = proposers.reduce(
      (sum, p) => {
        const by = sourceStats(stats.speculation, p.id);
        return { proposedTokens: sum.proposedTokens + by.proposedTokens, acceptedTokens: sum.acceptedTokens + by.acceptedTokens };
      },
      { proposedTokens: 0, acceptedTokens: 0 },
    );
    return { stats, batches: model.batches.slice(1), firstEditMs, proposed };
  };

  const repeats = Math.max(1, input.repeats ?? 1);
  const modes: Mode[] = ['plain', 'copy', ...Object.keys(input.rivals ?? {}).map((name): Mode => `rival:${name}`)];
  const runs = new Map<Mode, { last: Awaited<ReturnType<typeof runOnce>>; ms: number[]; firstEdit: number[] }>();
  for (let r = 0; r < repeats; r++) {
    // Rotating which goes first, so a drift of the machine's speed weighs on all alike.
    for (let i = 0; i < modes.length; i++) {
      const mode = modes[(i + r) % modes.length]!;
      const run = await runOnce(mode);
      const entry = runs.get(mode) ?? { last: run, ms: [], firstEdit: [] };
      entry.last = run;
      entry.ms.push(run.stats.totalMs);
      if (run.firstEditMs !== undefined) entry.firstEdit.push(run.firstEditMs);
      runs.set(mode, entry);
    }
  }
  const plain = runs.get('plain')!.last;
  const replay = runs.get('copy')!.last;
  const plainMs = runs.get('plain')!.ms;
  const replayMs = runs.get('copy')!.ms;
  const firstEdit = { plain: runs.get('plain')!.firstEdit, copy: runs.get('copy')!.firstEdit };
  const n = expected.length;
  const runOf = (r: typeof plain, ms: number[], firstEditMs: number[]): ReplayRun => ({
    evaluations: r.stats.speculation.targetEvaluations,
    tokensPerEvaluation: n / r.stats.speculation.targetEvaluations,
    ms: median(ms),
    batches: r.batches,
    firstEditMs: firstEditMs.length ? median(firstEditMs) : undefined,
  });
  const cost = input.verifyCost ?? tableVerifyCost();
  const weigh = (batches: number[]) => batches.reduce((t, b) => t + cost(b), 0);
  const copy = replay.proposed;
  const result: ReplayResult = {
    tokens: n,
    plain: runOf(plain, plainMs, firstEdit.plain),
    replay: { ...runOf(replay, replayMs, firstEdit.copy), proposedTokens: copy.proposedTokens, acceptedTokens: copy.acceptedTokens },
    speedup: median(plainMs) / median(replayMs),
    rivals: Object.fromEntries(
      Object.keys(input.rivals ?? {}).map((name) => {
        const entry = runs.get(`rival:${name}`)!;
        const used = entry.last.proposed;
        return [name, { ...runOf(entry.last, entry.ms, entry.firstEdit), proposedTokens: used.proposedTokens, acceptedTokens: used.acceptedTokens, speedup: median(plainMs) / median(entry.ms) }];
      }),
    ),
    bound: {
      tokensPerEvaluation: n / replay.stats.speculation.targetEvaluations,
      // The prompt's last token (one evaluation each) counted on both sides.
      speedup: (cost(1) + weigh(plain.batches)) / (cost(1) + weigh(replay.batches)),
    },
    batchMs: Object.fromEntries([...model.timings].filter(([b]) => b <= 65).map(([b, times]) => [b, median(times)])),
  };
  return result;
}

/**
 * A target that computes nothing: its clock advances by `cost(b)` for each batch of b tokens. The
 * replay over it counts what a cost table allows (a GPU's, where no GPU is at hand), the policies learning
 * from that clock as from a real one.
 */
export class CountingTarget implements GreedyEvaluator {
  private cached: Token[] = [];
  clock = 0;

  constructor(private readonly cost: (batch: number) => number) {}

  get tokens(): readonly Token[] {
    return this.cached;
  }

  get capacity(): number {
    return Number.MAX_SAFE_INTEGER;
  }

  async append(input: readonly Token[], outputs: number): Promise<EvaluatedNext[]> {
    this.clock += this.cost(input.length);
    this.cached.push(...input);
    return Array.from({ length: outputs }, () => ({ token: -1 }));
  }

  async truncate(length: number): Promise<void> {
    this.cached.length = Math.min(length, this.cached.length);
  }
}

/** One case of a counted replay: its tokens, as the timed replay would feed them. */
export interface CountedCase {
  prompt: readonly Token[];
  expected: readonly Token[];
  copySource: readonly Token[];
  copyCursor?: number;
}

/**
 * The replay counted under a cost table (V(b)/V(1)) instead of timed: per case, plain's cost over ours
 * (the copy proposer, one adaptive policy for all cases as a session keeps one) and over each rival's.
 * Medians over the cases.
 */
export async function countReplay(
  cases: readonly CountedCase[],
  cost: (batch: number) => number,
  ported: Record<string, (promptLength: number) => LookupProposer>,
  /** Ours beside the copy, each made once for all cases (its policy kept across them). */
  own: Record<string, () => OwnVariant> = {},
): Promise<{
  cases: number;
  copy: number;
  rivals: Record<string, number>;
  tokensPerEvaluation: number;
  rivalTokensPerEvaluation: Record<string, number>;
  /** Geometric means over the cases of the same ratios: ours (`copy`) and each rival's. */
  geometricMean: { copy: number; rivals: Record<string, number> };
  /** Each case's ratio, in the cases' order: ours (`copy`) and each rival's. */
  perCase: { copy: number[]; rivals: Record<string, number[]> };
}> {
  const target = new CountingTarget(cost);
  const policy = new SpeculationPolicy({ ...DEFAULT_SPECULATION, adaptive: true });
  const rivals: Record<string, Rival> = { ...ported, ...Object.fromEntries(Object.entries(own).map(([name, make]) => [name, make()])) };
  const copy: number[] = [];
  const perEvaluation: number[] = [];
  const byRival: Record<string, number[]> = {};
  const rivalPerEvaluation: Record<string, number[]> = {};
  for (const c of cases) {
    const r = await replayPerfectModel({ target, prompt: c.prompt, expected: c.expected, copySource: c.copySource, copyCursor: c.copyCursor, rivals, policy, now: () => target.clock });
    copy.push(r.speedup);
    perEvaluation.push(r.replay.tokensPerEvaluation);
    for (const [name, x] of Object.entries(r.rivals)) {
      (byRival[name] ??= []).push(x.speedup);
      (rivalPerEvaluation[name] ??= []).push(x.tokensPerEvaluation);
    }
  }
  return {
    cases: cases.length,
    copy: median(copy),
    rivals: Object.fromEntries(Object.entries(byRival).map(([name, v]) => [name, median(v)])),
    tokensPerEvaluation: median(perEvaluation),
    rivalTokensPerEvaluation: Object.fromEntries(Object.entries(rivalPerEvaluation).map(([name, v]) => [name, median(v)])),
    geometricMean: { copy: geometricMean(copy), rivals: Object.fromEntries(Object.entries(byRival).map(([name, v]) => [name, geometricMean(v)])) },
    perCase: { copy, rivals: byRival },
  };
}

export const geometricMean = (values: number[]) => Math.exp(values.reduce((sum, x) => sum + Math.log(x), 0) / values.length);
