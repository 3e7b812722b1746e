import type { CompletionStats, DecodeMode, ProposalSource } from './types';

export interface CompletionRecord {
  at: number;
  /** End to end, as the editor waited for it (IPC, prompt, decoding, post-processing). */
  latencyMs: number;
  fromCache: boolean;
  chars: number;
  stats: CompletionStats | null;
}

export interface StatusSummary {
  tokensPerSecond: number | null;
  /** Accepted / proposed of the last generated completion; null when nothing was proposed. */
  acceptance: number | null;
  latencyMs: number | null;
  tokensPerEvaluation: number | null;
  fromCache: boolean;
  mode: DecodeMode | null;
}

function sum(records: CompletionRecord[], pick: (s: CompletionStats) => number): number {
  return records.reduce((total, r) => total + (r.stats ? pick(r.stats) : 0), 0);
}

export function tokensPerSecond(s: CompletionStats): number | null {
  const decodeMs = s.totalMs - s.promptMs;
  return s.generatedTokens > 0 && decodeMs > 0 ? (s.generatedTokens * 1000) / decodeMs : null;
}

export function tokensPerEvaluation(s: CompletionStats): number | null {
  return s.targetEvaluations > 0 ? s.generatedTokens / s.targetEvaluations : null;
}

export function acceptanceRate(s: CompletionStats, source?: ProposalSource): number | null {
  const sources = source ? [s.bySource[source]] : Object.values(s.bySource);
  const proposed = sources.reduce((t, x) => t + x.proposedTokens, 0);
  const accepted = sources.reduce((t, x) => t + x.acceptedTokens, 0);
  return proposed > 0 ? accepted / proposed : null;
}

/** Completion statistics for the status bar and Show Stats: the last completion and the session. */
export class StatsCollector {
  private records: CompletionRecord[] = [];

  constructor(private readonly keep = 500) {}

  record(record: CompletionRecord): void {
    this.records.push(record);
    if (this.records.length > this.keep) this.records.shift();
  }

  get last(): CompletionRecord | undefined {
    return this.records.at(-1);
  }

  get all(): readonly CompletionRecord[] {
    return this.records;
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
      mode: s?.mode ?? null,
    };
  }

  /** Session totals. */
  aggregate() {
    const generated = this.records.filter((r) => r.stats);
    const latencies = this.records.map((r) => r.latencyMs).sort((a, b) => a - b);
    const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] : null);
    const by = (source: ProposalSource) => ({
      steps: sum(generated, (s) => s.bySource[source].steps),
      proposedTokens: sum(generated, (s) => s.bySource[source].proposedTokens),
      acceptedTokens: sum(generated, (s) => s.bySource[source].acceptedTokens),
    });
    const tokens = sum(generated, (s) => s.generatedTokens);
    const evaluations = sum(generated, (s) => s.targetEvaluations);
    return {
      completions: this.records.length,
      cacheHits: this.records.filter((r) => r.fromCache).length,
      generatedTokens: tokens,
      targetEvaluations: evaluations,
      tokensPerEvaluation: evaluations ? tokens / evaluations : null,
      draftEvaluations: sum(generated, (s) => s.draftEvaluations),
      targetMs: sum(generated, (s) => s.targetMs),
      draftMs: sum(generated, (s) => s.draftMs),
      promptMs: sum(generated, (s) => s.promptMs),
      decodeMs: sum(generated, (s) => s.totalMs - s.promptMs),
      latencyMedianMs: pct(0.5),
      latencyP90Ms: pct(0.9),
      bySource: { ngram: by('ngram'), draft: by('draft') },
    };
  }

  clear(): void {
    this.records = [];
  }
}
