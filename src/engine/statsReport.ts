import type { EngineAlternatives, PrefetchTrigger } from './completionEngine';
import { type AlternativesTally, acceptanceRate, tokensPerEvaluation, tokensPerSecond, type StatsCollector, wastedPrefetches } from './statsCollector';
import { type GhostTextTimeline, timelineRows } from './ghostTextTimeline';
import { describeLoadTimings } from './loadTimings';
import { backendExplanation, decodePathExplanation, threadsExplanation } from './statusText';
import type { BackendInfo, DecodeMode, PolicySnapshot, ProposalSource } from '../shared/types';

const pct = (x: number | null) => (x === null ? '-' : `${Math.round(x * 100)}%`);
const num = (x: number | null, digits = 1) => (x === null ? '-' : x.toFixed(digits));
const ms = (x: number | null) => (x === null ? '-' : `${Math.round(x)} ms`);

/** Where the loaded model files come from (src/models/downloadIndex.ts describeProvenance), as Show Stats says it. */
export interface ModelFilesProvenance {
  target: string;
  draft: string | null;
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
  kvSequences?: { sequences: { owner: string | null; tokens: number; bytes: number }[]; evictions: number; saved?: { count: number; bytes: number; restored: number } } | null;
}

/** The KV sequences, one a line: whose prompt each holds, its tokens and their memory. */
export function describeKvSequences(k: NonNullable<WorkerStatus['kvSequences']>): string[] {
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
  return [
    `KV sequences: ${k.sequences.length}, ${k.evictions === 0 ? 'none taken from another prompt yet' : `${k.evictions} taken from the least recently used prompt when all were in use`}`,
    ...k.sequences.map((q, i) => `- sequence ${i}: ${q.owner ?? 'free'}, ${q.tokens} tokens (${mb(q.bytes)})`),
    ...(k.saved && (k.saved.count > 0 || k.saved.restored > 0) ? [`- evicted prompts saved: ${k.saved.count} (${mb(k.saved.bytes)} on disk), loaded back ${k.saved.restored} times`] : []),
  ];
}

export function describeWorker(w: WorkerStatus): string {
  if (!w.shared) return `Inference worker: this window's own (pid ${w.pid})`;
  const after = w.idleMinutes === 0 ? 'exits with the last window' : `stays up ${w.idleMinutes} min after the last window closes`;
  return `Inference worker: shared, running for ${w.windows} window${w.windows === 1 ? '' : 's'} with these models (pid ${w.pid}; ${after})`;
}

/**
 * Show Stats as Markdown: the mode, the models (and whether their files were verified), the worker
 * that runs them, the last completion and the session totals.
 */
