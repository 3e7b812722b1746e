import type { ShownCompletion } from '../postprocess';
import { type AlternativesTally, type PrefetchTrigger, acceptanceRate, speedupOverPlain, tokensPerEvaluation, tokensPerSecond, type StatsCollector, wastedPrefetches } from './statsCollector';
import { type GhostTextTimeline, timelineFigures } from './ghostTextTimeline';
import { describeLoadTimings } from './loadTimings';
import { SERVED_KINDS, SERVED_NAMES } from './servedKind';
import { stopReasonText } from './stopReasons';
import { backendExplanation, decodePathExplanation, threadsExplanation, treeVerificationExplanation } from './statusText';
import type { AlternativesResult } from '../shared/completion';
import type { BackendInfo, KvSequencesReport, NextEditModelReport } from '../shared/backendInfo';
import { type DecodeMode, type SourceId, sourceName, sourceOrder } from '../shared/decoding';
import type { PolicySnapshot } from '../shared/generationStats';

const pct = (x: number | null) => (x === null ? '-' : `${Math.round(x * 100)}%`);
const num = (x: number | null, digits = 1) => (x === null ? '-' : x.toFixed(digits));
const ms = (x: number | null) => (x === null ? '-' : `${Math.round(x)} ms`);
const times = (x: number | null) => (x === null ? '-' : `${x.toFixed(2)}x`);

/** Where the loaded model files come from (src/models/downloadIndex.ts describeProvenance), as Show Stats says it. */
export interface ModelFilesProvenance {
  target: string;
  draft: string | null;
  /** The next-edit model's file, once next edits resolved it. */
  nextEdit?: string | null;
}

/** The local inference worker as Show Stats describes it. */
export interface WorkerStatus {
  /** The worker the windows with these models share, or this window's own. */
  shared: boolean;
  pid: number;
  /** Windows connected to it now (this one included). */
  windows: number;
  /** How long a shared worker outlives its last window (this window's setting). */
  idleMinutes: number;
  /** The target's KV sequences as this window sees them (WorkerDiagnostics.kvSequences). */
  kvSequences?: KvSequencesReport | null;
  /** The next-edit model (WorkerDiagnostics.nextEditModel): null before next edits were asked for. */
  nextEditModel?: NextEditModelReport | null;
}

/**
 * The next-edit model's line: its weights and KV sequences as the target's are shown (none more in
 * memory when it is the target's file), where it runs, what 'hybrid' drafts with; or why it failed.
 */
export function describeNextEditModel(m: NextEditModelReport): FigureRow {
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
  if (m.state === 'failed') return ['Next-edit model', `${m.name} not loaded — ${m.problem ?? 'unknown problem'} (completions are unaffected)`];
  if (m.state === 'loading') return ['Next-edit model', `${m.name} loading…`];
  const kv = `${m.kvSequences.count} KV sequence${m.kvSequences.count === 1 ? '' : 's'} of ${mb(m.kvSequences.bytesPerSequence)}`;
  const memory = m.sharesTarget
    ? `the target's file, loaded once: no more weights, next edits on sequences of their own`
    : `${mb(m.sizeBytes)} weights + ${kv}, ${m.gpuLayers > 0 ? `${m.gpuLayers} layers on the GPU` : 'on the CPU'}${m.gpuFallback ? ` (${m.gpuFallback})` : ''}, context ${m.contextSize}`;
  return ['Next-edit model', `${m.name} (${memory}; hybrid drafts with ${m.draft})`];
}

/** The KV sequences, a row each: whose prompt each holds, its tokens and their memory. */
export function describeKvSequences(k: KvSequencesReport): FigureRow[] {
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
  return [
    ['KV sequences taken', k.evictions === 0 ? 'none taken from another prompt yet' : `${k.evictions} taken from the least recently used prompt when all were in use`],
    ...k.sequences.map((q, i): FigureRow => [`KV sequence ${i}`, `${q.owner ?? 'free'}, ${q.tokens} tokens (${mb(q.bytes)})`]),
    ...(k.saved && (k.saved.count > 0 || k.saved.restored > 0) ? [['Evicted prompts saved', `${k.saved.count} (${mb(k.saved.bytes)} on disk), loaded back ${k.saved.restored} times`] as const] : []),
  ];
}

