// npm run bench [-- --quick] [--pairs tiny,v3 | --target X.gguf [--draft Y.gguf]] [--tasks N] [--auto-closed-tasks N] [--modes plain,hybrid,...,ngram+suffix,suffix,hybrid+suffix,hybrid-ngram+suffix,ngram-simple,ngram-mod] [--without-native] [--regimes 1,2,3,4,5,6,7,8,9,10,edits,typing,time-budget,trees] [--trees-tasks N] [--trees-edits-cases N] [--typing-files N] [--typing-chars N] [--time-budget-target 1.5b-lines] [--time-budget-ms N] [--time-budget-tasks N] [--edits-target X.gguf [--edits-draft Y.gguf]] [--edits-cases N] [--edits-replay-cases N] [--edits-replay-target 1.5b-qwen-coder-q8] [--edits-format sweep|zeta] [--think-ms N] [--regime2-targets tiny,v3,qwen-vocab,big,1.5b,7b] [--threads N] [--acceptance-memory session|request] [--not-adaptive] [--gpu auto|cuda|vulkan|cpu] [--flash-attention auto|on|off] [--trees auto|on|off] [--tree-shape B]
// Side-by-side completion latency and quality of every mode on real code, in ONE run, interleaved
// per task; both embedded pairs on the same tasks unless a pair is given.
import { execFileSync, execSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS } from '../src/engine/completionEngine';
import { backendExplanation } from '../src/stats/statusText';
import type { CompletionRequest } from '../src/shared/completion';
import type { DecodeMode, Token } from '../src/shared/decoding';
import type { ModelSettings } from '../src/shared/settings';
import { DEFAULT_SPECULATION, type DecodeOverrides, type InferenceSession, replaysGraphs } from '../src/inference/inferenceSession';
import { NgramModProposer, NgramModState, NgramSimpleProposer } from './llamaServerProposers';
import { decodePathHeader, decodePaths, loadBenchSession, prepareBenchNative } from './decodePath';
import { DEFAULT_EMBEDDED_PAIR, EMBEDDED_PAIRS, embeddedPairPaths, type EmbeddedPairName } from '../src/models/embedded';
import { findInSequence, NgramIndex } from '../src/ngram';
import { judgeDivergence, type DivergenceVerdict } from '../testbed/batchDrift';
import { barChart } from './chart';
import { engineDocument, flashAttentionOption, shownText } from './engineView';
import { regimeKeystroke, type LayoutRow } from './keystroke';
import { MIN_FILE_CHARS, regimeTyping, typingRuns, typingTable } from './typing';
import { EXTRA_CONTEXT_TOKENS, regimeExtraContext } from './extraContext';
import { regimeLookahead } from './lookahead';
import { ACCEPTS_PER_CHAIN, neverShownShare, regimeAcceptChain } from './acceptChain';
import { ALTERNATIVES_ASKED, regimeAlternatives, SCOPES } from './alternatives';
import { DEFAULT_DEBOUNCE_MS } from '../src/settings/declaredSettings';
import { regimeWindowDraft, WINDOWS } from './windowDraft';
import { regimeStartup } from './workerStartup';
import { AUTO_CLOSED_KINDS, autoClosedKindOf, CORPUS_PACKAGES, ensureCorpus, fileTextOf, sampleAutoClosedTasks, sampleTasks, sourceFiles, type BenchTask, type SourceFile } from './corpus';
import { currentLineSuffix } from '../src/postprocess';
import { scoreShown, summarizeQuality, type QualityScore } from './quality';
import { fmt, median, pct, percentile, Progress } from './stats';
import { LlamaServer } from '../testbed/llamaServer';
import { StockRunner, type StockMode } from './stockModes';
import { benchTarget, benchTargetMissing } from './targets';
import { resultsJson } from './savedRun';
import { countedOrderSummary, countedSummary, lengthHeadroomSummary } from './countedReplay';
import { EDITS_HEADER, editsCases, editsTableRow, editsTreeTable, regimeEdits, regimeEditsReplay, replayRivalSummary, replaySummary, replayVerifyCost } from './edits';
import { WINDOW_LINES } from './editCorpus';
import { demoNextEditModel } from './demoNextEdit';
import { regimeTimeBudget, timeBudgetReport } from './timeBudget';
import { spaced, treesSection } from './treeLab';
import type { NextEditFormatId } from '../src/nextEdit/types';
import { sourceStats } from '../src/shared/generationStats';
import { sideBySideTable, treeCounts, TreeSideBySide, type TreesOption, type TreeVariant } from './treeModes';
import { acceptanceReport, arraysEqual, regimeAcceptance, tieCheck, type TieCheck } from './acceptanceSweep';