export function statsReport(stats: StatsCollector, mode: DecodeMode, backend: BackendInfo | null, provenance?: ModelFilesProvenance, worker?: WorkerStatus, timeline?: GhostTextTimeline): string {
  const lines: string[] = ['# Draftline stats', '', `Mode: ${backend?.remote ? `${backend.kind} server (its own decoding)` : mode}`, ''];
  const models = backend?.local;
  if (backend?.remote) lines.push(...remoteReport(backend, backend.remote), '');
  else if (models) {
    lines.push(
      `Target: ${models.target.name} (${(models.target.sizeBytes / 1e6).toFixed(1)} MB, ${models.promptTemplate ?? models.promptFormat})`,
      `Draft: ${models.draft ? `${models.draft.name} (${(models.draft.sizeBytes / 1e6).toFixed(1)} MB)` : `none${models.draftProblem ? ` — ${models.draftProblem}` : ''}`}`,
      ...(provenance ? [`Target file: ${provenance.target}`, ...(models.draft && provenance.draft ? [`Draft file: ${provenance.draft}`] : [])] : []),
      `Backend: ${backendExplanation(models)}; context ${models.contextSize}`,
      `Threads: ${threadsExplanation(models.threads, models.runtime)}`,
      ...(models.nativeAddon ? [`Decoding: ${decodePathExplanation(models)}`] : []),
      ...(models.loadTimings ? [`Model load: ${Math.round(models.loadTimings.totalMs)} ms (${describeLoadTimings(models.loadTimings)})`] : []),
      ...(models.kvSequences ? [`KV sequences: ${models.kvSequences.reason}`] : []),
      ...(worker ? [describeWorker(worker)] : []),
      ...(worker?.kvSequences ? describeKvSequences(worker.kvSequences) : []),
      '',
    );
  } else {
    lines.push('Models: not loaded', '');
  }
  const last = stats.last;
  lines.push('## Last completion', '');
  if (!last) lines.push('none yet');
  else if (last.fromCache) lines.push(`served from ${last.prefetchedBy ? `the prefetch (${prefetchOrigin(last.prefetchedBy)})` : 'cache'} in ${ms(last.latencyMs)}`);
  else if (last.stats) {
    const s = last.stats;
    const spec = s.speculation;
    lines.push(
      '| figure | value |',
      '|---|---|',
      ...(spec ? [`| mode | ${spec.mode} |`] : []),
      ...(last.waitMs !== undefined ? [`| wait before the model request (debounce) | ${ms(last.waitMs)} |`] : []),
      `| latency (end to end) | ${ms(last.latencyMs)} |`,
      `| time to first token | ${ms(s.timeToFirstTokenMs)} |`,
      `| prompt tokens (reused from cache) | ${s.promptTokens} (${s.reusedPromptTokens}) |`,
      `| generated tokens | ${s.generatedTokens} |`,
      `| tokens/s (decoding) | ${num(tokensPerSecond(s))} |`,
      ...(spec
        ? [
            `| target evaluations | ${spec.targetEvaluations} |`,
            `| tokens per target evaluation | ${num(tokensPerEvaluation(s), 2)} |`,
            `| acceptance n-gram | ${pct(acceptanceRate(s, 'ngram'))} (${spec.bySource.ngram.acceptedTokens}/${spec.bySource.ngram.proposedTokens} in ${spec.bySource.ngram.steps} proposals) |`,
            `| acceptance draft | ${pct(acceptanceRate(s, 'draft'))} (${spec.bySource.draft.acceptedTokens}/${spec.bySource.draft.proposedTokens} in ${spec.bySource.draft.steps} proposals) |`,
            ...(spec.bySource.lookahead.steps > 0
              ? [
                  `| acceptance lookahead | ${pct(acceptanceRate(s, 'lookahead'))} (${spec.bySource.lookahead.acceptedTokens}/${spec.bySource.lookahead.proposedTokens} in ${spec.bySource.lookahead.steps} proposals) |`,
                ]
              : []),
            `| time in target / draft | ${ms(spec.targetMs)} / ${ms(spec.draftMs)} |`,
          ]
        : []),
      ...(s.serverDraft ? [`| server's draft model: accepted | ${pct(acceptanceRate(s))} (${s.serverDraft.acceptedTokens}/${s.serverDraft.proposedTokens} tokens) |`] : []),
      `| stop reason | ${s.stopReason} |`,
      `| extra context | ${s.extraContext ? `${s.extraContext.files} file${s.extraContext.files === 1 ? '' : 's'}, ${s.extraContext.tokens} tokens${s.extraContext.repoLevel ? ', as repo-level file sections' : ', as comments'}` : 'none'} |`,
    );
  }
  const a = stats.aggregate();
  const p = stats.prefetch;
  const accepted = (x: { proposedTokens: number; acceptedTokens: number }) => (x.proposedTokens ? x.acceptedTokens / x.proposedTokens : null);
  lines.push(
    '',
    '## Session',
    '',
    '| figure | value |',
    '|---|---|',
    `| completions (from cache) | ${a.completions} (${a.cacheHits}) |`,
    `| prefetches: started / served (with ghost text) / never shown / cancelled | ${p.started} / ${p.served} (${p.shown}) / ${wastedPrefetches(p)} / ${p.cancelled} |`,
    `| prefetches not started: a completion ran / off or on battery | ${p.busy} / ${p.blocked} |`,
    `| latency median / p90 | ${ms(a.latencyMedianMs)} / ${ms(a.latencyP90Ms)} |`,
    `| generated tokens | ${a.generatedTokens} |`,
    // In-process speculation figures, once any completion of the session came from the local worker.
    ...(a.targetEvaluations > 0
      ? [
          `| target evaluations | ${a.targetEvaluations} |`,
          `| tokens per target evaluation | ${num(a.tokensPerEvaluation, 2)} |`,
          `| acceptance n-gram | ${pct(accepted(a.bySource.ngram))} (${a.bySource.ngram.acceptedTokens}/${a.bySource.ngram.proposedTokens} in ${a.bySource.ngram.steps} proposals) |`,
          `| acceptance draft | ${pct(accepted(a.bySource.draft))} (${a.bySource.draft.acceptedTokens}/${a.bySource.draft.proposedTokens} in ${a.bySource.draft.steps} proposals) |`,
          ...(a.bySource.lookahead.steps > 0
            ? [
                `| acceptance lookahead | ${pct(accepted(a.bySource.lookahead))} (${a.bySource.lookahead.acceptedTokens}/${a.bySource.lookahead.proposedTokens} in ${a.bySource.lookahead.steps} proposals) |`,
              ]
            : []),
          `| draft evaluations | ${a.draftEvaluations} |`,
          `| time in prompt / target decode / draft | ${ms(a.promptMs)} / ${ms(a.targetMs)} / ${ms(a.draftMs)} |`,
        ]
      : [`| time to first token / decoding | ${ms(a.promptMs)} / ${ms(a.decodeMs)} |`]),
    ...(a.serverDraft.proposedTokens > 0 ? [`| server's draft model: accepted | ${pct(accepted(a.serverDraft))} (${a.serverDraft.acceptedTokens}/${a.serverDraft.proposedTokens} tokens) |`] : []),
  );
  if (stats.alternatives.asked > 0) lines.push('', ...alternativesReport(stats.alternatives));
  const policy = last?.stats?.speculation?.policy;
  if (policy) lines.push('', ...policyReport(policy));
  // Last: a diagnostic, after the figures the report is read for.
  if (timeline) lines.push('', '## The last ghost text, in the editor', '', '| step | time |', '|---|---|', ...timelineRows(timeline));
  return `${lines.join('\n')}\n`;
}