/** A figure of Show Stats and its value: a table row, or a `label: value` line above the tables. */
export type FigureRow = readonly [figure: string, value: string];

export function describeWorker(w: WorkerStatus): FigureRow {
  if (!w.shared) return ['Inference worker', `this window's own (pid ${w.pid})`];
  const after = w.idleMinutes === 0 ? 'exits with the last window' : `stays up ${w.idleMinutes} min after the last window closes`;
  return ['Inference worker', `shared, running for ${w.windows} window${w.windows === 1 ? '' : 's'} with these models (pid ${w.pid}; ${after})`];
}

/** A section of Show Stats: a table, or one sentence where there is no table (e.g. "none yet"). */
export interface StatsSection {
  /** Stable: the rendered view replaces a section by it when its figures change. */
  id: 'last' | 'session' | 'alternatives' | 'policy' | 'timeline' | 'nextEdits';
  heading: string;
  /** The table's two column headings. */
  columns: readonly [string, string];
  rows: FigureRow[];
  /** Said instead of the table. */
  sentence?: string;
}

/** Show Stats' content, for its Markdown text and its rendered view alike. */
export interface StatsReportModel {
  /** The lines above the sections: the mode, the models (or the server) and the worker. */
  overview: FigureRow[];
  sections: StatsSection[];
}

const table = (id: StatsSection['id'], heading: string, rows: FigureRow[]): StatsSection => ({ id, heading, columns: ['figure', 'value'], rows });

/**
 * Show Stats' content: the mode, the models (and whether their files were verified), the worker that
 * runs them, the last completion and the session totals.
 */
export function statsReportModel(
  stats: StatsCollector,
  mode: DecodeMode,
  backend: BackendInfo | null,
  provenance?: ModelFilesProvenance,
  worker?: WorkerStatus,
  timeline?: GhostTextTimeline,
): StatsReportModel {
  const overview: FigureRow[] = [['Mode', backend?.remote ? `${backend.kind} server (its own decoding)` : mode]];
  const models = backend?.local;
  if (backend?.remote) overview.push(...remoteReport(backend, backend.remote));
  else if (models) {
    overview.push(
      ['Target', `${models.target.name} (${(models.target.sizeBytes / 1e6).toFixed(1)} MB, ${models.promptTemplate ?? models.promptFormat})`],
      ['Draft', models.draft ? `${models.draft.name} (${(models.draft.sizeBytes / 1e6).toFixed(1)} MB)` : `none${models.draftProblem ? ` — ${models.draftProblem}` : ''}`],
      ...(provenance ? [['Target file', provenance.target] as const, ...(models.draft && provenance.draft ? [['Draft file', provenance.draft] as const] : [])] : []),
      ['Backend', `${backendExplanation(models)}; context ${models.contextSize}`],
      ['Threads', threadsExplanation(models.threads, models.runtime)],
      ...(models.nativeAddon ? [['Decoding', decodePathExplanation(models)] as const] : []),
      ...(models.treeVerification ? [['Token trees', treeVerificationExplanation(models.treeVerification)] as const] : []),
      ...(models.loadTimings ? [['Model load', `${Math.round(models.loadTimings.totalMs)} ms (${describeLoadTimings(models.loadTimings)})`] as const] : []),
      ...(models.kvSequences ? [['KV sequences', models.kvSequences.reason] as const] : []),
      ...(worker ? [describeWorker(worker)] : []),
      ...(worker?.kvSequences ? describeKvSequences(worker.kvSequences) : []),
      ...(worker?.nextEditModel ? [describeNextEditModel(worker.nextEditModel)] : []),
      ...(provenance?.nextEdit ? [['Next-edit file', provenance.nextEdit] as const] : []),
    );
  } else {
    overview.push(['Models', 'not loaded']);
  }
  const sections = [lastCompletionSection(stats), sessionSection(stats)];
  if (stats.alternatives.asked > 0) sections.push(alternativesSection(stats.alternatives));
  const policy = stats.last?.stats?.speculation?.policy;
  if (policy) sections.push(policySection(policy));
  // Last: a diagnostic, after the figures the report is read for.
  if (timeline) sections.push({ id: 'timeline', heading: 'The last ghost text, in the editor', columns: ['step', 'time'], rows: timelineFigures(timeline) });
  return { overview, sections };
}