const ROOT = path.resolve(__dirname, '..');
const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const opt = (name: string, fallback?: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const quick = flag('quick');
const userPair = opt('target') !== undefined;
const regimeNames = (opt('regimes', userPair ? '1,3,4,5,6,7,8,9,10' : '1,2,3,4,5,6,7,8,9,10') ?? '').split(',').filter(Boolean);
if (regimeNames.some((n) => !/^([1-9]|10|edits|typing|time-budget|trees)$/.test(n)))
  throw new Error(`--regimes ${opt('regimes')}: name regimes 1-10, edits, typing, time-budget and trees, comma-separated`);
const regimes = new Set(regimeNames.filter((n) => /^\d+$/.test(n)).map(Number));
/** `--regimes edits`: next-edit suggestions (issue #39, bench/edits.ts); only when named. */
const editsRegime = regimeNames.includes('edits');
/** `--regimes typing`: a user typing at every keystroke, shallow and deep in large files (bench/typing.ts); only when named. */
const typingRegime = regimeNames.includes('typing');
/** `--regimes trees`: the counted lab of token trees against chains (bench/treeLab.ts); only when named. */
const treesRegime = regimeNames.includes('trees');
/**
 * Full run: both embedded pairs on the same 80 tasks plus regimes 2 and 3: ~21 min at 1 thread on
 * the reference VM kept busy by other jobs, less when quiet (see REFERENCE_SECONDS); regime 2 alone
 * is ~11 of those minutes. Quick: ~7 min busy, regime 1 alone ~2.5 min.
 */
const DEFAULT_TASKS = { quick: 20, full: 80 };
const taskCount = Number(opt('tasks', String(quick ? DEFAULT_TASKS.quick : DEFAULT_TASKS.full)));
/** Regime 1's before-auto-closed tasks (bench/corpus.ts sampleAutoClosedTasks), besides the others. */
const autoClosedTaskCount = Number(opt('auto-closed-tasks', String(quick ? 12 : 40)));
/** `--modes plain,hybrid`: regime 1 runs only these (all by default); quality needs plain alone. */
const onlyModes = opt('modes')?.split(',').filter(Boolean);
const threads = Number(opt('threads', '1'));
const maxTokens = Number(opt('max-tokens', '48'));
const gpu = (opt('gpu', 'auto') ?? 'auto') as ModelSettings['gpu'];
// auto = Draftline's default (measured per CPU model at load); on/off force it (before/after runs).
const flashAttention = flashAttentionOption(opt('flash-attention', 'auto'));
const acceptanceMemory: 'session' | 'request' = opt('acceptance-memory', 'session') === 'request' ? 'request' : 'session';
/**
 * `--not-adaptive`: regime 1's policy verifies every offer as its proposer schedules it (the whole
 * chain, or a suffix proposer's likely part) instead of what pays on this machine: the proposers'
 * own yield in the real decoder, where the adaptive policy would write speculation off.
 */
const regime1Speculation = { ...DEFAULT_SPECULATION, adaptive: !flag('not-adaptive') };
/**
 * `--trees on|off|auto`: the target's tree verification (ModelSettings.treeVerification; auto:
 * Draftline's default, on CUDA only). Where trees are verified, regime 1 and the edits regime run each
 * lossless mode twice on a fixed shape of `--tree-shape` (16): trees and their chains (bench/treeModes.ts).
 */
const treesOption = (opt('trees', 'auto') ?? 'auto') as TreesOption;
if (!['auto', 'on', 'off'].includes(treesOption)) throw new Error(`--trees ${treesOption}: auto, on or off`);
const treeShape = Number(opt('tree-shape', '16'));
const log = (level: string, message: string) => {
  if (level === 'error') process.stderr.write(`\n${message}\n`);
};

type Mode = DecodeMode | StockMode | 'llama-server' | 'llama-server-md' | TextVariant | TreeVariant;
const MODES: Mode[] = ['plain', 'stock-draft', 'stock-lookup', 'ngram', 'draft', 'hybrid'];

/**
 * Regime 1's variants of our modes in their text proposers, run only when named (--modes): the suffix
 * proposer beside the n-gram one ("+suffix") or in its place ("suffix", "hybrid-ngram+suffix"), and llama-server's ngram-simple and
 * ngram-mod (ported, bench/llamaServerProposers.ts) in its place; the same decoder and policy. ngram-mod's
 * table is one per pair (`modState`), kept across the requests, as one server keeps it.
 */
const TEXT_VARIANTS = {
  'ngram+suffix': { mode: 'ngram', overrides: () => ({ ngram: true, suffix: true }) },
  suffix: { mode: 'ngram', overrides: () => ({ ngram: false, suffix: true }) },
  'hybrid+suffix': { mode: 'hybrid', overrides: () => ({ ngram: true, suffix: true }) },
  'hybrid-ngram+suffix': { mode: 'hybrid', overrides: () => ({ ngram: false, suffix: true }) },
  'ngram-simple': { mode: 'ngram', overrides: () => ({ ngram: false, extraProposers: [new NgramSimpleProposer()] }) },
  'ngram-mod': { mode: 'ngram', overrides: (promptLength: number, modState: NgramModState) => ({ ngram: false, extraProposers: [new NgramModProposer(promptLength, modState)] }) },
} satisfies Record<string, { mode: DecodeMode; overrides(promptLength: number, modState: NgramModState): DecodeOverrides }>;
type TextVariant = keyof typeof TEXT_VARIANTS;
const isTextVariant = (mode: Mode): mode is TextVariant => Object.hasOwn(TEXT_VARIANTS, mode);
/** Sources counted as text proposals (the table's n-gram acceptance): ours and the ported ones. */
const TEXT_SOURCES = ['ngram', 'suffix', 'ngram-simple', 'ngram-mod'];

const LOSSLESS: Mode[] = ['ngram', 'draft', 'hybrid', ...(Object.keys(TEXT_VARIANTS) as TextVariant[]), 'ngram chain', 'ngram tree', 'draft chain', 'draft tree', 'hybrid chain', 'hybrid tree'];
/** The modes regime 1 runs as chains and as trees side by side where trees are verified (bench/treeModes.ts). */
const TREE_MODES_REGIME_1: DecodeMode[] = ['ngram', 'draft', 'hybrid'];

/** A target + draft pair regime 1 runs on; `draft` is '' for none. */
interface ModelPair {
  name: string;
  target: string;
  draft: string;
}

/** `--target X [--draft Y]`: that pair alone; else the embedded pairs named by `--pairs` (all by default), on the same tasks. */
function modelPairs(): ModelPair[] {
  if (userPair) {
    if (opt('pairs') !== undefined) process.stderr.write('--pairs is ignored with --target: your pair alone is run\n');
    return [{ name: 'yours', target: path.resolve(opt('target')!), draft: opt('draft') !== undefined ? path.resolve(opt('draft')!) : '' }];
  }
  const known = Object.keys(EMBEDDED_PAIRS);
  const names = (opt('pairs') ?? 'tiny,v3')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  if (!names.length || names.some((name) => !known.includes(name))) throw new Error(`--pairs ${opt('pairs')}: name embedded pairs, comma-separated (there are: ${known.join(', ')})`);
  return names.map((name) => ({ name, ...embeddedPairPaths(ROOT, name as EmbeddedPairName) }));
}

interface Run {
  task: number;
  mode: Mode;
  latencyMs: number;
  ttftMs: number;
  decodeMs: number;
  tokens: Token[];
  /** Prompt tokens evaluated for this request (the rest reused from the KV cache); null where unknown. */
  promptTokensEvaluated: number | null;
  evaluations: number | null;
  proposed: { ngram: number; draft: number };
  accepted: { ngram: number; draft: number };
  stockValidated?: number;
  stockRefuted?: number;
  /** llama-server lays out its own prompt: compared by speed only. */
  external?: boolean;
  /** Where a lossless mode differs from plain: the target's top-two logit margin at the first difference. */
  tieMargin?: number;
  /** ...and whether each tie rule accepts it. */
  tie?: DivergenceVerdict;
  /** Steps that verified a token tree, their nodes and the nodes kept (bench/treeModes.ts). */
  trees?: { steps: number; nodes: number; accepted: number };
  /** What the user would see: the completion after the engine's post-processing. */
  shown: string;
  /** How many characters of the rest of the cursor's line it replaces (auto-closed ones). */
  replaceSuffixChars: number;
  quality: QualityScore;
}

/** How the target's logits look where `tokens` first leaves `plain`, judged by each tie rule. */
function divergence(session: InferenceSession, request: CompletionRequest, plain: readonly Token[], tokens: readonly Token[], ties: TieCheck): Promise<DivergenceVerdict> {
  return judgeDivergence(session, session.promptFor(request), plain, tokens, ties.drift);
}

async function regimeModes(tasks: BenchTask[], pair: ModelPair) {
  const session = await loadBenchSession(
    { targetModel: pair.target, draftModel: pair.draft, gpu, gpuLayers: 'auto', threads, contextSize: 2048, flashAttention, treeVerification: treesOption },
    regime1Speculation,
    log,
  );
  const stock = await StockRunner.create(session, threads, DEFAULT_SPECULATION.maxProposal, DEFAULT_SPECULATION.draftMinConfidence);
  const engine = new CompletionEngine({ complete: () => Promise.reject(new Error('unused')) }, { ...DEFAULT_ENGINE_SETTINGS, maxTokens, timeBudgetMs: 0 });
  const wanted = (m: Mode) => !onlyModes || onlyModes.includes(m);
  const modes: Mode[] = MODES.filter((m) => wanted(m) && (m === 'stock-draft' ? stock.has(m) : m === 'draft' || m === 'hybrid' ? session.draft !== null : true));
  for (const v of Object.keys(TEXT_VARIANTS) as TextVariant[]) if (onlyModes?.includes(v) && (TEXT_VARIANTS[v].mode !== 'hybrid' || session.draft !== null)) modes.push(v);
  // Where the target verifies trees: each lossless mode's chain and tree side by side.
  const sideBySide = TreeSideBySide.for(
    session,
    TREE_MODES_REGIME_1.filter((m) => modes.includes(m)),
    treeShape,
    regime1Speculation,
  );
  if (sideBySide) modes.push(...sideBySide.modes);
  const servers: Partial<Record<Mode, LlamaServer>> = {};
  if (!wanted('llama-server') && !wanted('llama-server-md')) {
    // Not asked for (--modes).
  } else if (!LlamaServer.available()) {
    process.stderr.write(`llama-server: skipped (not built; bash scripts/build-llama-server.sh builds it into bench/cache, ~30 min; in the bench kit, build-cuda.sh)\n`);
  } else {
    const opts = {
      threads,
      contextSize: session.info.contextSize,
      maxProposal: DEFAULT_SPECULATION.maxProposal,
      minConfidence: DEFAULT_SPECULATION.draftMinConfidence,
      flashAttention: session.target.attention.flashAttention,
      gpu: session.info.gpuLayers.target > 0,
    };
    servers['llama-server'] = await LlamaServer.start(pair.target, null, opts);
    modes.push('llama-server');
    if (session.draft && wanted('llama-server-md')) {
      servers['llama-server-md'] = await LlamaServer.start(pair.target, pair.draft, opts);
      modes.push('llama-server-md');
    }
  }
  const runs: Run[] = [];
  const requests = new Map<number, CompletionRequest>();
  const modState = new NgramModState();
  const progress = new Progress(tasks.length * modes.length, `modes (${pair.name})`);
  let previousKey: string | undefined;
  for (const task of tasks) {
    const doc = engineDocument(task);
    const request = engine.buildRequest(doc) as CompletionRequest;
    requests.set(task.id, request);
    const restOfLine = currentLineSuffix(request);
    const score = (raw: string) => {
      const shown = shownText(raw, request, doc, engine.settings.maxLines);
      return { shown: shown.text, replaceSuffixChars: shown.replaceSuffixChars, quality: scoreShown(shown, restOfLine, task.truth) };
    };
    // The open file is in the n-gram index, as in the editor.
    if (previousKey) session.documents.removeDocument(previousKey);
    session.documents.setDocument(request.documentKey!, task.text);
    previousKey = request.documentKey;
    // Interleave: each task rotates the order, so drift on the machine hits every mode alike.
    const order = modes.map((_, i) => modes[(i + task.id) % modes.length]);
    // The keystroke case: the same spot one character earlier was completed just before (untimed),
    // so every mode starts from the KV caches the editor would have.
    const earlier = { ...request, prefix: request.prefix.slice(0, -1) };
    // Caches start empty once per task, not once per mode: a mode's untimed run then re-evaluates
    // only the prompt from the cursor on (the part before it is the previous mode's), and its
    // measured run finds what it would after a cold start: the prompt up to the cursor in the KV
    // cache, computed once for all modes. A cold prompt per mode (~1 s with the v3 pair's
    // 1024-token context at 1 thread) was most of the run time.
    await session.resetCaches();
    await stock.reset();
    for (const mode of order) {
      const server = servers[mode];
      if (server) {
        // The same text window our prompt keeps (llama-server does not trim to its context).
        await server.infill(windowed(session, earlier));
        const r = await server.infill(windowed(session, request));
        runs.push({
          task: task.id,
          mode,
          latencyMs: r.latencyMs,
          ttftMs: r.promptMs,
          decodeMs: r.latencyMs - r.promptMs,
          tokens: new Array(r.predicted).fill(0),
          promptTokensEvaluated: r.promptTokensEvaluated,
          evaluations: null,
          proposed: { ngram: 0, draft: r.draftProposed },
          accepted: { ngram: 0, draft: r.draftAccepted },
          external: true,
          ...score(r.text),
        });
      } else if (mode === 'stock-draft' || mode === 'stock-lookup') {
        await stock.run(mode, earlier);
        const r = await stock.run(mode, request);
        runs.push({
          task: task.id,
          mode,
          latencyMs: r.totalMs,
          ttftMs: r.promptMs,
          decodeMs: r.totalMs - r.promptMs,
          tokens: r.tokens,
          promptTokensEvaluated: r.promptTokensEvaluated,
          evaluations: null,
          proposed: { ngram: 0, draft: 0 },
          accepted: { ngram: 0, draft: 0 },
          stockValidated: r.validated,
          stockRefuted: r.refuted,
          ...score(r.text),
        });
      } else {
        const text = isTextVariant(mode) ? TEXT_VARIANTS[mode] : undefined;
        const tree = TreeSideBySide.isVariant(mode) && sideBySide ? mode : null;
        const ours = text?.mode ?? (tree ? TreeSideBySide.baseMode(tree) : (mode as DecodeMode));
        const overrides = (r: CompletionRequest): DecodeOverrides => (tree ? sideBySide!.overrides(tree) : (text?.overrides(session.promptFor(r).length, modState) ?? {}));
        await session.complete({ ...earlier, mode: ours }, undefined, overrides(earlier));
        const t0 = performance.now();
        const r = await session.complete({ ...request, mode: ours }, undefined, overrides(request));
        const latencyMs = performance.now() - t0;
        const s = r.stats;
        runs.push({
          task: task.id,
          mode,
          latencyMs,
          ttftMs: s.timeToFirstTokenMs,
          decodeMs: s.totalMs - s.promptMs,
          tokens: r.tokens,
          promptTokensEvaluated: s.promptTokens - s.reusedPromptTokens,
          evaluations: s.speculation.targetEvaluations,
          proposed: { ngram: sum(TEXT_SOURCES, (id) => sourceStats(s.speculation, id).proposedTokens), draft: sourceStats(s.speculation, 'draft').proposedTokens },
          accepted: { ngram: sum(TEXT_SOURCES, (id) => sourceStats(s.speculation, id).acceptedTokens), draft: sourceStats(s.speculation, 'draft').acceptedTokens },
          ...(tree ? { trees: treeCounts(s) } : {}),
          ...score(r.text),
        });
      }
      progress.tick(mode);
    }
  }
  // Where a lossless mode differs from plain, measure how close the target's top two were there.
  const ties = await tieCheck(session);
  const plainTokens = new Map(runs.filter((r) => r.mode === 'plain').map((r) => [r.task, r.tokens]));
  for (const r of runs) {
    const plain = plainTokens.get(r.task)!;
    if (LOSSLESS.includes(r.mode) && !arraysEqual(r.tokens, plain)) {
      r.tie = await divergence(session, requests.get(r.task)!, plain, r.tokens, ties);
      r.tieMargin = r.tie.margin;
    }
  }
  const info = session.info;
  for (const server of Object.values(servers)) await server.stop();
  await stock.dispose();
  await session.dispose();
  // The standard tasks' rows as before; the before-auto-closed ones apart (autoClosedRows).
  const autoClosed = new Set(tasks.filter((t) => t.kind === 'before-auto-closed').map((t) => t.id));
  const standard = runs.filter((r) => !autoClosed.has(r.task));
  return {
    pair,
    info,
    modes,
    ties,
    rows: summarize(modes, standard),
    allRows: summarize(modes, runs),
    autoClosedRows: summarizeAutoClosed(modes, tasks, runs),
    raw: runs,
    treeShape: sideBySide?.size ?? null,
  };
}

/** Quality of each mode on the before-auto-closed tasks, all and by the innermost closer. */
function summarizeAutoClosed(modes: Mode[], tasks: BenchTask[], runs: Run[]) {
  const kindOf = new Map(tasks.filter((t) => t.autoClosed).map((t) => [t.id, autoClosedKindOf(t.autoClosed!)]));
  return modes.map((mode) => {
    const rs = runs.filter((r) => r.mode === mode && kindOf.has(r.task));
    const byKind = Object.fromEntries(
      AUTO_CLOSED_KINDS.map((kind) => {
        const of = rs.filter((r) => kindOf.get(r.task) === kind);
        return [kind, { tasks: of.length, quality: summarizeQuality(of.map((r) => r.quality)) }];
      }),
    );
    return { mode, tasks: rs.length, quality: summarizeQuality(rs.map((r) => r.quality)), replacedAutoClosed: rs.filter((r) => r.replaceSuffixChars > 0).length, byKind };
  });
}

type ModesResult = Awaited<ReturnType<typeof regimeModes>>;
type ModeRow = ModesResult['rows'][number];

/** The request with prefix/suffix cut to what our prompt layout keeps within the context. */
function windowed(session: InferenceSession, request: CompletionRequest): CompletionRequest {
  const fim = session.target.info.fim;
  if (!fim) return request;
  const prompt = session.promptFor(request);
  const pre = prompt.indexOf(fim.prefix),
    suf = prompt.indexOf(fim.suffix),
    mid = prompt.lastIndexOf(fim.middle);
  // The cursor line may sit after <mid> (the line-anchored layout): it is the prefix's end.
  return { ...request, prefix: session.detokenize([...prompt.slice(pre + 1, suf), ...prompt.slice(mid + 1)]), suffix: session.detokenize(prompt.slice(suf + 1, mid)) };
}

/** Tokens a second over the decode phase (after the prompt's evaluation). */
function decodeRate(rs: Run[]): number | null {
  const decodeMs = rs.reduce((n, r) => n + r.decodeMs, 0);
  return decodeMs > 0 ? (rs.reduce((n, r) => n + r.tokens.length, 0) * 1000) / decodeMs : null;
}

function summarize(modes: Mode[], runs: Run[]) {
  const byTaskPlain = new Map(runs.filter((r) => r.mode === 'plain').map((r) => [r.task, r]));
  const rateOf = (mode: Mode) => decodeRate(runs.filter((r) => r.mode === mode));
  return modes.map((mode) => {
    const rs = runs.filter((r) => r.mode === mode);
    const tokens = rs.reduce((n, r) => n + r.tokens.length, 0);
    const evals = rs.every((r) => r.evaluations !== null) ? rs.reduce((n, r) => n + (r.evaluations ?? 0), 0) : null;
    const sum = (f: (r: Run) => number) => rs.reduce((n, r) => n + f(r), 0);
    // llama-server is compared with its own plain run (same HTTP path), ours with our plain.
    const external = rs.some((r) => r.external);
    const base = (r: Run) => (r.external ? runs.find((x) => x.task === r.task && x.mode === 'llama-server')! : byTaskPlain.get(r.task)!);
    const ratios = rs.map((r) => base(r).latencyMs / r.latencyMs);
    const tokensPerSecond = decodeRate(rs);
    const baseRate = rateOf(external ? 'llama-server' : 'plain');
    const identical = external ? NaN : rs.filter((r) => arraysEqual(r.tokens, byTaskPlain.get(r.task)!.tokens)).length;
    // Differences at a numerical tie of the target's top two logits (kernels not batch-invariant).
    const atTies = rs.filter((r) => r.tie?.tie).length;
    const stockValidated = sum((r) => r.stockValidated ?? 0),
      stockRefuted = sum((r) => r.stockRefuted ?? 0);
    const promptEvaluated = rs.map((r) => r.promptTokensEvaluated);
    return {
      mode,
      tasks: rs.length,
      latencyMedianMs: median(rs.map((r) => r.latencyMs)),
      latencyP90Ms: percentile(
        rs.map((r) => r.latencyMs),
        0.9,
      ),
      ttftMedianMs: median(rs.map((r) => r.ttftMs)),
      promptTokensEvaluatedMedian: promptEvaluated.every((n) => n !== null) ? median(promptEvaluated as number[]) : null,
      tokensPerSecond,
      decodeRateVsPlain: tokensPerSecond !== null && baseRate ? tokensPerSecond / baseRate : null,
      tokensPerEvaluation: evals ? tokens / evals : null,
      acceptanceNgram: sum((r) => r.proposed.ngram) ? sum((r) => r.accepted.ngram) / sum((r) => r.proposed.ngram) : null,
      acceptanceDraft: sum((r) => r.proposed.draft)
        ? sum((r) => r.accepted.draft) / sum((r) => r.proposed.draft)
        : stockValidated + stockRefuted
          ? stockValidated / (stockValidated + stockRefuted)
          : null,
      speedupMedian: median(ratios),
      quality: summarizeQuality(rs.map((r) => r.quality)),
      identicalTasks: identical,
      tieTasks: atTies,
      identical: external ? null : identical + atTies === rs.length,
      generatedTokens: tokens,
    };
  });
}

const sum = <T>(items: readonly T[], f: (item: T) => number) => items.reduce((n, item) => n + f(item), 0);

/** Regime 3: if a model produced exactly the file's true continuation, what would n-gram reuse get accepted? */
async function regimeNgramBound(tasks: BenchTask[], targetPath: string) {
  const session = await loadBenchSession({ targetModel: targetPath, draftModel: '', gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 2048 }, DEFAULT_SPECULATION, log);
  const tokenize = (t: string) => session.target.model.tokenize(t, false) as unknown as number[];
  const { ngramMinMatch: minN, ngramMaxMatch: maxN, maxProposal } = DEFAULT_SPECULATION;
  let tokens = 0,
    steps = 0,
    proposedSteps = 0,
    accepted = 0,
    proposed = 0;
  for (const task of tasks) {
    const truth = tokenize(task.truth).slice(0, maxTokens);
    const truthText = session.detokenize(truth);
    // The file minus the continuation itself (else the bound is trivially perfect).
    const file = fileTextOf(task);
    const index = new NgramIndex({ minN, maxN, tokenize });
    index.setDocument('file', file.slice(0, task.offset) + file.slice(task.offset + truthText.length));
    const history = tokenize(task.text.slice(Math.max(0, task.offset - 3000), task.offset));
    let pos = 0;
    while (pos < truth.length) {
      const local = findInSequence(history, { minN, maxN, maxLen: maxProposal });
      const global = index.lookup(history, maxProposal);
      const best = !local ? global : !global ? local : global.n > local.n ? global : local;
      let n = 0;
      if (best && best.n >= minN) {
        proposedSteps++;
        proposed += best.tokens.length;
        while (n < best.tokens.length && pos + n < truth.length && best.tokens[n] === truth[pos + n]) n++;
        accepted += n;
      }
      const advance = Math.min(truth.length - pos, n + 1);
      history.push(...truth.slice(pos, pos + advance));
      pos += advance;
      steps++;
    }
    tokens += truth.length;
  }
  await session.dispose();
  return { tasks: tasks.length, tokens, steps, tokensPerStep: tokens / steps, stepsWithProposal: proposedSteps / steps, acceptance: proposed ? accepted / proposed : null };
}

function machine() {
  let commit = 'unknown';
  try {
    commit = execSync('git rev-parse --short HEAD', { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
  } catch {}
  return {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: os.availableParallelism(),
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    platform: `${process.platform}-${process.arch}`,
    node: process.version,
    threads,
    commit,
  };
}

/** Shared by the sections of one run: the tasks, and what each section adds to the report and results. */
interface Bench {
  tasks: BenchTask[];
  /** The corpus files the tasks come from. */
  files: SourceFile[];
  /** Regime 1 runs these too, reported apart (sampleAutoClosedTasks). */
  autoClosedTasks: BenchTask[];
  pairs: ModelPair[];
  outDir: string;
  results: Record<string, unknown>;
  /** report.md, in section order. */
  md: string[];
  /** Regime 1 of each pair, for the comparison and runs.json. */
  modes: ModesResult[];
  failed: boolean;
}

/** A section's lines: into report.md, and printed as the run goes. */
function emit(bench: Bench, lines: string[]): void {
  bench.md.push(...lines);
  console.log(`\n${lines.join('\n')}`);
}

/** One part of the run: timed, reported in order. A new regime is one more entry in `sections()`. */
interface Section {
  name: string;
  /** Seconds on the reference VM (REFERENCE_SECONDS), null when unknown (e.g. a pair of yours). */
  estimateSeconds: number | null;
  run(bench: Bench): Promise<void>;
}

/**
 * Wall-clock seconds measured with --quick at --threads 1 on the reference VM (a 2-core Intel Xeon
 * VM, no GPU) while other jobs kept it busy (load average ~5; the same runs used 60-85% of that in
 * CPU time, nearer what a quiet VM takes). Regime 1: a task of one pair (six modes, untimed warm-ups,
 * model load and tie check; mean of two runs); regime 2: setup (random target written once, verify
 * cost, tie check) and a task (a plain run and ten oracle runs on the 325 MB target); regime 3: the
 * whole run. Only for the estimate printed up front: the actual times are measured and reported.
 */
const REFERENCE_SECONDS = {
  modesPerTask: { tiny: 1.5, v3: 5.8 } as Record<string, number>,
  acceptance: { setup: 16, perTask: { big: 83, tiny: 1.3, v3: 5, 'qwen-vocab': 6 } as Record<string, number> },
  ngramBound: 5,
  keystrokePerTask: 5,
  startupPerRepeat: 8,
};

/** Regime 4 (two layouts, cold and keystroke each) on the first tasks only. */
const keystrokeTaskCount = (tasks: number) => Math.min(tasks, quick ? 10 : 60);
const startupRepeats = quick ? 2 : 5;

/** The pair regimes 4 and 5 measure: yours, else the default embedded pair (what a user gets). */
function mainPair(bench: Bench): ModelPair {
  return bench.pairs.find((p) => p.name === DEFAULT_EMBEDDED_PAIR) ?? bench.pairs[0];
}

/** Regime 2 runs on the first tasks only (eleven runs a task; the big and large-vocabulary targets are slow). */
const acceptanceTaskCount = (tasks: number, target: string) => Math.min(tasks, quick ? 3 : target === 'tiny' || target === 'v3' ? 16 : 6);
/** Regime 2's targets (bench/targets.ts): the embedded ones are overhead-bound, qwen-vocab output-bound. */
const acceptanceTargets = (opt('regime2-targets', 'tiny,v3,qwen-vocab') ?? '').split(',').filter(Boolean);

function sections(bench: Bench): Section[] {
  const list: Section[] = [];
  if (regimes.has(1)) {
    for (const pair of bench.pairs) {
      const perTask = threads === 1 ? REFERENCE_SECONDS.modesPerTask[pair.name] : undefined;
      list.push({
        name: `regime 1 (${pair.name} pair)`,
        estimateSeconds: perTask === undefined ? null : perTask * (bench.tasks.length + bench.autoClosedTasks.length),
        run: (b) => modesSection(b, pair),
      });
    }
    if (bench.pairs.length > 1) list.push({ name: 'pair comparison', estimateSeconds: 0, run: comparisonSection });
  }
  if (regimes.has(2)) {
    for (const target of acceptanceTargets) {
      const perTask = threads === 1 ? REFERENCE_SECONDS.acceptance.perTask[target] : undefined;
      list.push({
        name: `regime 2 (acceptance sweep, ${target} target)`,
        estimateSeconds: perTask === undefined ? null : REFERENCE_SECONDS.acceptance.setup + perTask * acceptanceTaskCount(bench.tasks.length, target),
        run: (b) => acceptanceSection(b, target),
      });
    }
  }
  if (regimes.has(3)) list.push({ name: 'regime 3 (n-gram bound)', estimateSeconds: REFERENCE_SECONDS.ngramBound, run: ngramBoundSection });
  if (regimes.has(4))
    list.push({
      name: 'regime 4 (keystroke: prompt layouts)',
      estimateSeconds: threads === 1 ? REFERENCE_SECONDS.keystrokePerTask * keystrokeTaskCount(bench.tasks.length) : null,
      run: keystrokeSection,
    });
  if (regimes.has(5)) list.push({ name: 'regime 5 (cold start)', estimateSeconds: REFERENCE_SECONDS.startupPerRepeat * startupRepeats, run: startupSection });
  /** One section a pair; its time estimated per task as measured at 1 thread. */
  const perPair = (regime: number, what: string, secondsPerTask: Record<string, number>, taskCount: number, section: (b: Bench, pair: ModelPair) => Promise<void>) => {
    for (const pair of bench.pairs) {
      list.push({ name: `regime ${regime} (${what}, ${pair.name} pair)`, estimateSeconds: threads === 1 ? (secondsPerTask[pair.name] ?? 0) * taskCount : null, run: (b) => section(b, pair) });
    }
  };
  if (regimes.has(6)) perPair(6, 'extra context', EXTRA_CONTEXT_SECONDS_PER_TASK, extraContextTaskCount(bench.tasks.length), extraContextSection);
  if (regimes.has(7)) perPair(7, 'lookahead pool', LOOKAHEAD_SECONDS_PER_TASK, lookaheadTaskCount(bench.tasks.length), lookaheadSection);
  if (regimes.has(8)) list.push({ name: 'regime 8 (window draft)', estimateSeconds: threads === 1 ? 9 * windowDraftTaskCount(bench.tasks.length) : null, run: windowDraftSection });
  if (regimes.has(9)) perPair(9, 'accept chain', ACCEPT_CHAIN_SECONDS_PER_TASK, acceptChainTaskCount(bench.tasks.length), acceptChainSection);
  if (regimes.has(10)) perPair(10, 'alternatives', ALTERNATIVES_SECONDS_PER_TASK, alternativesTaskCount(bench.tasks.length), alternativesSection);
  if (editsRegime) list.push({ name: 'edits (next-edit suggestions)', estimateSeconds: null, run: editsSection });
  if (typingRegime) list.push({ name: 'typing (every keystroke, shallow and deep)', estimateSeconds: null, run: typingSection });
  if (regimeNames.includes('time-budget')) list.push({ name: 'time budget', estimateSeconds: null, run: timeBudgetSection });
  if (treesRegime) list.push({ name: 'trees (counted tree lab)', estimateSeconds: null, run: treesLabSection });
  return list;
}

const modeHeader = [
  '| mode | median ms | p90 ms | TTFT ms | prompt tok evaluated | decode tok/s | decode tok/s vs plain | tok/eval | acc. n-gram | acc. draft | speedup vs plain (median) | first line exact | similarity | no ghost text | identical |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
];

function modeTableRow(x: ModeRow): string {
  const vsServer = x.mode === 'llama-server-md' ? ' (vs llama-server)' : '';
  const identical = x.identical === null ? 'n/a (own prompt)' : `${x.identicalTasks}/${x.tasks}${x.tieTasks ? ` (+${x.tieTasks} at ties)` : ''}`;
  return `| ${x.mode} | ${fmt(x.latencyMedianMs)} | ${fmt(x.latencyP90Ms)} | ${fmt(x.ttftMedianMs)} | ${fmt(x.promptTokensEvaluatedMedian, 0)} | ${fmt(x.tokensPerSecond, 0)} | ${fmt(x.decodeRateVsPlain, 2)}x${vsServer} | ${fmt(x.tokensPerEvaluation, 2)} | ${pct(x.acceptanceNgram)} | ${pct(x.acceptanceDraft)} | ${fmt(x.speedupMedian, 2)}x${vsServer} | ${pct(x.quality?.firstLineExact)} | ${fmt(x.quality?.similarity, 3)} | ${pct(x.quality?.empty)} | ${identical} |`;
}

async function modesSection(bench: Bench, pair: ModelPair): Promise<void> {
  const started = Date.now();
  const r = await regimeModes([...bench.tasks, ...bench.autoClosedTasks], pair);
  const seconds = (Date.now() - started) / 1000;
  bench.modes.push(r);
  const table = [...modeHeader, ...r.rows.map(modeTableRow)];
  const tieLine =
    r.ties.drift === 0
      ? 'Batch drift 0: llama.cpp computes a position bitwise the same in a batch as alone here, so identity is exact.'
      : `Batch drift ${r.ties.drift.toExponential(2)}: llama.cpp's kernels here give a position's logits that far apart in a batch and alone (or, where trees are verified, after tree steps left the KV cells out of order), so a lossless mode may differ from plain decoding where the target's top two logits are within ${r.ties.tolerance.toFixed(3)} (a numerical tie; "at ties"). Any other difference fails the run.`;
  const allTasks = bench.tasks.length + bench.autoClosedTasks.length;
  const timeLine = `${allTasks} tasks in ${seconds.toFixed(0)} s (${(seconds / allTasks).toFixed(1)} s a task: ${r.modes.length} modes, untimed warm-ups, model load and tie check included).`;
  const legend =
    'prompt tok evaluated: median prompt tokens the target evaluated per request (the rest reused from the KV cache). decode tok/s: tokens a second after the prompt; "vs plain" divides by plain\'s. acc. n-gram: of the text proposers (the n-gram one, the suffix one, the ported ngram-simple / ngram-mod). First line exact and similarity: see the pairs side by side below, or bench/quality.ts.';
  const heading = `${userPair ? 'Your model pair' : `Regime 1: the embedded ${pair.name} pair`} (${r.info.target.name} + ${r.info.draft?.name ?? 'no draft'}, ${backendExplanation(r.info)}, context ${r.info.contextSize}${regime1Speculation.adaptive ? '' : ', not adaptive: every offer verified as its proposer schedules it'})`;
  const attentionLine = `Flash attention (chosen at load; the stock modes use the same per model, llama-server the target's, which its -fa applies to its draft too): target ${r.info.flashAttention?.target ?? '-'}; draft ${r.info.flashAttention?.draft ?? '-'}.`;
  const chart = `latency-${pair.name}.svg`;
  const autoClosed = autoClosedTable(r, bench.autoClosedTasks.length);
  const trees =
    r.treeShape === null
      ? []
      : sideBySideTable(
          r.treeShape,
          TREE_MODES_REGIME_1,
          r.rows.map((x) => ({ ...x, identical: x.identicalTasks, ties: x.tieTasks })),
          treeTotals(r.raw),
          !replaysGraphs(r.info),
        );
  emit(bench, [`## ${heading}`, '', ...table, '', legend, '', ...trees, ...autoClosed, attentionLine, '', tieLine, '', timeLine, '', `![latency by mode](${chart})`, '']);
  fs.writeFileSync(
    path.join(bench.outDir, chart),
    barChart(
      `Median completion latency by mode (${bench.tasks.length} tasks, ${r.info.target.name})`,
      r.rows.map((x) => ({ label: x.mode, value: x.latencyMedianMs ?? 0, note: `${fmt(x.speedupMedian, 2)}x` })),
      'ms',
    ),
  );
  // Every number of every run (the completion texts go to runs.json).
  const raw = r.raw.map(({ tokens, shown, ...rest }) => ({ ...rest, tokens: tokens.length }));
  (bench.results.modes as Record<string, unknown>)[pair.name] = { models: r.info, ties: r.ties, seconds, rows: r.rows, autoClosedRows: r.autoClosedRows, runs: raw };
  for (const x of r.allRows) {
    if (LOSSLESS.includes(x.mode) && x.identical !== true) {
      bench.failed = true;
      console.error(`LOSSLESS VIOLATION (${pair.name} pair): mode ${x.mode} differs from plain on ${x.tasks - x.identicalTasks - x.tieTasks} task(s) away from a numerical tie`);
    }
  }
}

/** The tree figures of each side-by-side mode, summed over its runs. */
function treeTotals(runs: readonly Run[]): Map<string, { steps: number; nodes: number; accepted: number }> {
  const out = new Map<string, { steps: number; nodes: number; accepted: number }>();
  for (const r of runs) {
    if (!r.trees) continue;
    const t = out.get(r.mode) ?? { steps: 0, nodes: 0, accepted: 0 };
    out.set(r.mode, { steps: t.steps + r.trees.steps, nodes: t.nodes + r.trees.nodes, accepted: t.accepted + r.trees.accepted });
  }
  return out;
}

/** Regime 1's quality on the before-auto-closed tasks: per mode, and per innermost closer. */
function autoClosedTable(r: ModesResult, taskCount: number): string[] {
  if (taskCount === 0) return [];
  const cell = (q: { firstLineExact: number; similarity: number; empty: number } | null) => `${pct(q?.firstLineExact)} | ${fmt(q?.similarity, 3)} | ${pct(q?.empty)}`;
  return [
    `Before auto-closed characters (${taskCount} tasks): the cursor inside a line with only what the editor auto-closed after it (\`if (n === 0|)\`), the rest of the real line to be written; scored as the line reads once the ghost text is accepted (its replaced auto-closed characters included). By innermost closer: ${AUTO_CLOSED_KINDS.map((k) => `${k} ${r.autoClosedRows[0]?.byKind[k]?.tasks ?? 0}`).join(', ')} tasks.`,
    '',
    `| mode | first line exact | similarity | no ghost text | replaces auto-closed | ${AUTO_CLOSED_KINDS.map((k) => `${k}: exact / sim. / none`).join(' | ')} |`,
    `|---|---|---|---|---|${AUTO_CLOSED_KINDS.map(() => '---|').join('')}`,
    ...r.autoClosedRows.map(
      (x) => `| ${x.mode} | ${cell(x.quality)} | ${x.replacedAutoClosed}/${x.tasks} | ${AUTO_CLOSED_KINDS.map((k) => cell(x.byKind[k]?.quality ?? null).replace(/ \| /g, ' / ')).join(' | ')} |`,
    ),
    '',
  ];
}

/** One line a pair: plain decoding's speed and quality (the lossless modes score the same), and what hybrid gains. */
async function comparisonSection(bench: Bench): Promise<void> {
  const rows = bench.modes.map((r) => {
    const plain = r.rows.find((x) => x.mode === 'plain')!;
    const hybrid = r.rows.find((x) => x.mode === 'hybrid');
    return {
      pair: r.pair.name,
      target: r.info.target.name,
      draft: r.info.draft?.name ?? null,
      plainLatencyMedianMs: plain.latencyMedianMs,
      plainTtftMedianMs: plain.ttftMedianMs,
      plainTokensPerSecond: plain.tokensPerSecond,
      firstLineExact: plain.quality?.firstLineExact ?? null,
      similarity: plain.quality?.similarity ?? null,
      empty: plain.quality?.empty ?? null,
      hybridSpeedupMedian: hybrid?.speedupMedian ?? null,
    };
  });
  bench.results.comparison = rows;
  const table = [
    '| pair | models | plain median ms | plain TTFT ms | plain decode tok/s | first line exact | similarity | no ghost text | hybrid speedup vs plain (median) |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (x) =>
        `| ${x.pair} | ${x.target} + ${x.draft ?? 'no draft'} | ${fmt(x.plainLatencyMedianMs)} | ${fmt(x.plainTtftMedianMs)} | ${fmt(x.plainTokensPerSecond, 0)} | ${pct(x.firstLineExact)} | ${fmt(x.similarity, 3)} | ${pct(x.empty)} | ${fmt(x.hybridSpeedupMedian, 2)}x |`,
    ),
  ];
  const note =
    "Quality is plain decoding's (the lossless modes emit the same tokens), scored on what the user sees, against the file's own continuation: first line exact = the first line with content equals the file's (indentation included, trailing whitespace not; an empty completion is a miss); similarity = mean of 1 - edit distance / longer length, against the file cut to as many lines as the completion (an empty completion scores 0).";
  bench.md.push(`## The pairs side by side (${bench.tasks.length} tasks)`, '', ...table, '', note, '');
  console.log(`Pairs side by side (${bench.tasks.length} tasks)\n${table.join('\n')}\n`);
}

async function acceptanceSection(bench: Bench, targetName: string): Promise<void> {
  const opts = { gpu, threads, flashAttention, maxTokens, acceptanceMemory, taskCount: acceptanceTaskCount(bench.tasks.length, targetName), log } as const;
  const r = await regimeAcceptance(bench.tasks, targetName, opts);
  ((bench.results.acceptanceSweeps ??= {}) as Record<string, unknown>)[targetName] = r;
  const report = acceptanceReport(r, opts);
  bench.md.push(...report.md);
  console.log(report.text);
  fs.writeFileSync(path.join(bench.outDir, report.chart.file), report.chart.svg);
  if (!report.lossless) {
    bench.failed = true;
    console.error(`LOSSLESS VIOLATION in the acceptance sweep (${targetName} target)`);
  }
}

async function ngramBoundSection(bench: Bench): Promise<void> {
  // Any pair's tokenizer will do: the embedded pairs share one vocabulary.
  const r = await regimeNgramBound(bench.tasks, bench.pairs[0].target);
  bench.results.ngramBound = r;
  const line = `If a model produced exactly the file's own continuation, n-gram reuse from the open file would give ${fmt(r.tokensPerStep, 2)} tokens per target evaluation (proposals at ${pct(r.stepsWithProposal)} of steps, ${pct(r.acceptance)} of proposed tokens accepted; ${r.tokens} tokens over ${r.tasks} tasks).`;
  bench.md.push('## Regime 3: model-free n-gram predictability of the real files', '', line, '');
  console.log(line);
}

async function keystrokeSection(bench: Bench): Promise<void> {
  const pair = mainPair(bench);
  const tasks = bench.tasks.slice(0, keystrokeTaskCount(bench.tasks.length));
  const r = await regimeKeystroke(tasks, pair, { threads, maxTokens, gpu, flashAttention, log });
  bench.results.keystroke = { pair: pair.name, models: r.info, rows: r.rows, runs: r.runs };
  const row = (layout: string, kase: string) => r.rows.find((x) => x.layout === layout && x.case === kase)!;
  const ratio = (kase: string, f: (x: LayoutRow) => number | null) => {
    const a = f(row('standard', kase)),
      b = f(row('lineAnchored', kase));
    return a !== null && b !== null && b > 0 ? `${(a / b).toFixed(2)}x` : '-';
  };
  const table = [
    '| case | layout | median ms | TTFT ms | prompt tokens | prompt tok evaluated | first line exact | similarity | no ghost text |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.rows.map(
      (x) =>
        `| ${x.case} | ${x.layout} | ${fmt(x.latencyMedianMs)} | ${fmt(x.ttftMedianMs)} | ${fmt(x.promptTokensMedian, 0)} | ${fmt(x.promptTokensEvaluatedMedian, 0)} | ${pct(x.firstLineExact)} | ${fmt(x.similarity, 3)} | ${pct(x.empty)} |`,
    ),
  ];
  const gains = `lineAnchored vs standard, keystroke case: TTFT ${ratio('keystroke', (x) => x.ttftMedianMs)} lower, median latency ${ratio('keystroke', (x) => x.latencyMedianMs)} lower, ${ratio('keystroke', (x) => x.promptTokensEvaluatedMedian)} fewer prompt tokens evaluated; cold case: median latency ${ratio('cold', (x) => x.latencyMedianMs)}.`;
  const heading = `Regime 4: keystroke latency by prompt layout (${r.info.target.name}, plain decoding, ${tasks.length} tasks)`;
  const legend =
    "standard: `<pre>prefix<suf>suffix<mid>`; lineAnchored (the default): the cursor's group of 8 lines after `<mid>`, so typing appends to the prompt (src/prompt/fimPrompt.ts). keystroke: the same spot one character earlier was completed just before; cold: empty caches.";
  emit(bench, [`## ${heading}`, '', ...table, '', gains, '', legend, '']);
}

/** The typing regime's files (each typed shallow and deep) and characters typed at each position. */
const typingShape = () => ({ files: Number(opt('typing-files', quick ? '2' : '4')), typed: Number(opt('typing-chars', quick ? '300' : '600')) });

async function typingSection(bench: Bench): Promise<void> {
  const pair = mainPair(bench);
  const shape = typingShape();
  const runs = typingRuns(bench.files, shape.files, shape.typed);
  const r = await regimeTyping(bench.files, runs, pair, { threads, maxTokens, gpu, flashAttention, log });
  bench.results.typing = { pair: pair.name, runs, rows: r.rows, afterShift: r.afterShift };
  const heading = `Typing: a completion at every keystroke, shallow and deep (${pair.name} pair, hybrid, ${runs.length / 2} files over ${MIN_FILE_CHARS} characters, ${shape.typed} characters typed at each position)`;
  const legend =
    "shallow: typing from ~1,200 characters into the file; deep: from past the editor's 3,000-character prefix window, across one of its 512-character steps. shifted: a prompt whose head moved keeps its cache, shifted into place (draftline.shiftPromptCache, the default); evaluated afresh: the setting off. The first request of each stretch (its cold start) is left out.";
  const table = typingTable(r);
  emit(bench, [`## ${heading}`, '', table, '', legend, '']);
}

/** Regime 6 on the first tasks only; seconds a task on the reference VM (two variants, cold and keystroke each). */
const extraContextTaskCount = (tasks: number) => Math.min(tasks, quick ? 10 : 60);
const EXTRA_CONTEXT_SECONDS_PER_TASK: Record<string, number> = { tiny: 1, v3: 3 };

async function extraContextSection(bench: Bench, pair: ModelPair): Promise<void> {
  const tasks = bench.tasks.slice(0, extraContextTaskCount(bench.tasks.length));
  const files = sourceFiles(ensureCorpus());
  const r = await regimeExtraContext(tasks, files, fileTextOf, pair, { threads, maxTokens, gpu, flashAttention, log });
  ((bench.results.extraContext ??= {}) as Record<string, unknown>)[pair.name] = { models: r.info, rows: r.rows, filesPerTask: r.filesPerTask, runs: r.runs };
  const table = [
    '| case | extra context | median ms | TTFT ms | prompt tokens | prompt tok evaluated | first line exact | similarity | no ghost text |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.rows.map(
      (x) =>
        `| ${x.case} | ${x.variant} | ${fmt(x.latencyMedianMs)} | ${fmt(x.ttftMedianMs)} | ${fmt(x.promptTokensMedian, 0)} | ${fmt(x.promptTokensEvaluatedMedian, 0)} | ${pct(x.firstLineExact)} | ${fmt(x.similarity, 3)} | ${pct(x.empty)} |`,
    ),
  ];
  const heading = `Regime 6: extra context (${r.info.target.name}, ${r.info.promptTemplate ?? r.info.promptFormat}, plain decoding, ${tasks.length} tasks)`;
  const legend = `extra: up to ${EXTRA_CONTEXT_TOKENS} prompt tokens of the files a user would have open (the task file's relative imports, then its folder; ${r.filesPerTask.toFixed(1)} files a task on average, each the first 64 lines as the extension's ring keeps them), before the file's own text (src/prompt/contextBlock.ts). keystroke: the same spot one character earlier was completed just before; cold: empty caches.`;
  emit(bench, [`## ${heading}`, '', ...table, '', legend, '']);
}

