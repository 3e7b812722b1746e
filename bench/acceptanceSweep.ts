// Regime 2 (`npm run bench -- --regimes 2`): one target verifying a proposer of set accuracy (the
// target's own plain output with each token replaced by a wrong one at a set rate:
// bench/oracleProposer.ts), fixed k = 5 and the adaptive policy beside plain runs, against the bound
// the verify cost allows. Also what every lossless check of the bench uses: the tie check.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS } from '../src/engine/completionEngine';
import type { CompletionRequest } from '../src/shared/completion';
import { sourceStats } from '../src/shared/generationStats';
import type { ModelSettings, SpeculationSettings } from '../src/shared/settings';
import { DEFAULT_SPECULATION, type InferenceSession, replaysGraphs } from '../src/inference/inferenceSession';
import type { LlamaSequenceEvaluator } from '../src/llama/llamaSequenceEvaluator';
import { CostModel } from '../src/speculation/costModel';
import { AcceptanceTracker, SpeculationPolicy, expectedTokensPerStep } from '../src/speculation/policy';
import { backendExplanation } from '../src/stats/statusText';
import { verifyShapeText } from '../src/stats/statsReport';
import { batchDrift, judgeDivergence, tieTolerance, type DivergenceVerdict } from '../testbed/batchDrift';
import { lineChart } from './chart';
import type { BenchTask } from './corpus';
import { loadBenchSession } from './decodePath';
import { engineDocument } from './engineView';
import { clockNative, meanForwardMs, measureForwardPass } from './nativeClock';
import { OracleProposer } from './oracleProposer';
import { fmt, median, Progress } from './stats';
import { benchTarget } from './targets';

const ROOT = path.resolve(__dirname, '..');

export interface AcceptanceSweepOptions {
  gpu: ModelSettings['gpu'];
  threads: number;
  flashAttention: ModelSettings['flashAttention'];
  /** Tokens a completion may write. */
  maxTokens: number;
  /** 'session': one policy per proposer accuracy learns across the tasks, as in the editor; 'request': each run starts afresh. */
  acceptanceMemory: 'session' | 'request';
  /** The first this many tasks. */
  taskCount: number;
  log(level: string, message: string): void;
}

export type AcceptanceSweep = Awaited<ReturnType<typeof regimeAcceptance>>;

/** How far apart llama.cpp's logits for one token and for a batch are on this machine, and what counts as a tie. */
export interface TieCheck {
  drift: number;
  /** A divergence whose top-two margin is below this is a numerical tie, not a decoder error. */
  tolerance: number;
}

export async function tieCheck(session: InferenceSession): Promise<TieCheck> {
  const drift = await batchDrift(session);
  return { drift, tolerance: tieTolerance(drift) };
}

