// The `edits` regime (issue #39): next-edit suggestions on real edits, every decoding mode side by side
// on the same model and prompts, interleaved per case: plain, copy (the window copy proposer), hybrid
// (copy + draft + n-gram) in-process (nextEdit/generation.ts on the loaded target, the prompt
// built by the format and the output reduced by outputToEdit.ts, as the worker's next-edit task does), and
// llama-server on the same model file and the same prompt text through /completion with
// `--spec-type ngram-simple` and `ngram-mod` (the anchor). Corpora: the npm version pairs of
// bench/editCorpus.ts and the public cases of ../shared/nes-cases/ (read there, never copied).
import { applyReplacements, finalEditsSoFar, outputToEdits, reduceToEdits } from '../src/nextEdit/outputToEdit';
import { NEXT_EDIT_FORMATS } from '../src/nextEdit/formats';
import { copyCursorToken, generateNextEdit, StreamedEdits } from '../src/nextEdit/generation';
import type { EditEvent, NextEditFormatId, NextEditPrompt, NextEditRequest, TextReplacement } from '../src/nextEdit/types';
import { DEFAULT_SPECULATION, type InferenceSession, replaysGraphs } from '../src/inference/inferenceSession';
import { loadBenchSession } from './decodePath';
import type { LlamaToken } from '../src/llama/llamaTypes';
import { findInSequence } from '../src/ngram';
import { DraftModelProposer } from '../src/speculation/draftModelProposer';
import { documentSuffixProposer } from '../src/inference/documentNgrams';
import { SpeculationPolicy } from '../src/speculation/policy';
import { NgramProposer } from '../src/speculation/ngramProposer';
import type { ModelSettings } from '../src/shared/settings';
import type { SourceId, Token } from '../src/shared/decoding';
import { loadNesCases, nesCasesAvailable } from '../testbed/nesCases';
import { batchDrift, judgeDivergence } from '../testbed/batchDrift';
import { type EditCase, editCases } from './editCorpus';
import { replayPerfectModel, type CountedCase } from './editReplay';
import { type CountedReplay, countedUnderTables, isPorted, OWN_REPLAY_VARIANTS, replayRivals, rivalLabel } from './countedReplay';
import { LlamaServer, LlamaServerStreamError } from '../testbed/llamaServer';
import { fmt, median, percentile, Progress } from './stats';
import { sideBySideTable, treeCounts, TreeSideBySide, type TreesOption, type TreeVariant } from './treeModes';
import type { DecodeMode } from '../src/shared/decoding';

export type EditsMode = 'plain' | 'copy' | 'hybrid' | 'llama-server ngram-simple' | 'llama-server ngram-mod' | TreeVariant;
export const EDITS_MODES: EditsMode[] = ['plain', 'copy', 'hybrid', 'llama-server ngram-simple', 'llama-server ngram-mod'];
const IN_PROCESS = new Set<EditsMode>(['plain', 'copy', 'hybrid', 'copy chain', 'copy tree', 'hybrid chain', 'hybrid tree']);
/** The modes run as chains and as trees side by side where trees are verified (bench/treeModes.ts). */
const TREE_MODES_EDITS: DecodeMode[] = ['copy', 'hybrid'];

/** The side-by-side table of an edits run where trees were verified (none elsewhere). */
export function editsTreeTable(result: EditsResult, forcedShape: boolean): string[] {
  if (result.treeShape === null) return [];
  const trees = new Map<string, { steps: number; nodes: number; accepted: number }>();
  const rate = new Map<string, number | null>();
  for (const row of result.rows) {
    const runs = result.runs.filter((r) => r.mode === row.mode && !r.failed);
    const ms = runs.reduce((n, r) => n + r.windowMs, 0);
    rate.set(row.mode, ms > 0 ? (runs.reduce((n, r) => n + r.generatedTokens, 0) * 1000) / ms : null);
    if (TreeSideBySide.isVariant(row.mode)) {
      trees.set(
        row.mode,
        runs.reduce((t, r) => ({ steps: t.steps + (r.trees?.steps ?? 0), nodes: t.nodes + (r.trees?.nodes ?? 0), accepted: t.accepted + (r.trees?.accepted ?? 0) }), {
          steps: 0,
          nodes: 0,
          accepted: 0,
        }),
      );
    }
  }
  const rows = result.rows.map((row) => ({
    mode: row.mode,
    tasks: row.cases,
    tokensPerEvaluation: row.tokensPerEvaluation,
    tokensPerSecond: rate.get(row.mode) ?? null,
    identical: row.identical,
    ties: row.ties,
  }));
  return sideBySideTable(result.treeShape, TREE_MODES_EDITS, rows, trees, forcedShape);
}
const SPEC_TYPE: Partial<Record<EditsMode, string>> = { 'llama-server ngram-simple': 'ngram-simple', 'llama-server ngram-mod': 'ngram-mod' };