/** Regime 7 on the first tasks only; seconds a task on the reference VM (5 modes, two generation lengths). */
const lookaheadTaskCount = (tasks: number) => Math.min(tasks, quick ? 10 : 40);
const LOOKAHEAD_SECONDS_PER_TASK: Record<string, number> = { tiny: 1, v3: 4 };

async function lookaheadSection(bench: Bench, pair: ModelPair): Promise<void> {
  const tasks = bench.tasks.slice(0, lookaheadTaskCount(bench.tasks.length));
  const r = await regimeLookahead(tasks, pair, { threads, maxTokens, gpu, flashAttention, log });
  ((bench.results.lookahead ??= {}) as Record<string, unknown>)[pair.name] = { models: r.info, rows: r.rows };
  const speed = (x: { tokens: number; decodeMs: number }) => (x.decodeMs > 0 ? (x.tokens * 1000) / x.decodeMs : null);
  const find = (mode: string, generation: string) => r.rows.find((x) => x.mode === mode && x.generation === generation);
  const ratio = (a: number | null, b: number | null) => (a !== null && b ? `${fmt(a / b, 2)}x` : '-');
  const table = [
    '| generation | mode | tok/eval | decode tok/s | vs plain | vs the same mode without the pool | lookahead accepted | identical |',
    '|---|---|---|---|---|---|---|---|',
    ...r.rows.map((x) => {
      const plain = find('plain', x.generation);
      const without = x.mode.endsWith('+lookahead') ? find(x.mode.replace('+lookahead', ''), x.generation) : undefined;
      return `| ${x.generation} | ${x.mode} | ${fmt(x.evaluations ? x.tokens / x.evaluations : null, 2)} | ${fmt(speed(x), 0)} | ${ratio(speed(x), plain ? speed(plain) : null)} | ${without ? ratio(speed(x), speed(without)) : '-'} | ${x.proposed ? `${pct(x.accepted / x.proposed)} of ${x.proposed}` : '-'} | ${x.identical}/${x.tasks} |`;
    }),
  ];
  const heading = `Regime 7: the lookahead pool (${r.info.target.name}${r.info.draft ? ` + ${r.info.draft.name}` : ''}, ${tasks.length} tasks)`;
  const legend = `editor: the completion as the editor asks for it (max ${maxTokens} tokens, its stop rules); long: 128 tokens, no stop but the end of text. +lookahead: the target's own outputs after each rejected guess are kept per document and proposed as a third source (src/speculation/lookaheadPool.ts); every output of a verify batch is then read. Decode speed from the second token on; tok/eval: tokens per target evaluation after the prompt's.`;
  emit(bench, [`## ${heading}`, '', ...table, '', legend, '']);
}