/** The suggestions the user cycled through (Alt+] / Alt+[), and why fewer than three when there were. */
export function alternativesReport(t: AlternativesTally): string[] {
  return [
    '## Alternatives (Alt+] / Alt+[)',
    '',
    '| figure | value |',
    '|---|---|',
    `| asked (computed; the rest served again) | ${t.asked} (${t.computed}) |`,
    `| suggestions offered, mean (the greedy one included) | ${num(t.asked ? t.items / t.asked : null)} |`,
    `| time to the alternatives, mean | ${ms(t.computed ? t.totalMs / t.computed : null)} |`,
    ...(t.lastLimitedBy ? [`| fewer than asked, last time, because | ${t.lastLimitedBy} |`] : []),
  ];
}

/** Where a prefetched ghost text came from, as the log and Show Stats say it. */
export function prefetchOrigin(by: PrefetchTrigger): string {
  return by === 'shown' ? 'made while the ghost text before it was shown' : 'made at the accept';
}

/** One log line per alternatives answer: how many, how fast, where they branch, and why fewer when so. */
export function describeAlternatives(a: Pick<EngineAlternatives, 'items' | 'branch' | 'limitedBy' | 'fromCache' | 'latencyMs'>): string {
  const how = a.fromCache ? 'served again (computed earlier at this cursor)' : `in ${Math.round(a.latencyMs)} ms`;
  const branch = a.branch ? `, branching at token ${a.branch.tokenIndex} (top-2 margin ${a.branch.margin.toFixed(2)})` : '';
  return `alternatives: ${a.items.length} suggestion${a.items.length === 1 ? '' : 's'} ${how}${branch}${a.limitedBy ? `; fewer than asked: ${a.limitedBy}` : ''}`;
}

/** A server backend: where, which model, and what the server does itself. */
function remoteReport(backend: BackendInfo, remote: NonNullable<BackendInfo['remote']>): string[] {
  return [
    `Backend: ${backend.kind} at ${remote.endpoint} (${remote.server})`,
    `Model: ${backend.model}${remote.contextSize ? `; context ${remote.contextSize}` : ''}`,
    `Prompt: ${remote.promptFormat}`,
    `Server-side speculation: ${remote.speculation ?? 'none reported'}`,
  ];
}

/** What the speculation policy learned on this machine, in words a user can act on. */
export function policyReport(p: PolicySnapshot): string[] {
  const one = p.verifyMs[1];
  const sizes = Object.keys(p.verifyMs)
    .map(Number)
    .filter((b) => b > 1)
    .sort((a, b) => a - b);
  const verdict = (source: ProposalSource) =>
    p.bestLength[source] > 0 ? `proposals of up to ${p.bestLength[source]} tokens pay` : `off: plain decoding is faster (retried every ${p.retryInterval[source]} steps)`;
  return [
    '## Speculation policy (learned on this machine)',
    '',
    '| figure | value |',
    '|---|---|',
    `| verifying b tokens in one target evaluation, vs 1 | ${one && sizes.length ? sizes.map((b) => `${b}: ${(p.verifyMs[b] / one).toFixed(2)}x`).join(', ') : 'not measured yet'} |`,
    `| draft model | ${p.draftMsPerToken === null ? 'not measured yet' : `${p.draftMsPerToken.toFixed(1)} ms per token`} |`,
    `| n-gram: acceptance estimate, verdict | ${pct(p.acceptance.ngram)}, ${verdict('ngram')} |`,
    `| draft: acceptance estimate, verdict | ${pct(p.acceptance.draft)}, ${verdict('draft')} |`,
    `| lookahead: acceptance estimate, verdict | ${pct(p.acceptance.lookahead)}, ${verdict('lookahead')} |`,
  ];
}