/** Show Stats as Markdown (Copy as Markdown, and the tests' reading of it). */
export function statsReport(stats: StatsCollector, mode: DecodeMode, backend: BackendInfo | null, provenance?: ModelFilesProvenance, worker?: WorkerStatus, timeline?: GhostTextTimeline): string {
  return reportMarkdown(statsReportModel(stats, mode, backend, provenance, worker, timeline));
}

export function reportMarkdown(report: StatsReportModel): string {
  const line = ([label, value]: FigureRow) => `${label}: ${value}`;
  const [mode, ...rest] = report.overview;
  const lines = ['# Draftline stats', '', ...(mode ? [line(mode), ''] : []), ...rest.map(line), ''];
  for (const [i, section] of report.sections.entries()) lines.push(...(i > 0 ? [''] : []), ...sectionMarkdown(section));
  return `${lines.join('\n')}\n`;
}

/** A section as Markdown lines: its heading, then its sentence or its table. */
export function sectionMarkdown(section: StatsSection): string[] {
  const [left, right] = section.columns;
  const body = section.sentence !== undefined ? [section.sentence] : section.rows.length ? [`| ${left} | ${right} |`, '|---|---|', ...section.rows.map(([f, v]) => `| ${f} | ${v} |`)] : [];
  return [`## ${section.heading}`, '', ...body];
}

function lastCompletionSection(stats: StatsCollector): StatsSection {
  const section = table('last', 'Last completion', []);
  const last = stats.last;
  if (!last) return { ...section, sentence: 'none yet' };
  if (last.fromCache)
    return { ...section, sentence: `served ${SERVED_NAMES[last.prefetchedBy ? 'prefetch' : 'cache']}${last.prefetchedBy ? ` (${prefetchOrigin(last.prefetchedBy)})` : ''} in ${ms(last.latencyMs)}` };
  const s = last.stats;
  if (!s) return section;
  const spec = s.speculation;
  const acceptance = (source: SourceId): FigureRow => {
    const by = spec!.bySource[source];
    const trees = by.treeSteps ? `; ${by.treeSteps} of them token trees, ${by.treeAccepted}/${by.treeNodes} nodes kept` : '';
    return [`acceptance ${sourceName(source)}`, `${pct(acceptanceRate(s, source))} (${by.acceptedTokens}/${by.proposedTokens} in ${by.steps} proposals${trees})`];
  };
  const speedup = speedupOverPlain(s);
  section.rows.push(
    ...(spec ? [['mode', spec.mode] as const] : []),
    ...(last.waitMs !== undefined ? [['wait before the model request (debounce)', ms(last.waitMs)] as const] : []),
    ['latency (end to end)', ms(last.latencyMs)],
    ['time to first token', ms(s.timeToFirstTokenMs)],
    ['prompt tokens (reused from cache)', `${s.promptTokens} (${s.reusedPromptTokens}${s.shiftedPromptTokens ? `, ${s.shiftedPromptTokens} of them shifted into place` : ''})`],
    ['generated tokens', `${s.generatedTokens}`],
    ['tokens/s (decoding)', num(tokensPerSecond(s))],
    ...(spec
      ? [
          ['target evaluations', `${spec.targetEvaluations}`] as const,
          ['tokens per target evaluation', num(tokensPerEvaluation(s), 2)] as const,
          // The completion's own sources.
          ...sourceOrder(Object.keys(spec.bySource)).map(acceptance),
          ['time in target / draft', `${ms(spec.targetMs)} / ${ms(spec.draftMs)}`] as const,
        ]
      : []),
    ...(speedup ? [[SPEEDUP_FIGURE, `${times(speedup.speedup)} (${ms(speedup.plainMs)} estimated, ${ms(speedup.decodeMs)} taken)`] as const] : []),
    ...(s.serverDraft ? [["server's draft model: accepted", `${pct(acceptanceRate(s))} (${s.serverDraft.acceptedTokens}/${s.serverDraft.proposedTokens} tokens)`] as const] : []),
    ['stop reason', stopReasonText(s.stopReason)],
    [
      'extra context',
      s.extraContext
        ? `${s.extraContext.files} file${s.extraContext.files === 1 ? '' : 's'}, ${s.extraContext.tokens} tokens${s.extraContext.repoLevel ? ', as repo-level file sections' : ', as comments'}`
        : 'none',
    ],
  );
  return section;
}