/** Regime 8 on the first tasks only. */
const windowDraftTaskCount = (tasks: number) => Math.min(tasks, quick ? 8 : 40);

async function windowDraftSection(bench: Bench): Promise<void> {
  const pair = mainPair(bench);
  const tasks = bench.tasks.slice(0, windowDraftTaskCount(bench.tasks.length));
  const r = await regimeWindowDraft(tasks, pair, { threads, maxTokens, gpu, flashAttention, log });
  bench.results.windowDraft = { models: r.info, rows: r.rows, promptTokensMedian: r.promptTokensMedian };
  const speed = (x: { tokens: number; decodeMs: number }) => (x.decodeMs > 0 ? (x.tokens * 1000) / x.decodeMs : null);
  const plain = r.rows.find((x) => x.source === 'plain');
  const table = [
    '| draft | proposals | tok/eval | drafted tokens kept | decode tok/s | vs plain | identical |',
    '|---|---|---|---|---|---|---|',
    ...r.rows.map((x) => {
      const v = speed(x);
      const p = plain ? speed(plain) : null;
      return `| ${x.source} | ${x.source === 'plain' ? '-' : x.policy} | ${fmt(x.evaluations ? x.tokens / x.evaluations : null, 2)} | ${x.proposed ? `${pct(x.accepted / x.proposed)} of ${x.proposed}` : '-'} | ${fmt(v, 0)} | ${v !== null && p ? `${fmt(v / p, 2)}x` : '-'} | ${x.identical}/${x.tasks} |`;
    }),
  ];
  const heading = `Regime 8: the target as its own draft on a KV window (${r.info.target.name}, ${tasks.length} tasks, prompts of ${fmt(r.promptTokensMedian, 0)} tokens median)`;
  const legend = `window W: the target in a second context holding the prompt's first 4 tokens and its last ~W (src/speculation/windowDraft.ts; windows ${WINDOWS.join(', ')}). fixed 5: always 5 drafted tokens (what the agreement is); adaptive: the policy as users get it. The cost of such a draft at 1k-16k contexts: npm run bench:long-context.`;
  emit(bench, [`## ${heading}`, '', ...table, '', legend, '']);
}