export interface CorpusCase extends EditCase {
  /** 'npm' (bench/editCorpus.ts) or the ../shared/nes-cases file it came from. */
  corpus: string;
  alternatives?: string[];
}

/**
 * The cases of both corpora, in order: the npm pairs', then the public ones. `limit` (a quick run) keeps
 * that many of each, evenly spaced, so every package and source is still there.
 */
export function editsCases(limit?: { npm: number; shared: number }): CorpusCase[] {
  const spaced = <T>(all: T[], n: number | undefined) => (n === undefined || all.length <= n ? all : Array.from({ length: n }, (_, i) => all[Math.floor((i * all.length) / n)]!));
  const npm = spaced(
    editCases().map((c) => ({ ...c, corpus: 'npm' })),
    limit?.npm,
  );
  const shared = nesCasesAvailable()
    ? spaced(
        loadNesCases().map((c) => ({ ...c, corpus: c.file.replace(/\.json$/, '') })),
        limit?.shared,
      )
    : [];
  if (!shared.length) process.stderr.write('edits: ../shared/nes-cases/ is not there: the npm corpus only\n');
  return [...npm, ...shared];
}

/** The file a unified diff is about (`+++ b/path`), else the fallback. */
function diffPath(diff: string, fallback: string): string {
  const m = /^\+\+\+ (?:b\/)?(.+?)\s*$/m.exec(diff);
  return m && m[1] !== '/dev/null' ? m[1]! : fallback;
}

export function nextEditRequestOf(c: CorpusCase, mode: NextEditRequest['mode'], format: NextEditFormatId): NextEditRequest {
  const events: EditEvent[] = c.events.map((diff) => ({ path: diffPath(diff, c.path), diff }));
  return { path: c.path, languageId: c.language, text: c.before, cursorOffset: c.cursorOffset, events, region: { start: c.regionStart, end: c.regionEnd }, format, mode, documentKey: `edits:${c.id}` };
}

/** How a suggestion compares with the case's expected region. */
export interface EditQuality {
  /** The document with the edits applied is the expected one (or an equally correct alternative). */
  windowExact: boolean;
  /** Some edit touches a line the expected edit changes. */
  rightLines: boolean;
  noSuggestion: boolean;
}

const lineAt = (text: string, offset: number) => text.slice(0, offset).split('\n').length - 1;
function touchedLines(text: string, edits: readonly TextReplacement[]): Set<number> {
  const lines = new Set<number>();
  for (const e of edits) for (let l = lineAt(text, e.start); l <= lineAt(text, Math.max(e.start, e.end)); l++) lines.add(l);
  return lines;
}

export function editQuality(c: CorpusCase, edits: readonly TextReplacement[]): EditQuality {
  const after = applyReplacements(c.before, edits);
  const wanted = [c.expected, ...(c.alternatives ?? [])].map((region) => c.before.slice(0, c.regionStart) + region + c.before.slice(c.regionEnd));
  const current = c.before.slice(c.regionStart, c.regionEnd);
  const expectedLines = touchedLines(c.before, reduceToEdits(current, c.expected, c.regionStart));
  return { windowExact: wanted.includes(after), rightLines: [...touchedLines(c.before, edits)].some((l) => expectedLines.has(l)), noSuggestion: edits.length === 0 };
}

export interface EditsRun {
  case: string;
  corpus: string;
  mode: EditsMode;
  /** ms from the request to its first final edit (streamed), when there was one. */
  firstEditMs: number | null;
  /** ms from the request to the end of the window's output. */
  windowMs: number;
  generatedTokens: number;
  /** Target evaluations after the prompt's (llama-server: unknown). */
  evaluations: number | null;
  promptTokensEvaluated: number | null;
  proposed: Partial<Record<SourceId | 'server', number>>;
  accepted: Partial<Record<SourceId | 'server', number>>;
  regionText: string | null;
  noSuggestion: string | null;
  quality: EditQuality;
  /** The run did not finish (llama-server's error mid-stream): left out of every figure, counted apart. */
  failed?: string;
  /** Steps that verified a token tree, their nodes and the nodes kept (bench/treeModes.ts). */
  trees?: { steps: number; nodes: number; accepted: number };
  /**
   * Where an in-process run's region differs from plain's: whether it parts from plain decoding at a
   * numerical tie of the target (testbed/batchDrift.ts judgeDivergence), and the margin there.
   */
  tie?: { tie: boolean; margin: number };
}

