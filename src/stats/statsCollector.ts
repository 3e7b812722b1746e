import { type DecodeMode, type SourceId, sourceOrder } from '../shared/decoding';
import type { GenerationStats, SpeculationStats } from '../shared/generationStats';
import { median, percentile } from './medians';
import { type ServedKind, servedKind } from './servedKind';

/** Why a prefetch was asked for: the user accepted a completion, or one is shown (the one after it, while the user reads it). */
export type PrefetchTrigger = 'accepted' | 'shown';

export interface CompletionRecord {
  at: number;
  /** End to end, as the editor waited for it (IPC, prompt, decoding, post-processing). */
  latencyMs: number;
  /**
   * Before the model request: the debounce as it really ran (the editor's event loop stretches it when
   * busy: an extension host held by another extension shows here, not in latencyMs). Absent on a cache hit.
   */
  waitMs?: number;
  fromCache: boolean;
  /** Served from what a prefetch computed: why that prefetch was made (at an accept, or while a ghost text was shown). */
  prefetchedBy?: PrefetchTrigger;
  chars: number;
  stats: GenerationStats | null;
}

export interface StatusSummary {
  tokensPerSecond: number | null;
  /** Accepted / proposed of the last generated completion; null when nothing was proposed. */
  acceptance: number | null;
  latencyMs: number | null;
  tokensPerEvaluation: number | null;
  fromCache: boolean;
  /** Computed, from the cache or from a prefetch (stats/servedKind.ts). */
  served: ServedKind;
  mode: DecodeMode | null;
}

/** How a recorded completion was served. */
export const servedKindOf = (r: CompletionRecord): ServedKind => servedKind(r.fromCache, r.prefetchedBy !== undefined);

function sum(records: CompletionRecord[], pick: (s: GenerationStats) => number): number {
  return records.reduce((total, r) => total + (r.stats ? pick(r.stats) : 0), 0);
}

/** A speculation figure of a completion, 0 when the backend kept no such record (a server). */
function sumSpeculation(records: CompletionRecord[], pick: (s: SpeculationStats) => number): number {
  return sum(records, (s) => (s.speculation ? pick(s.speculation) : 0));
}

export function tokensPerSecond(s: GenerationStats): number | null {
  if (s.serverTokensPerSecond !== undefined) return s.serverTokensPerSecond;
  const decodeMs = s.totalMs - s.promptMs;
  return s.generatedTokens > 0 && decodeMs > 0 ? (s.generatedTokens * 1000) / decodeMs : null;
}

export function tokensPerEvaluation(s: GenerationStats): number | null {
  const evaluations = s.speculation?.targetEvaluations ?? 0;
  return evaluations > 0 ? s.generatedTokens / evaluations : null;
}

/** A completion's decoding time against plain decoding's, estimated. */
export interface SpeedupEstimate {
  /** Plain decoding's time: one one-token target step per token after the first, as measured on this machine. */
  plainMs: number;
  /** Decoding's time as it ran (after the prompt). */
  decodeMs: number;
  speedup: number;
}

/**
 * What speculation saved on a completion: plain decoding would have taken a one-token step for each
 * token after the first (the prompt's evaluation yields the first either way), at the cost of a
 * one-token step the policy measured on this machine. Null where that cost is unknown (plain mode
 * keeps no policy; a server keeps no record) or there was nothing to decode.
 */
export function speedupOverPlain(s: GenerationStats): SpeedupEstimate | null {
  const step = s.speculation?.policy?.verifyMs[1];
  const decodeMs = s.totalMs - s.promptMs;
  const steps = s.generatedTokens - 1;
  if (step === undefined || !(step > 0) || steps < 1 || !(decodeMs > 0)) return null;
  const plainMs = steps * step;
  return { plainMs, decodeMs, speedup: plainMs / decodeMs };
}

/** Accepted / proposed tokens: Draftline's own speculation by source, or a server's draft model. */
export function acceptanceRate(s: GenerationStats, source?: SourceId): number | null {
  if (!s.speculation) {
    const server = s.serverDraft;
    return server && server.proposedTokens > 0 && source !== 'ngram' ? server.acceptedTokens / server.proposedTokens : null;
  }
  const bySource = s.speculation.bySource;
  const sources = (source ? [bySource[source]] : Object.values(bySource)).filter((x) => x !== undefined);
  const proposed = sources.reduce((t, x) => t + x.proposedTokens, 0);
  const accepted = sources.reduce((t, x) => t + x.acceptedTokens, 0);
  return proposed > 0 ? accepted / proposed : null;
}

/** Served, wasted and skipped prefetches, for Show Stats and the bench. */
export interface PrefetchTally {
  /** Prefetches sent to the backend. */
  started: number;
  /** Of those, computed to the end (in the cache). */
  ready: number;
  /** Prefetches a real request was answered from (the prefetch joined or its cache entry). */
  served: number;
  /** ...of which with ghost text (the rest: the model had nothing to add, and no model call said so again). */
  shown: number;
  cancelled: number;
  /** Not started: a real request ran. */
  busy: number;
  /** Not started: prefetch turned off, or on battery. */
  blocked: number;
  failed: number;
}

export const emptyPrefetchTally = (): PrefetchTally => ({ started: 0, ready: 0, served: 0, shown: 0, cancelled: 0, busy: 0, blocked: 0, failed: 0 });

/** Started prefetches no real request was answered from (cancelled ones included): work never shown. */
export const wastedPrefetches = (t: PrefetchTally): number => t.started - t.served;