async function startupSection(bench: Bench): Promise<void> {
  const pair = mainPair(bench);
  const r = await regimeStartup(ROOT, pair, threads, startupRepeats);
  bench.results.startup = { pair: pair.name, ...r };
  const table = [
    '| start | runs | fork to hello | fork to models loaded | fork to first completion | first request | later request | headers | binding wait | library imported at | binding ready at | draft load | target load |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...r.rows.map(
      (x) =>
        `| ${x.variant} | ${x.runs} | ${fmt(x.helloMs, 0)} | ${fmt(x.readyMs, 0)} | ${fmt(x.firstCompletionMs, 0)} | ${fmt(x.firstRequestMs, 0)} | ${fmt(x.laterRequestMs, 0)} | ${fmt(x.headersMs, 0)} | ${fmt(x.bindingWaitMs, 0)} | ${fmt(x.libraryAtMs, 0)} | ${fmt(x.bindingAtMs, 0)} | ${fmt(x.draftMs, 0)} | ${fmt(x.targetMs, 0)} |`,
    ),
  ];
  const heading = `Regime 5: cold start of the inference worker (${path.basename(pair.target)} + ${pair.draft ? path.basename(pair.draft) : 'no draft'}), ms, medians`;
  const legend =
    "As the extension starts it, without the editor: fork dist/worker.js, load, 1.5 s later one completion (first request: its own latency), then another prompt (later request); fork to first completion leaves out the 1.5 s. no warm-up: without the worker's warm-up completion after the load (preload on). \"at\" columns are the worker process's age. binding: node-llama-cpp's import and getLlama (which first tests the prebuilt binary in a child process). preload: the worker starts the binding as soon as it runs (what the extension does); second window: another worker while the first is alive. In a real editor the same steps share 2 cores with the workbench starting up: bench/editorStartup.ts measures that.";
  emit(bench, [`## ${heading}`, '', ...table, '', legend, '']);
}