export interface EditsRow {
  mode: EditsMode;
  cases: number;
  firstEditMedianMs: number | null;
  firstEditP90Ms: number | null;
  /** Cases with an edit streamed before the end (the others: no suggestion, or final only at the end). */
  firstEditCases: number;
  windowMedianMs: number | null;
  windowP90Ms: number | null;
  /** Median over cases of plain's whole-window time over this mode's. */
  speedupMedian: number | null;
  tokensPerEvaluation: number | null;
  acceptance: Partial<Record<SourceId | 'server', { proposed: number; accepted: number }>>;
  /** Same region text as plain's (in-process: token-identical decoding gives the same text). */
  identical: number;
  /** Not identical, but parting from plain decoding at a numerical tie of the target (a batch's rounding). */
  ties: number;
  windowExact: number;
  rightLines: number;
  noSuggestion: number;
  /** Why, by reason (outputToEdit's refusals; `unchanged`: the model kept the region). */
  noSuggestionReasons: Record<string, number>;
  /** Runs that did not finish (left out of the figures above). */
  failed: number;
}

export interface EditsResult {
  model: string;
  format: NextEditFormatId;
  runs: EditsRun[];
  rows: EditsRow[];
  byCorpus: Record<string, EditsRow[]>;
  /** Where trees were verified: the fixed shape chain and tree ran side by side on. */
  treeShape: number | null;
  /** Whether the target's backend has fixed verify shapes of its own (replaysGraphs). */
  graphReplay: boolean;
}

function summarize(runs: EditsRun[], modes: EditsMode[]): EditsRow[] {
  const plainOf = new Map(runs.filter((r) => r.mode === 'plain').map((r) => [r.case, r]));
  return modes.map((mode) => {
    const failed = runs.filter((r) => r.mode === mode && r.failed).length;
    const mine = runs.filter((r) => r.mode === mode && !r.failed);
    const first = mine.flatMap((r) => (r.firstEditMs === null ? [] : [r.firstEditMs]));
    const windows = mine.map((r) => r.windowMs);
    const speedups = mine.flatMap((r) => {
      const p = plainOf.get(r.case);
      return p && r.windowMs > 0 ? [p.windowMs / r.windowMs] : [];
    });
    const withEvaluations = mine.filter((r) => r.evaluations !== null && r.evaluations > 0);
    const tokens = withEvaluations.reduce((n, r) => n + r.generatedTokens, 0);
    const evaluations = withEvaluations.reduce((n, r) => n + r.evaluations!, 0);
    const acceptance: EditsRow['acceptance'] = {};
    for (const r of mine)
      for (const [source, proposed] of Object.entries(r.proposed) as [SourceId, number][]) {
        if (!proposed) continue;
        const a = (acceptance[source] ??= { proposed: 0, accepted: 0 });
        a.proposed += proposed;
        a.accepted += r.accepted[source] ?? 0;
      }
    return {
      mode,
      cases: mine.length,
      firstEditMedianMs: median(first),
      firstEditP90Ms: percentile(first, 0.9),
      firstEditCases: first.length,
      windowMedianMs: median(windows),
      windowP90Ms: percentile(windows, 0.9),
      speedupMedian: median(speedups),
      tokensPerEvaluation: evaluations ? tokens / evaluations : null,
      acceptance,
      identical: mine.filter((r) => plainOf.get(r.case)?.regionText === r.regionText).length,
      ties: mine.filter((r) => r.tie?.tie).length,
      windowExact: mine.filter((r) => r.quality.windowExact).length,
      rightLines: mine.filter((r) => r.quality.rightLines).length,
      noSuggestion: mine.filter((r) => r.quality.noSuggestion).length,
      noSuggestionReasons: mine.reduce<Record<string, number>>((n, r) => {
        if (r.noSuggestion) n[r.noSuggestion] = (n[r.noSuggestion] ?? 0) + 1;
        return n;
      }, {}),
      failed,
    };
  });
}

export interface EditsOptions {
  /** The next-edit model (a real one, the demo one, or a stand-in). */
  target: string;
  draft?: string;
  threads: number;
  gpu: ModelSettings['gpu'];
  flashAttention: ModelSettings['flashAttention'];
  /** The prompt format; default: the one the model's name says, else sweep. */
  format?: NextEditFormatId;
  modes?: EditsMode[];
  contextSize: number;
  /** Bound on each window's tokens in place of the format's (a stand-in model that never stops). */
  maxTokens?: number;
  /** The target's tree verification, and the fixed shape chain and tree run side by side on where trees are verified. */
  trees?: TreesOption;
  treeShape?: number;
  log(level: string, message: string): void;
}

/** The prompt's tokens as the model reads them: BOS first when it wants one, control tokens parsed. */
export function promptTokensOf(session: InferenceSession, prompt: NextEditPrompt): Token[] {
  const info = session.target.info;
  return [...(info.addBos && info.bos !== null ? [info.bos] : []), ...(session.target.model.tokenize(prompt.prompt, true) as Token[])];
}