/** How the speedup row is named, in the last completion's table and the session's. */
const SPEEDUP_FIGURE = 'speedup vs plain decoding (estimated)';

function sessionSection(stats: StatsCollector): StatsSection {
  const a = stats.aggregate();
  const p = stats.prefetch;
  const accepted = (x: { proposedTokens: number; acceptedTokens: number }) => (x.proposedTokens ? x.acceptedTokens / x.proposedTokens : null);
  const acceptance = (source: SourceId): FigureRow => {
    const by = a.bySource[source];
    return [`acceptance ${sourceName(source)}`, `${pct(accepted(by))} (${by.acceptedTokens}/${by.proposedTokens} in ${by.steps} proposals)`];
  };
  const speedup = a.speedup;
  return table('session', 'Session', [
    [`completions (${SERVED_NAMES.cache} / ${SERVED_NAMES.prefetch})`, `${a.completions} (${a.latency.cache.count} / ${a.latency.prefetch.count})`],
    ['prefetches: started / served (with ghost text) / never shown / cancelled', `${p.started} / ${p.served} (${p.shown}) / ${wastedPrefetches(p)} / ${p.cancelled}`],
    ['prefetches not started: a completion ran / off or on battery', `${p.busy} / ${p.blocked}`],
    // Each way of serving apart (the latency chart's series): a cache hit's few ms would hide the model's time.
    ...SERVED_KINDS.map((kind): FigureRow => {
      const l = a.latency[kind];
      return [`latency median / p90, ${SERVED_NAMES[kind]}`, `${ms(l.medianMs)} / ${ms(l.p90Ms)} (${l.count})`];
    }),
    ['generated tokens', `${a.generatedTokens}`],
    ...(a.endedByTimeBudget > 0 ? [['ended by the time budget (draftline.timeBudgetMs)', `${a.endedByTimeBudget} of ${a.latency.computed.count} computed`] as const] : []),
    // In-process speculation figures, once any completion of the session came from the local worker.
    ...(a.targetEvaluations > 0
      ? [
          ['target evaluations', `${a.targetEvaluations}`] as const,
          ['tokens per target evaluation', num(a.tokensPerEvaluation, 2)] as const,
          ...Object.keys(a.bySource).map(acceptance),
          ['draft evaluations', `${a.draftEvaluations}`] as const,
          ['time in prompt / target decode / draft', `${ms(a.promptMs)} / ${ms(a.targetMs)} / ${ms(a.draftMs)}`] as const,
        ]
      : [['time to first token / decoding', `${ms(a.promptMs)} / ${ms(a.decodeMs)}`] as const]),
    ...(speedup
      ? [
          [
            SPEEDUP_FIGURE,
            `${times(speedup.speedup)} over ${speedup.completions} completion${speedup.completions === 1 ? '' : 's'} (${ms(speedup.plainMs)} estimated, ${ms(speedup.decodeMs)} taken)`,
          ] as const,
        ]
      : []),
    ...(a.serverDraft.proposedTokens > 0
      ? [["server's draft model: accepted", `${pct(accepted(a.serverDraft))} (${a.serverDraft.acceptedTokens}/${a.serverDraft.proposedTokens} tokens)`] as const]
      : []),
  ]);
}

/** The suggestions the user cycled through (Alt+] / Alt+[), and why fewer than three when there were. */
export function alternativesSection(t: AlternativesTally): StatsSection {
  return table('alternatives', 'Alternatives (Alt+] / Alt+[)', [
    ['asked (computed; the rest served again)', `${t.asked} (${t.computed})`],
    ['suggestions offered, mean (the greedy one included)', num(t.asked ? t.items / t.asked : null)],
    ['time to the alternatives, mean', ms(t.computed ? t.totalMs / t.computed : null)],
    ...(t.lastLimitedBy ? [['fewer than asked, last time, because', t.lastLimitedBy] as const] : []),
  ]);
}