export function arraysEqual(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Regime 2: one target with a proposer of set accuracy (the oracle). Small targets are
 * overhead-bound (as on a GPU): there the loop's own cost decides; the Qwen-vocabulary target
 * shows the per-output cost; `big` is bandwidth-bound.
 */
export async function regimeAcceptance(tasks: BenchTask[], targetName: string, opts: AcceptanceSweepOptions) {
  const { gpu, threads, flashAttention, maxTokens, acceptanceMemory, log } = opts;
  const target = await benchTarget(targetName);
  const file = target.file;
  const sizeMB = fs.statSync(file).size / 1e6;
  const k = 5;
  const accuracies = [0, 0.3, 0.5, 0.7, 0.9];
  const session = await loadBenchSession({ targetModel: file, draftModel: '', gpu, gpuLayers: 'auto', threads, contextSize: 1024, flashAttention }, { ...DEFAULT_SPECULATION, maxProposal: k }, log);
  const clock = clockNative(session);
  const engine = new CompletionEngine({ complete: () => Promise.reject(new Error('unused')) }, { ...DEFAULT_ENGINE_SETTINGS, maxTokens, maxPrefixChars: 1500, maxSuffixChars: 400, timeBudgetMs: 0 });
  const chosen = tasks.slice(0, opts.taskCount);
  const requests = chosen.map((task) => ({ ...(engine.buildRequest(engineDocument(task)) as CompletionRequest), stopAtBlockEnd: false, singleLine: false, maxLines: undefined, maxTokens }));
  // The raw forward pass V(b) (decodeBatch alone), at the depth the decode steps run at: attention
  // over a 700-token prompt costs a small model more than its weights do.
  const depth = Math.round(median(requests.map((r) => session.promptFor(r).length))!);
  // V(1..8): the whole curve of a verify batch's cost (on a GPU it is nearly flat to 6, the bench's reason to exist).
  const verify = await measureForwardPass(session, clock, [...new Set([1, 2, 3, 4, 5, 6, 7, 8, k + 1])], depth);
  const ties = await tieCheck(session);
  // From here on, the forward passes of the runs themselves (by batch size) are what "possible" uses.
  clock.bySize.clear();
  // What verification costs is a fact of the machine, learned once as in the editor (one session,
  // many requests). Acceptance is the proposer's: with --acceptance-memory session (the default, as
  // in the editor, whose policy lives as long as the loaded models) one policy per proposer accuracy
  // learns across the tasks; with "request" every run starts its estimate afresh (the worst case).
  const machineCost = new CostModel();
  const sessionPolicies = new Map<string, SpeculationPolicy>();
  const newPolicy = (adaptive: boolean) =>
    new SpeculationPolicy(
      { ...DEFAULT_SPECULATION, maxProposal: k, adaptive, draftMinConfidence: 0, graphReplay: replaysGraphs(session.info) } as SpeculationSettings,
      machineCost,
      new AcceptanceTracker(),
    );
  const policies = (adaptive: boolean, a: number) => {
    if (acceptanceMemory === 'request') return newPolicy(adaptive);
    const key = `${adaptive} ${a}`;
    if (!sessionPolicies.has(key)) sessionPolicies.set(key, newPolicy(adaptive));
    return sessionPolicies.get(key)!;
  };
  const rows: Record<string, { decodeMs: number; tokens: number; evals: number; proposed: number; accepted: number; identical: boolean; ties: number; divergences: DivergenceVerdict[] }> = {};
  const progress = new Progress(chosen.length * (1 + accuracies.length * 2), `acceptance ${targetName}`);
  for (const [i, task] of chosen.entries()) {
    const request = requests[i];
    await session.resetCaches();
    const plain = await session.complete({ ...request, mode: 'plain' });
    progress.tick('plain');
    const add = async (key: string, r: Awaited<ReturnType<InferenceSession['complete']>>) => {
      const row = (rows[key] ??= { decodeMs: 0, tokens: 0, evals: 0, proposed: 0, accepted: 0, identical: true, ties: 0, divergences: [] });
      row.decodeMs += r.stats.totalMs - r.stats.promptMs;
      // Per verify step: the prompt's evaluation and the first token it yields are left out.
      row.tokens += Math.max(0, r.tokens.length - 1);
      row.evals += r.stats.speculation.targetEvaluations - 1;
      row.proposed += sourceStats(r.stats.speculation, 'draft').proposedTokens;
      row.accepted += sourceStats(r.stats.speculation, 'draft').acceptedTokens;
      if (arraysEqual(r.tokens, plain.tokens)) return;
      const verdict = await judgeDivergence(session, session.promptFor(request), plain.tokens, r.tokens, ties.drift);
      row.divergences.push(verdict);
      if (verdict.tie) row.ties++;
      else row.identical = false;
    };
    await add('plain', plain);
    const promptLength = session.promptFor(request).length;
    // A small target decodes a task in ~15 ms: its adaptive and plain runs beside it are repeated
    // until the pair holds ~60 ms, so that a row is not one moment of this machine's drift.
    const repeats = Math.min(4, Math.max(1, Math.ceil(60 / (plain.stats.totalMs - plain.stats.promptMs))));
    for (const a of accuracies) {
      // The adaptive run is within a few percent of plain, the size of this machine's drift over a
      // task: it is compared with a plain run beside it, taken before and after it in turn, rather
      // than with the task's first run.
      const beside = Array.from({ length: repeats }, (_, r) => ((i + r) % 2 === 0 ? (['plain', 'adaptive'] as const) : (['adaptive', 'plain'] as const))).flat();
      for (const run of ['fixed' as const, ...beside]) {
        await session.resetCaches();
        if (run === 'plain') {
          await add(`plain beside a=${a}`, await session.complete({ ...request, mode: 'plain' }));
          continue;
        }
        const adaptive = run === 'adaptive';
        const oracle = new OracleProposer(promptLength, plain.tokens, a, session.info.target.vocabSize, 1000 + task.id);
        const r = await session.complete({ ...request, mode: 'draft' }, undefined, { draft: oracle, policy: policies(adaptive, a) });
        const key = `${adaptive ? 'adaptive' : `k=${k}`} a=${a}`;
        if (!adaptive || rows[key] === undefined) progress.tick(`a=${a}`);
        await add(key, r);
      }
    }
  }
  // The backend and the device by name ("CUDA on NVIDIA H100 …, 9 + 5 layers on the GPU"), as the status bar says it.
  const backend = `${backendExplanation(session.info)}; verify batches: ${verifyShapeText(newPolicy(true).snapshot().verifyShape).replace(': not chosen yet', ' per generation, graph reuse on')}`;
  const attention = session.info.flashAttention?.target ?? '-';
  const evaluatorPath = (session.target.evaluator as LlamaSequenceEvaluator).path;
  // The forward pass as the runs met it (same depth, same interleaving of sizes as decoding), the
  // fairest V(b) for "possible"; the separate measurement is reported beside it.
  const inRun = { 1: meanForwardMs(clock, 1), [k + 1]: meanForwardMs(clock, k + 1) };
  const v1 = inRun[1] ?? verify[1];
  const vk = inRun[k + 1] ?? verify[k + 1];
  await session.dispose();
  const plainRate = rows.plain.tokens / rows.plain.decodeMs;
  const sweep = accuracies.map((a) => {
    const fixed = rows[`k=${k} a=${a}`];
    const adaptive = rows[`adaptive a=${a}`];
    const beside = rows[`plain beside a=${a}`];
    const measuredA = fixed.proposed ? fixed.accepted / fixed.proposed : 0;
    const tokensPerStepBound = expectedTokensPerStep(a, k);
    const speedup = fixed.tokens / fixed.decodeMs / plainRate;
    // What the bound allows once verifying k+1 tokens costs V(k+1)/V(1) of one step.
    const speedupBound = tokensPerStepBound * (v1 / vk);
    const divergences = [...fixed.divergences, ...adaptive.divergences];
    return {
      accuracy: a,
      k,
      tokensPerEvaluation: fixed.tokens / fixed.evals,
      tokensPerEvaluationBound: tokensPerStepBound,
      acceptedShare: measuredA,
      speedup,
      speedupBound,
      achievedOfPossible: speedup / speedupBound,
      adaptiveSpeedup: adaptive.tokens / adaptive.decodeMs / (beside.tokens / beside.decodeMs),
      adaptiveSpeedupVsFirstPlain: adaptive.tokens / adaptive.decodeMs / plainRate,
      adaptiveTokensPerEvaluation: adaptive.tokens / adaptive.evals,
      identical: fixed.identical && adaptive.identical,
      tieRuns: fixed.ties + adaptive.ties,
      divergences: divergences.length,
      acceptedBy: {
        driftRule: divergences.filter((d) => d.driftRule).length,
        cappedRule: divergences.filter((d) => d.cappedRule).length,
        batchConfirmed: divergences.filter((d) => d.batchConfirmed).length,
      },
    };
  });
  return {
    target: targetName,
    model: { path: path.relative(ROOT, file), sizeMB, note: target.note },
    backend,
    flashAttention: attention,
    evaluatorPath,
    depth,
    verifyCostMs: verify,
    inRunVerifyMs: inRun,
    ties,
    tasks: chosen.length,
    sweep,
  };
}

/** Regime 2's report of one target: its markdown, what the console prints, its chart, and whether every run was lossless. */
export function acceptanceReport(
  r: AcceptanceSweep,
  opts: Pick<AcceptanceSweepOptions, 'threads' | 'acceptanceMemory'>,
): { md: string[]; text: string; chart: { file: string; svg: string }; lossless: boolean } {
  const { threads, acceptanceMemory } = opts;
  const targetName = r.target;
  const table = [
    '| a (set) | accepted share | tok/eval | bound (1-a^(k+1))/(1-a) | speedup k=5 (decode tok/s vs plain) | possible: bound x V(1)/V(6) | achieved / possible | adaptive speedup (vs a plain run beside it) | adaptive tok/eval | identical |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...r.sweep.map(
      (x) =>
        `| ${x.accuracy} | ${fmt(x.acceptedShare, 2)} | ${fmt(x.tokensPerEvaluation, 2)} | ${fmt(x.tokensPerEvaluationBound, 2)} | ${fmt(x.speedup, 2)}x | ${fmt(x.speedupBound, 2)}x | ${fmt(x.achievedOfPossible, 2)} | ${fmt(x.adaptiveSpeedup, 2)}x | ${fmt(x.adaptiveTokensPerEvaluation, 2)} | ${x.identical}${x.tieRuns ? ` (${x.tieRuns} at ties)` : ''} |`,
    ),
  ];
  const divergences = r.sweep.reduce((n, x) => n + x.divergences, 0);
  const by = (f: 'driftRule' | 'cappedRule' | 'batchConfirmed') => r.sweep.reduce((n, x) => n + x.acceptedBy[f], 0);
  const inRun = Object.entries(r.inRunVerifyMs)
    .map(([b, v]) => `V(${b}) = ${v === null ? '-' : v.toFixed(2)}`)
    .join(', ');
  const verifyLine = `Backend: ${r.backend} (${r.evaluatorPath} evaluation path), ${threads} thread${threads === 1 ? '' : 's'}, flash attention ${r.flashAttention}. Raw forward pass (native decode alone), ms: in the runs themselves ${inRun} (what "possible" uses); measured apart at the prompts' depth (${r.depth} tokens) by batch size: ${Object.entries(
    r.verifyCostMs,
  )
    .map(([b, v]) => `${b}: ${v.toFixed(2)}`)
    .join(', ')}. ${r.tasks} tasks.`;
  const tieLine = `Divergences from plain decoding: ${divergences}${divergences ? ` (accepted as ties by the capped drift rule, margin < min(50 x drift ${r.ties.drift.toExponential(1)}, 0.5): ${by('cappedRule')}; by the unbounded 50 x drift rule: ${by('driftRule')}; confirmed by evaluating the position alone and in a batch: ${by('batchConfirmed')})` : ''}.`;
  const svg = `acceptance-${targetName}.svg`;
  return {
    md: [
      `## Regime 2: ${targetName} target (${r.model.note}, ${r.model.sizeMB.toFixed(0)} MB) with a proposer of set accuracy (acceptance learned per ${acceptanceMemory === 'session' ? 'session, across tasks, as in the editor' : 'request'})`,
      '',
      verifyLine,
      '',
      ...table,
      '',
      tieLine,
      '',
      `![speedup vs acceptance](${svg})`,
      '',
    ],
    text: `${verifyLine}\n${table.join('\n')}\n${tieLine}\n`,
    chart: {
      file: svg,
      svg: lineChart(`Speedup vs proposal accuracy (${targetName} target, k=5)`, 'accuracy a of each proposed token', 'decode speedup vs plain', [
        { name: 'measured, k=5', color: '#3b82f6', points: r.sweep.map((x) => [x.accuracy, x.speedup]) },
        { name: 'adaptive policy', color: '#16a34a', points: r.sweep.map((x) => [x.accuracy, x.adaptiveSpeedup]) },
        { name: 'bound x verify cost', color: '#f59e0b', dashed: true, points: r.sweep.map((x) => [x.accuracy, x.speedupBound]) },
        { name: 'tok/eval bound', color: '#999', dashed: true, points: r.sweep.map((x) => [x.accuracy, x.tokensPerEvaluationBound]) },
      ]),
    },
    lossless: r.sweep.every((x) => x.identical),
  };
}