/** The session's n-gram source as its completions use it: the prompt and output first, then the open documents. */
function ngramProposer(session: InferenceSession, documentKey: string | undefined): NgramProposer {
  const { ngramMinMatch: minN, ngramMaxMatch: maxN } = DEFAULT_SPECULATION;
  return new NgramProposer((history, maxLen) => {
    const local = findInSequence(history, { minN, maxN, maxLen });
    const global = session.documents.lookup(history, maxLen, { preferKey: documentKey });
    const best = !local ? global : !global ? local : global.n > local.n ? global : local;
    return best && best.n >= 1 ? { tokens: best.tokens, matchLength: best.n } : null;
  });
}

/**
 * One next-edit request decoded on the session's target (its cache reused across requests), its final
 * edits streamed by outputToEdit's streaming reduction, its whole output reduced to edits.
 */
async function decodeInProcess(session: InferenceSession, request: NextEditRequest, prompt: NextEditPrompt, maxTokens?: number, policy: SpeculationPolicy = session.policy, suffix = false) {
  const format = NEXT_EDIT_FORMATS[prompt.format];
  const model = session.target.model;
  const streamed = new StreamedEdits(format, prompt, request);
  const draft = session.draft && request.mode === 'hybrid' ? new DraftModelProposer(session.draft.evaluator, DEFAULT_SPECULATION.draftMinConfidence) : undefined;
  const t0 = performance.now();
  const gen = await generateNextEdit({
    target: session.target.evaluator,
    tokenize: (text, specials) => model.tokenize(text, specials) as Token[],
    detokenize: (tokens) => model.detokenize(tokens as readonly LlamaToken[], false),
    isEndToken: (token) => model.isEogToken(token as LlamaToken),
    prompt: maxTokens === undefined ? prompt : { ...prompt, maxTokens },
    promptTokens: promptTokensOf(session, prompt),
    mode: request.mode,
    policy,
    proposers: [
      draft,
      request.mode === 'hybrid' ? ngramProposer(session, request.documentKey) : undefined,
      // The chain and tree side by side: the suffix proposer, whose offers are trees (where the mode takes it).
      suffix ? documentSuffixProposer(session.documents, request.documentKey, DEFAULT_SPECULATION, policy) : undefined,
    ],
    // As the worker streams them (inference/sessionNextEdits.ts): the final edits so far, each once.
    finalEdits: (text) => streamed.finalSoFar(text),
  });
  const windowMs = performance.now() - t0;
  const out = outputToEdits(request, prompt, format, gen.text);
  return { firstEditMs: gen.timeToFirstEditMs ?? null, windowMs, stats: gen.stats, tokens: gen.tokens, regionText: out.regionText, edits: out.edits, noSuggestion: out.noSuggestion?.reason ?? null };
}

