// The charts of Show Stats' rendered view: one value per completion the stats collector keeps, as
// series a chart draws and a screen reader reads as numbers (the summary, the per-completion table).
import { median } from '../stats/medians';
import { SERVED_KINDS, SERVED_NAMES, type ServedKind } from '../stats/servedKind';
import { acceptanceRate, type CompletionRecord, servedKindOf, speedupOverPlain, tokensPerEvaluation } from '../stats/statsCollector';
import { sourceName, sourceOrder } from '../shared/decoding';

/** How a chart's numbers are written. */
export type ChartUnit = 'ms' | 'tokens' | 'percent' | 'times';

export function formatValue(value: number, unit: ChartUnit): string {
  switch (unit) {
    case 'ms':
      return `${Math.round(value)} ms`;
    case 'tokens':
      return value.toFixed(2);
    case 'percent':
      return `${Math.round(value * 100)}%`;
    case 'times':
      return `${value.toFixed(2)}x`;
  }
}

/** One line (or one colour of bars) of a chart: a value per completion, null where it has none. */
export interface ChartSeries {
  /** Stable, and the CSS class of its colour: series-<key>. */
  key: string;
  label: string;
  values: (number | null)[];
}

export interface SessionChart {
  id: 'latency' | 'tokens-per-evaluation' | 'acceptance' | 'speedup';
  title: string;
  unit: ChartUnit;
  /** Bars: each completion has a value in one series at most (its colour says which). */
  kind: 'bars' | 'lines';
  /** The session's number of each completion: the x axis. */
  completions: number[];
  series: ChartSeries[];
  /** A line across the chart: what plain decoding gives. */
  reference?: { value: number; label: string };
  /** The highest value the y axis shows at least (acceptance: 100%). */
  minTop?: number;
  /** The figures in words: the chart's description, and the text under it. */
  summary: string;
}

/** Which path served a completion, as the per-completion table and the latency chart say it (the names of stats/servedKind.ts). */
export function servedBy(r: CompletionRecord): { key: ServedKind; label: string } {
  const key = servedKindOf(r);
  return { key, label: SERVED_NAMES[key] };
}

/** A series in words: its last, median, lowest and highest value, over how many completions. */
export function describeSeries(series: ChartSeries, unit: ChartUnit): string | null {
  const values = series.values.filter((v): v is number => v !== null);
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const f = (v: number) => formatValue(v, unit);
  const count = `${values.length} completion${values.length === 1 ? '' : 's'}`;
  if (values.length === 1) return `${series.label}: ${f(values[0]!)} (${count})`;
  return `${series.label}: last ${f(values.at(-1)!)}, median ${f(median(values)!)}, lowest ${f(sorted[0]!)}, highest ${f(sorted.at(-1)!)} (${count})`;
}

function chart(c: Omit<SessionChart, 'summary'>, none: string): SessionChart {
  const said = c.series.flatMap((s) => describeSeries(s, c.unit) ?? []);
  return { ...c, summary: said.length ? `${said.join('; ')}.` : none };
}

/**
 * The session's charts, over the completions kept (oldest first; `firstNumber` is the session's number
 * of the first): latency per completion, tokens per target evaluation, acceptance per proposal source
 * and the speedup against plain decoding's estimate.
 */
export function sessionCharts(records: readonly CompletionRecord[], firstNumber = 1): SessionChart[] {
  const completions = records.map((_, i) => firstNumber + i);
  const perRecord = (pick: (r: CompletionRecord) => number | null) => records.map(pick);
  const latency = SERVED_KINDS.map((key) => ({
    key,
    label: SERVED_NAMES[key],
    values: perRecord((r) => (servedKindOf(r) === key ? r.latencyMs : null)),
  }));
  // Every source a kept completion proposed from.
  const sources = sourceOrder(records.flatMap((r) => Object.keys(r.stats?.speculation?.bySource ?? {})));
  const acceptance: ChartSeries[] = sources.map((source) => ({
    key: source,
    label: sourceName(source),
    values: perRecord((r) => (r.stats?.speculation ? acceptanceRate(r.stats, source) : null)),
  }));
  // A server's own draft model, where it reports what it proposed and kept.
  acceptance.push({ key: 'server', label: "the server's draft model", values: perRecord((r) => (r.stats && !r.stats.speculation ? acceptanceRate(r.stats) : null)) });
  return [
    chart({ id: 'latency', title: 'Latency per completion', unit: 'ms', kind: 'bars', completions, series: latency.filter((s) => s.values.some((v) => v !== null)) }, 'No completion yet.'),
    chart(
      {
        id: 'tokens-per-evaluation',
        title: 'Tokens per target evaluation',
        unit: 'tokens',
        kind: 'bars',
        completions,
        series: [{ key: 'model', label: 'tokens per target evaluation', values: perRecord((r) => (r.stats ? tokensPerEvaluation(r.stats) : null)) }],
        reference: { value: 1, label: 'plain decoding: 1' },
      },
      "No completion decoded by Draftline's own models yet (a cache hit or a server keeps no count of target evaluations).",
    ),
    chart(
      {
        id: 'acceptance',
        title: 'Acceptance of proposed tokens, per source',
        unit: 'percent',
        kind: 'lines',
        completions,
        series: acceptance.filter((s) => s.values.some((v) => v !== null)),
        minTop: 1,
      },
      'No proposal yet: speculation proposes tokens only where it measured that it pays.',
    ),
    chart(
      {
        id: 'speedup',
        title: 'Speedup against plain decoding (estimated)',
        unit: 'times',
        kind: 'bars',
        completions,
        series: [{ key: 'model', label: 'speedup', values: perRecord((r) => (r.stats ? (speedupOverPlain(r.stats)?.speedup ?? null) : null)) }],
        reference: { value: 1, label: 'plain decoding: 1x' },
      },
      "No estimate yet: it needs a completion decoded by Draftline's own speculative decoding, and the time of a one-token step measured on this machine.",
    ),
  ];
}

/** Every kept completion as a table row, newest first: the charts' numbers as text. */
export function completionTable(records: readonly CompletionRecord[], firstNumber = 1): { columns: string[]; rows: string[][] } {
  const dash = (v: number | null, unit: ChartUnit) => (v === null ? '-' : formatValue(v, unit));
  const rows = records.map((r, i) => {
    const s = r.stats;
    const acceptance = s?.speculation
      ? sourceOrder(Object.keys(s.speculation.bySource))
          .filter((source) => s.speculation!.bySource[source]!.proposedTokens > 0)
          .map((source) => `${sourceName(source)} ${dash(acceptanceRate(s, source), 'percent')}`)
          .join(', ') || 'no proposals'
      : s?.serverDraft
        ? `server draft ${dash(acceptanceRate(s), 'percent')}`
        : '-';
    return [
      `${firstNumber + i}`,
      servedBy(r).label,
      formatValue(r.latencyMs, 'ms'),
      s ? `${s.generatedTokens}` : '-',
      dash(s ? tokensPerEvaluation(s) : null, 'tokens'),
      acceptance,
      dash(s ? (speedupOverPlain(s)?.speedup ?? null) : null, 'times'),
    ];
  });
  return { columns: ['completion', 'served', 'latency', 'tokens', 'tokens per target evaluation', 'acceptance', 'speedup vs plain (estimated)'], rows: rows.reverse() };
}