/** Alternatives asked for (the user cycling suggestions), for Show Stats and the bench. */
export interface AlternativesTally {
  /** Times the user asked (cycling included). */
  asked: number;
  /** Of those, computed by the backend (the rest: served again from the engine's memory). */
  computed: number;
  /** Suggestions offered in all (the greedy one included). */
  items: number;
  /** Time of the computed ones, summed. */
  totalMs: number;
  /** Why the last answer had fewer than asked (null: it had all, or none was asked). */
  lastLimitedBy: string | null;
}

export const emptyAlternativesTally = (): AlternativesTally => ({ asked: 0, computed: 0, items: 0, totalMs: 0, lastLimitedBy: null });

/** Completion statistics for the status bar and Show Stats: the last completion and the session. */
export class StatsCollector {
  private records: CompletionRecord[] = [];
  /** Completions recorded this session, the ones no longer kept included. */
  private recorded = 0;
  /** The session's prefetches (CompletionEngine.prefetch). */
  prefetch: PrefetchTally = emptyPrefetchTally();
  /** The session's alternatives (CompletionEngine.alternatives). */
  alternatives: AlternativesTally = emptyAlternativesTally();

  constructor(private readonly keep = 500) {}

  record(record: CompletionRecord): void {
    this.records.push(record);
    this.recorded++;
    if (this.records.length > this.keep) this.records.shift();
  }

  get last(): CompletionRecord | undefined {
    return this.records.at(-1);
  }

  /** The kept completions (the last `keep`), oldest first. */
  get all(): readonly CompletionRecord[] {
    return this.records;
  }

  /** The session's number of the oldest kept completion (1 until more than `keep` were recorded). */
  get firstKeptNumber(): number {
    return this.recorded - this.records.length + 1;
  }

  summary(): StatusSummary {
    const last = this.last;
    const s = last?.stats ?? null;
    return {
      tokensPerSecond: s ? tokensPerSecond(s) : null,
      acceptance: s ? acceptanceRate(s) : null,
      latencyMs: last ? last.latencyMs : null,
      tokensPerEvaluation: s ? tokensPerEvaluation(s) : null,
      fromCache: last?.fromCache ?? false,
      served: last ? servedKindOf(last) : 'computed',
      mode: s?.speculation?.mode ?? null,
    };
  }

  /** Session totals. */
  aggregate() {
    const generated = this.records.filter((r) => r.stats);
    // Each way of serving apart: a cache hit's lookup of a few ms mixed with the computed ones would pull the median toward 0 ms.
    const spread = (kind: ServedKind) => {
      const latencies = this.records.filter((r) => servedKindOf(r) === kind).map((r) => r.latencyMs);
      return { count: latencies.length, medianMs: median(latencies), p90Ms: percentile(latencies, 0.9) };
    };
    // Every source any completion proposed from (a record has an entry for each of its decode's proposers).
    const sources = sourceOrder(generated.flatMap((r) => Object.keys(r.stats!.speculation?.bySource ?? {})));
    const by = (source: SourceId) => ({
      steps: sumSpeculation(generated, (s) => s.bySource[source]?.steps ?? 0),
      proposedTokens: sumSpeculation(generated, (s) => s.bySource[source]?.proposedTokens ?? 0),
      acceptedTokens: sumSpeculation(generated, (s) => s.bySource[source]?.acceptedTokens ?? 0),
    });
    const tokens = sum(generated, (s) => s.generatedTokens);
    const evaluations = sumSpeculation(generated, (s) => s.targetEvaluations);
    const speedups = generated.flatMap((r) => speedupOverPlain(r.stats!) ?? []);
    const plainMs = speedups.reduce((t, x) => t + x.plainMs, 0);
    const speedupDecodeMs = speedups.reduce((t, x) => t + x.decodeMs, 0);
    return {
      completions: this.records.length,
      generatedTokens: tokens,
      /** Completions the time budget ended with the line in progress (stop reason timeBudget). */
      endedByTimeBudget: generated.filter((r) => r.stats?.stopReason === 'timeBudget').length,
      targetEvaluations: evaluations,
      tokensPerEvaluation: evaluations ? tokens / evaluations : null,
      draftEvaluations: sumSpeculation(generated, (s) => s.draftEvaluations),
      targetMs: sumSpeculation(generated, (s) => s.targetMs),
      draftMs: sumSpeculation(generated, (s) => s.draftMs),
      promptMs: sum(generated, (s) => s.promptMs),
      decodeMs: sum(generated, (s) => s.totalMs - s.promptMs),
      latency: { computed: spread('computed'), cache: spread('cache'), prefetch: spread('prefetch') },
      bySource: Object.fromEntries(sources.map((source) => [source, by(source)])),
      /** Over the completions with an estimate (speedupOverPlain). */
      speedup: speedups.length ? { completions: speedups.length, plainMs, decodeMs: speedupDecodeMs, speedup: plainMs / speedupDecodeMs } : null,
      serverDraft: {
        proposedTokens: sum(generated, (s) => s.serverDraft?.proposedTokens ?? 0),
        acceptedTokens: sum(generated, (s) => s.serverDraft?.acceptedTokens ?? 0),
      },
    };
  }

  clear(): void {
    this.records = [];
    this.recorded = 0;
    this.prefetch = emptyPrefetchTally();
    this.alternatives = emptyAlternativesTally();
  }
}