/** Every mode on every case, the order rotated per case. */
export async function regimeEdits(cases: CorpusCase[], opts: EditsOptions): Promise<EditsResult> {
  const session = await loadBenchSession(
    {
      targetModel: opts.target,
      draftModel: opts.draft ?? '',
      gpu: opts.gpu,
      gpuLayers: 'auto',
      threads: opts.threads,
      contextSize: opts.contextSize,
      flashAttention: opts.flashAttention,
      treeVerification: opts.trees ?? 'auto',
    },
    DEFAULT_SPECULATION,
    opts.log,
  );
  const format: NextEditFormatId = opts.format ?? 'sweep';
  const modes = (opts.modes ?? EDITS_MODES).filter((m) => (IN_PROCESS.has(m) ? true : LlamaServer.available()));
  // Where the target verifies trees: the copy and hybrid modes' chains and trees side by side.
  const sideBySide = TreeSideBySide.for(
    session,
    TREE_MODES_EDITS.filter((m) => modes.includes(m as EditsMode)),
    opts.treeShape ?? 16,
  );
  if (sideBySide) modes.push(...sideBySide.modes);
  if (!LlamaServer.available()) process.stderr.write('edits: llama-server not built (bash scripts/build-llama-server.sh; in the kit build-cuda.sh): its modes are left out\n');
  const servers: Partial<Record<EditsMode, LlamaServer>> = {};
  for (const mode of modes) {
    const specType = SPEC_TYPE[mode];
    if (specType)
      servers[mode] = await LlamaServer.start(opts.target, null, {
        threads: opts.threads,
        contextSize: opts.contextSize,
        maxProposal: DEFAULT_SPECULATION.maxProposal,
        minConfidence: DEFAULT_SPECULATION.draftMinConfidence,
        flashAttention: session.target.attention.flashAttention,
        gpu: session.info.gpuLayers.target > 0,
        specType,
      });
  }
  const runs: EditsRun[] = [];
  const progress = new Progress(cases.length * modes.length, 'edits');
  /** How far a position's logits move between a batch and alone here: what a numerical tie is (measured once, when needed). */
  let drift: number | undefined;
  try {
    for (const [index, c] of cases.entries()) {
      const plainRequest = nextEditRequestOf(c, 'plain', format);
      const prompt = NEXT_EDIT_FORMATS[format].buildPrompt(plainRequest);
      session.documents.setDocument(plainRequest.documentKey!, c.before);
      // Untimed: the prompt into the KV caches (one token decoded), so that each mode's timed request
      // finds it there as the next one after a keystroke would; the servers likewise.
      await decodeInProcess(session, plainRequest, prompt, 1);
      for (const server of Object.values(servers))
        await server.completion(prompt.prompt, 1, prompt.stop).catch((error: unknown) => (error instanceof LlamaServerStreamError ? undefined : Promise.reject(error)));
      const order = modes.map((_, i) => modes[(i + index) % modes.length]!);
      /** Each in-process mode's output tokens for this case, to judge a difference from plain's. */
      const outputs = new Map<EditsMode, Token[]>();
      for (const mode of order) {
        const server = servers[mode];
        let run: EditsRun;
        if (server) {
          const current = c.before.slice(prompt.region.start, prompt.region.end);
          let firstEditMs: number | null = null;
          const t0 = performance.now();
          const r = await server
            .completion(prompt.prompt, opts.maxTokens ?? prompt.maxTokens, prompt.stop, (text) => {
              if (firstEditMs !== null) return;
              const partial = NEXT_EDIT_FORMATS[format].partialRegion(text, prompt);
              if (partial !== null && finalEditsSoFar(current, partial, prompt.region.start).edits.length) firstEditMs = performance.now() - t0;
            })
            .catch((error: unknown) => {
              if (!(error instanceof LlamaServerStreamError)) throw error;
              return error;
            });
          if (r instanceof LlamaServerStreamError) {
            // Its time would be that of a shorter output: not a run to compare.
            const quality = { windowExact: false, rightLines: false, noSuggestion: true };
            runs.push({
              case: c.id,
              corpus: c.corpus,
              mode,
              firstEditMs: null,
              windowMs: performance.now() - t0,
              generatedTokens: 0,
              evaluations: null,
              promptTokensEvaluated: null,
              proposed: {},
              accepted: {},
              regionText: null,
              noSuggestion: null,
              quality,
              failed: r.message,
            });
            progress.tick();
            continue;
          }
          // Read and checked as the server backend reads a server's answer (the same refusals as in-process).
          const out = outputToEdits(nextEditRequestOf(c, 'plain', format), prompt, NEXT_EDIT_FORMATS[format], r.text);
          run = {
            case: c.id,
            corpus: c.corpus,
            mode,
            firstEditMs,
            windowMs: r.latencyMs,
            generatedTokens: r.predicted,
            evaluations: null,
            promptTokensEvaluated: r.promptTokensEvaluated,
            proposed: { server: r.draftProposed },
            accepted: { server: r.draftAccepted },
            regionText: out.regionText,
            noSuggestion: out.noSuggestion?.reason ?? null,
            quality: editQuality(c, out.edits),
          };
        } else {
          const variant = TreeSideBySide.isVariant(mode) ? mode : null;
          const request = nextEditRequestOf(c, (variant ? TreeSideBySide.baseMode(variant) : mode) as NextEditRequest['mode'], format);
          const r = await decodeInProcess(session, request, prompt, opts.maxTokens, variant && sideBySide ? sideBySide.overrides(variant).policy : undefined, variant !== null);
          outputs.set(mode, r.tokens);
          const s = r.stats.speculation;
          const sources = Object.keys(s.bySource);
          run = {
            case: c.id,
            corpus: c.corpus,
            mode,
            firstEditMs: r.firstEditMs,
            windowMs: r.windowMs,
            generatedTokens: r.stats.generatedTokens,
            // The prompt's evaluation yields the first token: the window's own evaluations are the rest.
            evaluations: Math.max(0, s.targetEvaluations - 1),
            promptTokensEvaluated: r.stats.promptTokensEvaluated ?? null,
            proposed: Object.fromEntries(sources.map((k) => [k, s.bySource[k].proposedTokens])),
            accepted: Object.fromEntries(sources.map((k) => [k, s.bySource[k].acceptedTokens])),
            regionText: r.regionText,
            noSuggestion: r.noSuggestion,
            quality: editQuality(c, r.edits),
            ...(variant ? { trees: treeCounts(r.stats) } : {}),
          };
        }
        runs.push(run);
        progress.tick();
      }
      // A lossless mode may part from plain decoding only where the target's top two logits tie within
      // what batching moves them: judged on the tokens, as regime 1 judges its tasks.
      const caseRuns = runs.slice(-order.length);
      const plainRun = caseRuns.find((r) => r.mode === 'plain');
      const plainTokens = outputs.get('plain');
      const differing = caseRuns.filter((r) => plainRun && plainTokens && outputs.has(r.mode) && r.regionText !== plainRun.regionText);
      const promptTokens = differing.length ? promptTokensOf(session, prompt) : [];
      for (const run of differing) {
        drift ??= await batchDrift(session);
        const verdict = await judgeDivergence(session, promptTokens, plainTokens!, outputs.get(run.mode)!, drift);
        run.tie = { tie: verdict.tie, margin: verdict.margin };
      }
      session.documents.removeDocument(plainRequest.documentKey!);
    }
  } finally {
    for (const server of Object.values(servers)) await server.stop();
    await session.dispose();
  }
  const byCorpus: Record<string, EditsRow[]> = {};
  for (const corpus of [...new Set(cases.map((c) => c.corpus))])
    byCorpus[corpus] = summarize(
      runs.filter((r) => r.corpus === corpus),
      modes,
    );
  return { model: opts.target, format, runs, rows: summarize(runs, modes), byCorpus, treeShape: sideBySide?.size ?? null, graphReplay: replaysGraphs(session.info) };
}