/** The alternatives section as Markdown lines. */
export function alternativesReport(t: AlternativesTally): string[] {
  return sectionMarkdown(alternativesSection(t));
}

/** Where a prefetched ghost text came from, as the log and Show Stats say it. */
export function prefetchOrigin(by: PrefetchTrigger): string {
  return by === 'shown' ? 'made while the ghost text before it was shown' : 'made at the accept';
}

/** What the alternatives line reads of an answer (the engine's EngineAlternatives, engine/completionEngine.ts). */
export interface AlternativesAnswer {
  items: readonly ShownCompletion[];
  branch?: AlternativesResult['branch'];
  limitedBy?: string;
  fromCache: boolean;
  latencyMs: number;
}

/** One log line per alternatives answer: how many, how fast, where they branch, and why fewer when so. */
export function describeAlternatives(a: AlternativesAnswer): string {
  const how = a.fromCache ? 'served again (computed earlier at this cursor)' : `in ${Math.round(a.latencyMs)} ms`;
  const branch = a.branch ? `, branching at token ${a.branch.tokenIndex} (top-2 margin ${a.branch.margin.toFixed(2)})` : '';
  return `alternatives: ${a.items.length} suggestion${a.items.length === 1 ? '' : 's'} ${how}${branch}${a.limitedBy ? `; fewer than asked: ${a.limitedBy}` : ''}`;
}

/** A server backend: where, which model, and what the server does itself. */
function remoteReport(backend: BackendInfo, remote: NonNullable<BackendInfo['remote']>): FigureRow[] {
  return [
    ['Backend', `${backend.kind} at ${remote.endpoint} (${remote.server})`],
    ['Model', `${backend.model}${remote.contextSize ? `; context ${remote.contextSize}` : ''}`],
    ['Prompt', remote.promptFormat],
    ['Server-side speculation', remote.speculation ?? 'none reported'],
  ];
}

/** What the speculation policy learned on this machine, in words a user can act on. */
export function policySection(p: PolicySnapshot): StatsSection {
  const one = p.verifyMs[1];
  const sizes = Object.keys(p.verifyMs)
    .map(Number)
    .filter((b) => b > 1)
    .sort((a, b) => a - b);
  const verdict = (source: SourceId) =>
    p.bestLength[source] > 0 ? `proposals of up to ${p.bestLength[source]} tokens pay` : `off: plain decoding is faster (retried every ${p.retryInterval[source]} steps)`;
  return table('policy', 'Speculation policy (learned on this machine)', [
    ['verifying b tokens in one target evaluation, vs 1', one && sizes.length ? sizes.map((b) => `${b}: ${(p.verifyMs[b] / one).toFixed(2)}x`).join(', ') : 'not measured yet'],
    ['verify batches', verifyShapeText(p.verifyShape)],
    // The sources that run a model, once their time per token was measured.
    ...sourceOrder(Object.keys(p.proposeMsPerToken ?? {})).map((source): FigureRow => [sourceName(source), `${p.proposeMsPerToken[source]!.toFixed(1)} ms per token`]),
    ...sourceOrder(Object.keys(p.acceptance)).map((source): FigureRow => [`${sourceName(source)}: acceptance estimate, verdict`, `${pct(p.acceptance[source]!)}, ${verdict(source)}`]),
    ...sourceOrder(Object.keys(p.trees ?? {})).map((source): FigureRow => {
      const t = p.trees![source]!;
      return [`${sourceName(source)}: tree vs chain`, `${t.tree.toFixed(2)} vs ${t.chain.toFixed(2)} tokens a step: its ${t.verifies} is verified`];
    }),
  ]);
}

/** How verify batches are shaped (speculation/verifyShape.ts), in words. */
export function verifyShapeText(shape: PolicySnapshot['verifyShape']): string {
  if (!shape || shape.mode === 'variable') return 'variable length (each step its own proposal length)';
  if (shape.size > 1) return `fixed shape ${shape.size}, graph reuse on (every step of a generation ${shape.size} tokens)`;
  if (shape.size === 1) return 'fixed shape: plain steps (no batch size beat a plain step lately)';
  return 'fixed shape: not chosen yet';
}

/** The policy section as Markdown lines. */
export function policyReport(p: PolicySnapshot): string[] {
  return sectionMarkdown(policySection(p));
}