const acceptChainTaskCount = (tasks: number) => Math.min(tasks, quick ? 20 : 40);
/** Seconds a task at 1 thread on the reference VM (four modes, three accepts each, think time included). */
const ACCEPT_CHAIN_SECONDS_PER_TASK: Record<string, number> = { tiny: 5, v3: 9 };
/** How long the simulated user reads a ghost text before Tab. */
const thinkMs = Number(opt('think-ms', '300'));

async function acceptChainSection(bench: Bench, pair: ModelPair): Promise<void> {
  const tasks = bench.tasks.slice(0, acceptChainTaskCount(bench.tasks.length));
  const r = await regimeAcceptChain(tasks, pair, { threads, maxTokens, gpu, flashAttention, log, debounceMs: DEFAULT_DEBOUNCE_MS, thinkMs });
  const off = r.rows.find((x) => x.mode === 'off')!;
  const offAll = median(off.nextGhostMs.flat());
  const rows = r.rows.map((x) => {
    const all = x.nextGhostMs.flat();
    return {
      mode: x.mode,
      accepts: all.length,
      byAccept: x.nextGhostMs.map((ms) => median(ms)),
      medianMs: median(all),
      p90Ms: percentile(all, 0.9),
      vsOff: offAll && median(all) !== null ? median(all)! / offAll : null,
      emptyGhostTexts: x.emptyGhostTexts,
      prefetch: x.prefetch,
      unusedShare: neverShownShare(x.prefetch),
      noGhostTextShare: x.prefetch.started > 0 ? (x.prefetch.started - x.prefetch.shown) / x.prefetch.started : null,
    };
  });
  const enterDebounce = median(r.enter.debounce);
  const enterEarly = median(r.enter.early);
  const enterLine = `After Enter at the end of a line that ends a statement (${r.enter.early.length} of the tasks: an empty-line-in-block task after a line ending in ; } or ), or an end-of-line task at such a line with Enter typed there), Enter -> ghost text median: ${fmt(enterDebounce)} ms with the debounce (today), ${fmt(enterEarly)} ms started at the Enter through the prefetch path (${enterDebounce && enterEarly ? `${fmt(enterEarly / enterDebounce, 2)}x` : '-'}). The early start spends that model time on every such Enter, also when the next keystroke comes within the debounce, which today costs nothing.`;
  ((bench.results.acceptChain ??= {}) as Record<string, unknown>)[pair.name] = { models: r.info, tasks: tasks.length, thinkMs, debounceMs: DEFAULT_DEBOUNCE_MS, rows, raw: r.rows, enter: r.enter };
  const accepts = Array.from({ length: ACCEPTS_PER_CHAIN }, (_, i) => `accept ${i + 1} median ms`);
  const table = [
    `| prefetch | accepts timed | next ghost text median ms | p90 ms | vs off | ${accepts.join(' | ')} | prefetches started | served (with ghost text) | unused | cancelled | not started (busy) | unused share | no ghost text shown share |`,
    `|---|---|---|---|---|${accepts.map(() => '---|').join('')}---|---|---|---|---|---|---|`,
    ...rows.map(
      (x) =>
        `| ${x.mode} | ${x.accepts} | ${fmt(x.medianMs)} | ${fmt(x.p90Ms)} | ${fmt(x.vsOff, 2)}x | ${x.byAccept.map((m) => fmt(m)).join(' | ')} | ${x.prefetch.started} | ${x.prefetch.served} (${x.prefetch.shown}) | ${x.prefetch.started - x.prefetch.served} | ${x.prefetch.cancelled} | ${x.prefetch.busy} | ${pct(x.unusedShare)} | ${pct(x.noGhostTextShare)} |`,
    ),
  ];
  const heading = `Regime 9: accept chain, ${pair.name} pair (${r.info.target.name} + ${r.info.draft?.name ?? 'no draft'}, ${backendExplanation(r.info)})`;
  const legend = `${tasks.length} tasks; on each, the ghost text is accepted ${ACCEPTS_PER_CHAIN} times in a row (fewer when it is empty: ${rows.map((x) => `${x.mode} ${x.emptyGhostTexts}`).join(', ')} chains ended early), ${thinkMs} ms after it appeared (--think-ms). Timed: from the accept to the next ghost text being available to the provider, which asks right after the accept (debounce ${DEFAULT_DEBOUNCE_MS} ms on a cache miss, as draftline.debounceMs). off: no prefetch; accept: prefetch when a completion is accepted; accept+chain: also, when a prefetched completion is shown, the one after it (the extension's behaviour with an inference server); shown: also while any ghost text is shown, the first of a chain included (the extension's behaviour with in-process models, draftline.prefetch.whileShown auto). Here every ghost text is accepted: in use, each shown ghost text the user does not take costs 'shown' one prefetch that is never shown (stopped by the next keystroke that does not type it). After the last accept the user types on: a prefetch still running is stopped. unused: prefetches no request was answered from (cancelled ones included); no ghost text shown: unused, or answered with an empty completion (the model had nothing to add; that answer still saved a model call).`;
  emit(bench, [`## ${heading}`, '', ...table, '', legend, '', enterLine, '']);
}