export const EDITS_HEADER = [
  '| mode | cases | first edit median ms | p90 | whole window median ms | p90 | speedup vs plain (median) | tok/eval | acceptance by source | identical to plain | window exact | right lines | no suggestion | failed runs |',
  '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
];

export function editsTableRow(x: EditsRow): string {
  const acceptance =
    Object.entries(x.acceptance)
      .map(([source, a]) => `${source} ${a!.proposed ? Math.round((100 * a!.accepted) / a!.proposed) : 0}% of ${a!.proposed}`)
      .join(', ') || '-';
  return `| ${x.mode} | ${x.cases} | ${fmt(x.firstEditMedianMs)} (${x.firstEditCases}) | ${fmt(x.firstEditP90Ms)} | ${fmt(x.windowMedianMs)} | ${fmt(x.windowP90Ms)} | ${fmt(x.speedupMedian, 2)}x | ${fmt(x.tokensPerEvaluation, 2)} | ${acceptance} | ${x.identical}/${x.cases}${x.ties ? ` (+${x.ties} at ties)` : ''} | ${x.windowExact} | ${x.rightLines} | ${x.noSuggestion}${
    Object.keys(x.noSuggestionReasons).length
      ? ` (${Object.entries(x.noSuggestionReasons)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')})`
      : ''
  } | ${x.failed} |`;
}

export interface ReplayCaseRow {
  case: string;
  corpus: string;
  tokens: number;
  plainMs: number;
  replayMs: number;
  speedup: number;
  tokensPerEvaluation: number;
  boundSpeedup: number;
  accepted: number;
  proposed: number;
  /** Replay: from the request to its first final edit (streamed to the editor), when one came. */
  replayFirstEditMs?: number;
  /** llama-server's ngram speculation types, ported, replayed on the same batches (bench/llamaServerProposers.ts). */
  rivals?: Record<string, { ms: number; speedup: number; tokensPerEvaluation: number }>;
  /** This machine's ms of one target evaluation, by batch size (median over the case's runs). */
  batchMs?: Record<number, number>;
}

/**
 * The sweep output a perfect model writes for a case: the region as the prompt shows it with the
 * expected edit made, then the newline and <|file_sep|> the format stops at. Null when the format
 * does not read it back as that region (checked, so the replay measures a real output).
 */
export function perfectSweepOutput(c: CorpusCase, prompt: NextEditPrompt): string | null {
  const after = c.before.slice(0, c.regionStart) + c.expected + c.before.slice(c.regionEnd);
  const grown = after.length - c.before.length;
  // Where the documents differ (in `before`): it must lie in the prompt's region (whole lines, which
  // may leave out the case region's last newline).
  let head = 0;
  while (head < c.before.length && c.before[head] === after[head]) head++;
  let tail = 0;
  while (tail < c.before.length - head && tail < after.length - head && c.before[c.before.length - 1 - tail] === after[after.length - 1 - tail]) tail++;
  if (head < prompt.region.start || c.before.length - tail > prompt.region.end) return null;
  const window = after.slice(prompt.region.start, prompt.region.end + grown);
  const output = `${window}\n${prompt.stop[0]}`;
  const parsed = NEXT_EDIT_FORMATS.sweep.parseOutput(output, prompt);
  return 'regionText' in parsed && parsed.regionText === window ? output : null;
}

/**
 * Replay of a perfect next-edit model (bench/editReplay.ts) on every case: the target's batches are
 * real and timed, the output is the true updated window (sweep format). Per case: plain and the copy
 * proposer on the same cached prompt, and the bound the batches allow under issue #39's CPU cost.
 */
export async function regimeEditsReplay(
  cases: CorpusCase[],
  opts: {
    target: string;
    threads: number;
    gpu: ModelSettings['gpu'];
    flashAttention: ModelSettings['flashAttention'];
    log(level: string, message: string): void;
    /** Cases to count (not time) under cost tables: an H100's and issue #39's CPU table (countReplay). */
    countCases?: CorpusCase[];
  },
) {
  const session = await loadBenchSession(
    { targetModel: opts.target, draftModel: '', gpu: opts.gpu, gpuLayers: 'auto', threads: opts.threads, contextSize: 4096, flashAttention: opts.flashAttention },
    DEFAULT_SPECULATION,
    opts.log,
  );
  const rows: ReplayCaseRow[] = [];
  const skipped: string[] = [];
  const progress = new Progress(cases.length, 'edits replay');
  let counted: CountedReplay[] = [];
  // One policy for every case, as a session keeps one: adaptive, its cost model learns this machine's
  // verify cost and the copy length follows from it.
  const policy = new SpeculationPolicy({ ...DEFAULT_SPECULATION, adaptive: true, graphReplay: replaysGraphs(session.info) });
  const rivals = { ...replayRivals(), ...Object.fromEntries(Object.entries(OWN_REPLAY_VARIANTS).map(([name, make]) => [name, make()])) };
  try {
    for (const c of cases) {
      const prompt = NEXT_EDIT_FORMATS.sweep.buildPrompt(nextEditRequestOf(c, 'copy', 'sweep'));
      const output = perfectSweepOutput(c, prompt);
      const tokens = promptTokensOf(session, prompt);
      const tokenize = (text: string) => session.target.model.tokenize(text, true) as Token[];
      const expected = output === null ? [] : tokenize(output);
      if (output === null || tokens.length + expected.length + 40 > session.target.evaluator.capacity) {
        skipped.push(c.id);
        progress.tick();
        continue;
      }
      const current = c.before.slice(prompt.region.start, prompt.region.end);
      const hasFinalEdit = (out: readonly Token[]) => {
        const partial = NEXT_EDIT_FORMATS.sweep.partialRegion(session.target.model.detokenize(out as readonly LlamaToken[], false), prompt);
        return partial !== null && finalEditsSoFar(current, partial, prompt.region.start).edits.length > 0;
      };
      const r = await replayPerfectModel({
        target: session.target.evaluator,
        prompt: tokens,
        expected,
        copySource: tokenize(prompt.copySource),
        copyCursor: copyCursorToken(prompt, tokenize),
        hasFinalEdit,
        rivals,
        policy,
      });
      rows.push({
        case: c.id,
        corpus: c.corpus,
        tokens: r.tokens,
        plainMs: r.plain.ms,
        replayMs: r.replay.ms,
        speedup: r.speedup,
        tokensPerEvaluation: r.replay.tokensPerEvaluation,
        boundSpeedup: r.bound.speedup,
        accepted: r.replay.acceptedTokens,
        proposed: r.replay.proposedTokens,
        replayFirstEditMs: r.replay.firstEditMs,
        rivals: Object.fromEntries(Object.entries(r.rivals).map(([name, x]) => [name, { ms: x.ms, speedup: x.speedup, tokensPerEvaluation: x.tokensPerEvaluation }])),
        batchMs: r.batchMs,
      });
      progress.tick();
    }
    if (opts.countCases?.length) counted = await countedReplays(session, opts.countCases);
  } finally {
    await session.dispose();
  }
  return { rows, skipped, model: session.target.info.name, counted };
}

/** Every case the sweep format reads back, tokenized by the session, counted under each table. */
async function countedReplays(session: InferenceSession, cases: CorpusCase[]): Promise<CountedReplay[]> {
  const tokenize = (text: string) => session.target.model.tokenize(text, true) as Token[];
  const ready: CountedCase[] = [];
  for (const c of cases) {
    const prompt = NEXT_EDIT_FORMATS.sweep.buildPrompt(nextEditRequestOf(c, 'copy', 'sweep'));
    const output = perfectSweepOutput(c, prompt);
    if (output !== null) ready.push({ prompt: promptTokensOf(session, prompt), expected: tokenize(output), copySource: tokenize(prompt.copySource), copyCursor: copyCursorToken(prompt, tokenize) });
  }
  return countedUnderTables(ready);
}

/** One line per corpus and one for all: medians over the cases. */
export function replaySummary(rows: ReplayCaseRow[]): string[] {
  const groups: [string, ReplayCaseRow[]][] = [['all', rows], ...[...new Set(rows.map((r) => r.corpus))].map((k): [string, ReplayCaseRow[]] => [k, rows.filter((r) => r.corpus === k)])];
  return [
    '| cases | n | window tokens (median) | plain ms (median) | replay ms (median) | speedup (median of per-case) | replay first edit ms (median) | first edit / plain window (median) | tok/eval (median) | copy accepted | bound speedup, issue CPU cost (median) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...groups.map(([name, g]) => {
      const m = (f: (r: ReplayCaseRow) => number) => median(g.map(f));
      const proposed = g.reduce((n, r) => n + r.proposed, 0);
      const withFirst = g.filter((r) => r.replayFirstEditMs !== undefined);
      const firstEdit = withFirst.length
        ? `${fmt(median(withFirst.map((r) => r.replayFirstEditMs!)), 0)} (${withFirst.length}) | ${fmt(median(withFirst.map((r) => r.replayFirstEditMs! / r.plainMs)), 2)}`
        : '- | -';
      const accepted = g.reduce((n, r) => n + r.accepted, 0);
      return `| ${name} | ${g.length} | ${fmt(
        m((r) => r.tokens),
        0,
      )} | ${fmt(
        m((r) => r.plainMs),
        0,
      )} | ${fmt(
        m((r) => r.replayMs),
        0,
      )} | ${fmt(
        m((r) => r.speedup),
        2,
      )}x | ${firstEdit} | ${fmt(
        m((r) => r.tokensPerEvaluation),
        2,
      )} | ${proposed ? `${Math.round((100 * accepted) / proposed)}% of ${proposed}` : '-'} | ${fmt(
        m((r) => r.boundSpeedup),
        2,
      )}x |`;
    }),
  ];
}

/**
 * Our copy proposer against llama-server's ngram types (ported, same batches, same perfect output):
 * speedup over plain and tokens per evaluation of each, and ours over the better of the two per case.
 */
export function replayRivalSummary(rows: ReplayCaseRow[]): string[] {
  const names = [...new Set(rows.flatMap((r) => Object.keys(r.rivals ?? {})))];
  if (!names.length) return [];
  const groups: [string, ReplayCaseRow[]][] = [['all', rows], ...[...new Set(rows.map((r) => r.corpus))].map((k): [string, ReplayCaseRow[]] => [k, rows.filter((r) => r.corpus === k)])];
  const cell = (g: ReplayCaseRow[], speed: (r: ReplayCaseRow) => number, tpe: (r: ReplayCaseRow) => number) => `${fmt(median(g.map(speed)), 2)}x, ${fmt(median(g.map(tpe)), 1)}`;
  return [
    `| cases | n | copy (ours): speedup, tok/eval | ${names.map((n) => `${rivalLabel(n)}: speedup, tok/eval`).join(' | ')} | copy over the better ported (median per case) |`,
    `|---|---|---|${names.map(() => '---|').join('')}---|`,
    ...groups.map(([name, g]) => {
      const rival = (r: ReplayCaseRow, n: string) => r.rivals?.[n];
      const over = g.map((r) => Math.min(...names.filter(isPorted).map((n) => rival(r, n)?.ms ?? Number.POSITIVE_INFINITY)) / r.replayMs);
      return `| ${name} | ${g.length} | ${cell(
        g,
        (r) => r.speedup,
        (r) => r.tokensPerEvaluation,
      )} | ${names
        .map((n) =>
          cell(
            g,
            (r) => rival(r, n)?.speedup ?? Number.NaN,
            (r) => rival(r, n)?.tokensPerEvaluation ?? Number.NaN,
          ),
        )
        .join(' | ')} | ${fmt(median(over), 2)}x |`;
    }),
  ];
}

/** This machine's verify cost V(b)/V(1) as the replay measured it (median ms per size over the cases). */
export function replayVerifyCost(rows: ReplayCaseRow[]): string {
  const bySize = new Map<number, number[]>();
  for (const r of rows) for (const [b, ms] of Object.entries(r.batchMs ?? {})) bySize.set(Number(b), [...(bySize.get(Number(b)) ?? []), ms]);
  const one = bySize.get(1);
  if (!one) return '';
  const v1 = median(one)!;
  const sizes = [...bySize.keys()].filter((b) => [1, 2, 3, 5, 9, 17, 33, 49, 65].includes(b)).sort((a, b) => a - b);
  return `Measured here, one evaluation of b tokens over one of 1 token (median over the cases; b = proposal + 1): ${sizes.map((b) => `V(${b}) ${fmt(median(bySize.get(b)!)! / v1, 2)}`).join(', ')}; V(1) = ${fmt(v1, 0)} ms.`;
}