const alternativesTaskCount = (tasks: number) => Math.min(tasks, quick ? 20 : 80);
/** Seconds a task at 1 thread on the reference VM (the greedy completion, then the alternatives, two scopes). */
const ALTERNATIVES_SECONDS_PER_TASK: Record<string, number> = { tiny: 0.6, v3: 2 };

async function alternativesSection(bench: Bench, pair: ModelPair): Promise<void> {
  const tasks = bench.tasks.slice(0, alternativesTaskCount(bench.tasks.length));
  const r = await regimeAlternatives(tasks, pair, { threads, maxTokens, gpu, flashAttention, log });
  const summaries = SCOPES.map((scope) => {
    const rows = r.rows.filter((x) => x.scope === scope);
    const share = (n: number) => (rows.length ? n / rows.length : null);
    const limited = new Map<string, number>();
    for (const x of rows) {
      const why = x.limitedBy?.replace(/\d+/g, 'N');
      if (why) limited.set(why, (limited.get(why) ?? 0) + 1);
    }
    return {
      scope,
      tasks: rows.length,
      greedyMedianMs: median(rows.map((x) => x.greedyMs)),
      alternativesMedianMs: median(rows.map((x) => x.alternativesMs)),
      alternativesP90Ms: percentile(
        rows.map((x) => x.alternativesMs),
        0.9,
      ),
      suggestionsMean: rows.length ? rows.reduce((n, x) => n + x.suggestions, 0) / rows.length : null,
      threeSuggestions: share(rows.filter((x) => x.suggestions >= ALTERNATIVES_ASKED + 1).length),
      anotherFirstLine: share(rows.filter((x) => x.distinctFirstLines > 1).length),
      greedyExact: rows.filter((x) => x.greedyExact).length,
      top3Exact: rows.filter((x) => x.top3Exact).length,
      greedyFirstLineExact: share(rows.filter((x) => x.greedyExact).length),
      top3FirstLineExact: share(rows.filter((x) => x.top3Exact).length),
      branchTokenIndexMedian: median(rows.filter((x) => x.branch).map((x) => x.branch!.tokenIndex)),
      branchMarginMedian: median(rows.filter((x) => x.branch).map((x) => x.branch!.margin)),
      limitedBy: Object.fromEntries(limited),
    };
  });
  ((bench.results.alternatives ??= {}) as Record<string, unknown>)[pair.name] = { models: r.info, asked: ALTERNATIVES_ASKED, scopes: summaries, raw: r.rows };
  const table = [
    '| pair | branch scope | tasks | ask -> alternatives median ms | p90 ms | suggestions (mean) | 3 suggestions | another first line | first line exact: greedy | top-3 | branch token (median) | branch margin (median) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...summaries.map(
      (x) =>
        `| ${pair.name} | ${x.scope} | ${x.tasks} | ${fmt(x.alternativesMedianMs)} | ${fmt(x.alternativesP90Ms)} | ${fmt(x.suggestionsMean, 2)} | ${pct(x.threeSuggestions)} | ${pct(x.anotherFirstLine)} | ${pct(x.greedyFirstLineExact)} (${x.greedyExact}) | ${pct(x.top3FirstLineExact)} (${x.top3Exact}) | ${fmt(x.branchTokenIndexMedian, 0)} | ${fmt(x.branchMarginMedian, 2)} |`,
    ),
  ];
  const heading = `Regime 10: alternatives, ${pair.name} pair (${r.info.target.name} + ${r.info.draft?.name ?? 'no draft'}, ${backendExplanation(r.info)})`;
  const fewer = summaries
    .map(
      (x) =>
        `${x.scope}: ${
          Object.entries(x.limitedBy)
            .map(([why, n]) => `${n}x "${why}"`)
            .join('; ') || 'never'
        }`,
    )
    .join('; ');
  const legend = `${tasks.length} tasks; on each the greedy ghost text is computed first (median ${fmt(summaries[0].greedyMedianMs)} ms, for scale: a cold prompt), then ${ALTERNATIVES_ASKED} alternatives are asked for (Alt+]) through CompletionEngine.alternatives over the in-process session (the extension's default settings: hybrid speculation, the draft and n-grams; max ${maxTokens} tokens). Timed: from the ask to the suggestions (greedy from the cache, the others computed, post-processed and deduplicated). Branch scope: completion = at the smallest top-two margin anywhere in the greedy completion; firstLine = only before its first line with content is complete (side by side per task, order rotated). First line exact: the file's real continuation's first line with content equals that of the greedy suggestion alone, or of one of the up-to-3 suggestions (top-3). Another first line: the suggestions show more than one first line (an alternative that branches after the first line shows the greedy one's). Fewer than 3 suggestions, as the backend said: ${fewer} (the rest: removed by the engine as reading like another once post-processed).`;
  emit(bench, [`## ${heading}`, '', ...table, '', legend, '']);
}

/** The edits regime's cases: all of both corpora, or (quick, --edits-cases N) N of the npm ones and N/2 public ones, evenly spaced. */
function editsCaseLimit(): { npm: number; shared: number } | undefined {
  const n = opt('edits-cases') !== undefined ? Number(opt('edits-cases')) : quick ? 8 : undefined;
  return n === undefined ? undefined : { npm: n, shared: Math.ceil(n / 2) };
}

/**
 * The model the edits regime's modes run on: --edits-target; else your --target; else the demo
 * next-edit model when one is shipped (demoNextEditModel); else a random stand-in with the real
 * Qwen2.5-Coder tokenizer, whose outputs are garbage: its rows check losslessness and the overheads
 * only (the replay of a perfect model gives the speed a real one reaches).
 */
async function editsModel(): Promise<{ target: string; draft?: string; note: string; standIn?: boolean }> {
  const draft = opt('edits-draft') ?? (opt('edits-target') === undefined && userPair ? opt('draft') : undefined);
  const given = opt('edits-target') ?? (userPair ? opt('target') : undefined);
  if (given) return { target: path.resolve(given), draft: draft && path.resolve(draft), note: `your model ${path.basename(given)}` };
  const demo = demoNextEditModel(ROOT);
  if (demo) return { target: demo, note: `the demo next-edit model ${path.basename(demo)}` };
  const standIn = await benchTarget('qwen-coder-small');
  return {
    target: standIn.file,
    standIn: true,
    note: `no next-edit model: a stand-in (${standIn.note}) whose output is garbage, ${STAND_IN_MAX_TOKENS} tokens a window: losslessness and overheads only`,
  };
}

/** A stand-in never ends its window: this many tokens of it are decoded. */
const STAND_IN_MAX_TOKENS = 64;

/** The replay's cases: all (full run), else --edits-replay-cases (quick: 3), evenly spaced over both corpora. */
function replayCases<T>(cases: T[]): T[] {
  const n = opt('edits-replay-cases') !== undefined ? Number(opt('edits-replay-cases')) : quick ? 3 : cases.length;
  return cases.length <= n ? cases : Array.from({ length: n }, (_, i) => cases[Math.floor((i * cases.length) / n)]!);
}

async function editsSection(bench: Bench): Promise<void> {
  const cases = editsCases(editsCaseLimit());
  const model = await editsModel();
  const format = opt('edits-format') as NextEditFormatId | undefined;
  const r = await regimeEdits(cases, {
    target: model.target,
    draft: model.draft,
    threads,
    gpu,
    flashAttention,
    format,
    contextSize: Number(opt('edits-context', '8192')),
    maxTokens: model.standIn ? STAND_IN_MAX_TOKENS : undefined,
    trees: treesOption,
    treeShape,
    log,
  });
  const trees = editsTreeTable(r, !r.graphReplay);
  const corpora = Object.entries(r.byCorpus).map(([corpus, rows]) => `${corpus} ${rows[0]?.cases ?? 0}`);
  const heading = `Edits: next-edit suggestions, every mode on the same prompts (${model.note}; ${r.format} format; ${threads} thread${threads === 1 ? '' : 's'})`;
  const table = [...EDITS_HEADER, ...r.rows.map(editsTableRow)];
  const perCorpus = Object.entries(r.byCorpus).flatMap(([corpus, rows]) => ['', `${corpus}:`, '', ...EDITS_HEADER, ...rows.map(editsTableRow)]);
  const legend = `${cases.length} cases (${corpora.join(', ')}): npm = the hunks between consecutive versions of bench/editCorpus.ts's EDIT_PAIRS (a hunk the next edit, the file's earlier hunks the history, ${WINDOW_LINES} lines around it the region); the others ../shared/nes-cases/. Modes interleaved per case, each after an untimed request that put the prompt into the KV caches. first edit: ms from the request to its first final edit (the output re-synchronised with the region after it), over the cases that streamed one (their count in brackets); whole window: to the end of the output. tok/eval: generated tokens per target evaluation after the prompt's. acceptance: proposed tokens accepted, per source (server: llama-server's own count). identical to plain: the same region text as plain decoding (in-process modes must be: lossless; "+N at ties": parting from it where the target's top two logits are within what a batch moves them, re-evaluated). window exact: the document with the suggestion applied is the expected one; right lines: an edit on a line the expected edit changes; no suggestion: no edit shown. failed runs: llama-server ended its stream with an error (on a random stand-in: its chat parser, which runs on every streamed chunk, refusing output that is not valid UTF-8); left out of every figure, as their time is that of a shorter output.`;
  const results: Record<string, unknown> = { model: model.target, note: model.note, format: r.format, cases: cases.map((c) => c.id), rows: r.rows, byCorpus: r.byCorpus, runs: r.runs };
  bench.results.edits = results;
  emit(bench, [`## ${heading}`, '', ...table, '', legend, '', ...trees, ...perCorpus, '']);

  for (const x of r.rows) {
    if ((x.mode === 'copy' || x.mode === 'hybrid' || TreeSideBySide.isVariant(x.mode)) && x.identical + x.ties !== x.cases) {
      bench.failed = true;
      console.error(`LOSSLESS VIOLATION (edits): mode ${x.mode} differs from plain on ${x.cases - x.identical - x.ties} case(s) away from a numerical tie`);
    }
  }

  // The replay of a perfect model on the 1.5B shape with Qwen2.5-Coder's tokenizer (bench/editReplay.ts).
  const replayName = opt('edits-replay-target', '1.5b-qwen-coder-q8')!;
  const missing = benchTargetMissing(replayName);
  if (missing) {
    const line = `Edits: the replay of a perfect next-edit model is left out: ${missing}.`;
    bench.md.push(line, '');
    console.log(line);
    return;
  }
  const replayTarget = await benchTarget(replayName);
  const chosen = replayCases(cases);
  // Counted (not timed) under an H100's and the issue's CPU cost: every case of both corpora (a quick run: the regime's cases).
  const countCases = quick ? cases : editsCases();
  const replay = await regimeEditsReplay(chosen, { target: replayTarget.file, threads, gpu, flashAttention, log, countCases });
  const replayHeading = `Edits: replay of a perfect next-edit model (${replayTarget.note}; sweep format; ${threads} thread${threads === 1 ? '' : 's'})`;
  const replayTable = replaySummary(replay.rows);
  const replayLegend = `${replay.rows.length} cases${replay.skipped.length ? ` (${replay.skipped.length} more skipped: the window not read back, or no room in the context)` : ''}. The target's batches are real and timed; what the model writes is the true updated window (the expected region, then <|file_sep|>), so acceptance is decided against it: the speed a real next-edit model of this shape reaches at 100% accuracy, the window copy proposer alone feeding it, its lengths chosen by the adaptive policy (one for all cases, as a session keeps one: its cost model learns this machine's verify cost). plain: one evaluation a token on the same cached prompt. speedup: plain ms / replay ms per case. bound: plain's steps over the replay's, each weighed by issue #39's measured CPU verify cost V(b)/V(1) (llama-bench, 1.5B Q8_0, 2 threads): what the batches allow on that machine. Goal (issue #39, this CPU, 2 threads): >= 2x plain.`;
  const rivalTable = replayRivalSummary(replay.rows);
  const rivalLegend = `Against llama-server's model-free speculation on the same batches: its ngram-simple (the last 12 tokens looked up, the 48 after them drafted) and ngram-mod (24-gram chains, 48-64 tokens) ported line for line from the llama.cpp the bench builds (bench/llamaServerProposers.ts), with the defaults --spec-type gives them, fed the same perfect output on the same target: the proposers compared without either runtime's overheads (llama-server itself on a real next-edit model: not measurable here). And our suffix proposer (src/speculation/suffixProposer.ts: every occurrence of the output's ending in the prompt and the output, merged by frequency), alone and after the copy (the hybrid mode's order), each under an adaptive policy kept across the cases as the copy's is. ${replayVerifyCost(replay.rows)}`;
  results.replay = { target: replayTarget, rows: replay.rows, skipped: replay.skipped, speedupMedian: median(replay.rows.map((x) => x.speedup)) };
  const countedTable = countedSummary(replay.counted);
  const orderTable = countedOrderSummary(replay.counted);
  const headroomTable = lengthHeadroomSummary(replay.counted);
  const countedLegend = `Counted, not timed: the same replay (ours, the suffix proposer alone and after the copy, and the ported rivals, the true window as the output) over ${replay.counted[0]?.cases ?? 0} cases, each batch weighed by the table's V(b)/V(1) (a target that computes nothing, its clock advanced by the table; the policy learns from that clock): what a machine of that cost allows, where none is at hand. Medians of plain's cost over each mode's. Lengths known: the copy (and the copy with the suffix proposer) with every step verifying exactly the part of the offers the output agrees with (bench/countedReplay.ts countKnownLengths): the headroom in choosing lengths; the rest of the way to the whole window in one step is the proposers' content.`;
  (results.replay as Record<string, unknown>).counted = replay.counted;
  emit(bench, [`## ${replayHeading}`, '', ...replayTable, '', replayLegend, '', ...rivalTable, '', rivalLegend, '', ...countedTable, '', countedLegend, '', ...orderTable, '', ...headroomTable, '']);
}

/**
 * `--regimes time-budget` (bench/timeBudget.ts): the time budget against none on a slow target
 * (`--time-budget-target`, the 1.5B-shaped stand-in by default), `--time-budget-ms` (the default
 * setting's), the first `--time-budget-tasks` tasks.
 */
async function timeBudgetSection(bench: Bench): Promise<void> {
  const target = await benchTarget(opt('time-budget-target', '1.5b-lines')!);
  const budgetMs = Number(opt('time-budget-ms', String(DEFAULT_ENGINE_SETTINGS.timeBudgetMs)));
  const taskCount = Math.min(bench.tasks.length, Number(opt('time-budget-tasks', quick ? '8' : '20')));
  const settings = { budgetMs, maxTokens: DEFAULT_ENGINE_SETTINGS.maxTokens, threads };
  const r = await regimeTimeBudget(bench.tasks.slice(0, taskCount), { ...settings, target: target.file, gpu, flashAttention, log });
  const report = timeBudgetReport(r, { ...settings, targetNote: target.note });
  emit(bench, report.md);
  bench.results.timeBudget = report.json;
  if (report.violations > 0) {
    bench.failed = true;
    console.error(`LOSSLESS VIOLATION (time budget): ${report.violations} budgeted ghost text(s) are not the start of the whole one`);
  }
}

/**
 * The trees lab: regime 1's first --trees-tasks tasks (20) on each pair, and the next-edit replay's
 * cases, all of them or --trees-edits-cases N evenly spaced over both corpora.
 */
async function treesLabSection(bench: Bench): Promise<void> {
  const editLimit = opt('trees-edits-cases');
  await treesSection(bench, {
    threads,
    gpu,
    flashAttention,
    maxTokens,
    log,
    taskCount: Number(opt('trees-tasks', '20')),
    editCases: spaced(editsCases(), editLimit === undefined ? undefined : Number(editLimit)),
  });
}

const minutes = (seconds: number) => `${(seconds / 60).toFixed(1)} min`;

async function main() {
  const started = Date.now();
  // What the run needs built: the native addon (or a refusal that says why), the worker bundle for regime 5.
  const native = await prepareBenchNative(argv);
  if (regimes.has(5)) execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  const pairs = modelPairs();
  const corpusRoot = ensureCorpus();
  const files = sourceFiles(corpusRoot);
  const tasks = sampleTasks(files, taskCount, 20261122);
  const autoClosedTasks = sampleAutoClosedTasks(files, regimes.has(1) ? autoClosedTaskCount : 0, 20261125, tasks.length);
  process.stderr.write(`${tasks.length} tasks from ${files.length} files of ${CORPUS_PACKAGES.join(', ')}; pairs: ${pairs.map((p) => p.name).join(', ')}\n`);
  const results: Record<string, unknown> = {
    date: new Date().toISOString(),
    quick,
    machine: machine(),
    maxTokens,
    corpus: CORPUS_PACKAGES,
    tasks: tasks.length,
    taskList: [...tasks, ...autoClosedTasks].map(({ id, file, kind, offset, hiddenChars, autoClosed }) => ({ id, file, kind, offset, hiddenChars, autoClosed })),
    modes: {},
  };
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  const outDir = path.resolve(opt('out', path.join(ROOT, 'bench/results', `${stamp}${quick ? '-quick' : ''}`))!);
  fs.mkdirSync(outDir, { recursive: true });
  const md: string[] = [
    `# Draftline benchmark ${results.date}`,
    '',
    `Machine: ${JSON.stringify(results.machine)}`,
    '',
    `Tasks: ${tasks.length} cursor positions in ${files.length} files of ${CORPUS_PACKAGES.join(', ')} (mid-line, end of line, empty line in a block, in turn); the rest of the first line with content after the cursor is taken out of the document, and completions are scored against the file's own continuation. Max ${maxTokens} tokens; modes interleaved per task. Each measured completion follows an untimed one at the same spot one character earlier (the keystroke case: KV caches warm as in the editor).${autoClosedTasks.length ? ` Regime 1 also runs ${autoClosedTasks.length} before-auto-closed tasks, reported apart: the cursor inside a line, with only what the editor auto-closed after it.` : ''}`,
    '',
  ];
  const bench: Bench = { tasks, files, autoClosedTasks, pairs, outDir, results, md, modes: [], failed: false };
  const list = sections(bench);
  const estimates = list.map((s) => s.estimateSeconds);
  const estimatedSeconds = estimates.every((e) => e !== null) ? estimates.reduce((n, e) => n! + e!, 0)! : null;
  if (estimatedSeconds !== null) {
    const parts = list.filter((s) => s.estimateSeconds! > 0).map((s) => `${s.name} ${minutes(s.estimateSeconds!)}`);
    process.stderr.write(`estimated run time: ${minutes(estimatedSeconds)} as on the busy reference VM at 1 thread, less on a quiet one (${parts.join(', ')})\n`);
  }
  const sectionSeconds: Record<string, number> = {};
  results.sectionSeconds = sectionSeconds;
  results.estimatedSeconds = estimatedSeconds;
  // Written after every section too: a run stopped at a time limit (the bench kit's lease) keeps the sections it finished.
  const save = () => {
    if (bench.modes.length) {
      fs.writeFileSync(path.join(outDir, 'runs.json'), resultsJson(bench.modes.flatMap((r) => r.raw.map(({ tokens, ...rest }) => ({ pair: r.pair.name, ...rest, tokens: tokens.length })))));
    }
    results.seconds = (Date.now() - started) / 1000;
    const timeLine = `Run time: ${Math.round(results.seconds as number)} s${estimatedSeconds === null ? '' : ` (estimated ${Math.round(estimatedSeconds)} s)`} (${Object.entries(sectionSeconds)
      .map(([name, s]) => `${name} ${s.toFixed(0)} s`)
      .join(', ')})`;
    results.nativeAddon = native;
    results.decodePaths = decodePaths();
    fs.writeFileSync(path.join(outDir, 'results.json'), resultsJson(results, 2));
    // The header (title, machine) then what was measured with: the native addon and each model's decode path.
    const report = [...md.slice(0, 4), ...decodePathHeader(native), ...md.slice(4)];
    fs.writeFileSync(path.join(outDir, 'report.md'), `${report.join('\n')}\n${timeLine}\n`);
    return timeLine;
  };
  for (const section of list) {
    const t0 = Date.now();
    await section.run(bench);
    sectionSeconds[section.name] = (Date.now() - t0) / 1000;
    process.stderr.write(`${section.name}: ${sectionSeconds[section.name].toFixed(0)} s${section.estimateSeconds ? ` (estimated ${section.estimateSeconds.toFixed(0)} s)` : ''}\n`);
    save();
  }
  const timeLine = save();
  console.log(`${timeLine}\nresults: ${path.relative(process.cwd(), outDir)}/ (results.json, ${bench.modes.length ? 'runs.json, ' : ''}report.md, charts)`);
  if (bench.failed) process.exit(1);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
