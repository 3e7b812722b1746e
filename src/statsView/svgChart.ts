// A session chart as inline SVG: no script, no style attribute (the page's Content-Security-Policy
// allows neither), colours from the page's stylesheet by class (VS Code's theme colours). A screen
// reader reads it as one image named by its <title> and described by its <desc> (the figures in words).
import { escapeHtml } from './html';
import { formatValue, type SessionChart } from './sessionCharts';

const WIDTH = 640;
const HEIGHT = 160;
const PLOT = { left: 56, right: WIDTH - 12, top: 12, bottom: HEIGHT - 24 };
/** Above this many completions, a line chart draws no dot on every point (its lines show them). */
const DOTS_UP_TO = 60;

const round = (x: number) => Math.round(x * 10) / 10;

/** A round number at or above `x` (1, 2 or 5 times a power of ten), for the top of the y axis. */
export function niceTop(x: number): number {
  if (!(x > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(x));
  return ([1, 2, 5, 10].find((m) => m * power >= x * (1 - 1e-9)) ?? 10) * power;
}

/**
 * The chart's SVG, or null when it has no value to draw. It is named by its <title>, and described by
 * its <desc> or by the element `describedBy` names (the same words shown under it).
 */
export function chartSvg(chart: SessionChart, describedBy?: string): string | null {
  const values = chart.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  if (values.length === 0) return null;
  const n = chart.completions.length;
  const top = niceTop(Math.max(...values, chart.reference?.value ?? 0, chart.minTop ?? 0));
  const band = (PLOT.right - PLOT.left) / n;
  const x = (i: number) => round(PLOT.left + band * (i + 0.5));
  const y = (v: number) => round(PLOT.bottom - ((PLOT.bottom - PLOT.top) * v) / top);
  const label = (i: number) => `completion ${chart.completions[i]}`;
  const parts: string[] = [];
  // The y axis: 0, half and the top, with faint lines across.
  for (const v of [0, top / 2, top]) {
    parts.push(
      `<line class="grid" x1="${PLOT.left}" x2="${PLOT.right}" y1="${y(v)}" y2="${y(v)}"/>`,
      `<text class="axis" x="${PLOT.left - 6}" y="${y(v) + 4}" text-anchor="end">${escapeHtml(formatValue(v, chart.unit))}</text>`,
    );
  }
  // The x axis: the first and the last completion's number.
  parts.push(`<text class="axis" x="${PLOT.left}" y="${HEIGHT - 6}" text-anchor="start">#${chart.completions[0]}</text>`);
  if (n > 1) parts.push(`<text class="axis" x="${PLOT.right}" y="${HEIGHT - 6}" text-anchor="end">#${chart.completions[n - 1]}</text>`);
  for (const series of chart.series) {
    const shapes: string[] = [];
    const point = (i: number, v: number) => `<title>${escapeHtml(`${label(i)}, ${series.label}: ${formatValue(v, chart.unit)}`)}</title>`;
    if (chart.kind === 'bars') {
      const width = round(Math.max(1, band * 0.7));
      series.values.forEach((v, i) => {
        if (v === null) return;
        const height = round(Math.max(PLOT.bottom - y(v), 1));
        shapes.push(`<rect class="point" x="${round(x(i) - width / 2)}" y="${round(PLOT.bottom - height)}" width="${width}" height="${height}">${point(i, v)}</rect>`);
      });
    } else {
      // A line through consecutive values; a gap where a completion has none. A point with no
      // neighbour, or every point in a short session, gets a dot.
      let run: string[] = [];
      const flush = () => {
        if (run.length > 1) shapes.push(`<polyline class="line" points="${run.join(' ')}"/>`);
        run = [];
      };
      series.values.forEach((v, i) => {
        if (v === null) {
          flush();
          return;
        }
        run.push(`${x(i)},${y(v)}`);
        const alone = (series.values[i - 1] ?? null) === null && (series.values[i + 1] ?? null) === null;
        if (alone || n <= DOTS_UP_TO) shapes.push(`<circle class="point" cx="${x(i)}" cy="${y(v)}" r="3">${point(i, v)}</circle>`);
      });
      flush();
    }
    parts.push(`<g class="series series-${escapeHtml(series.key)}">${shapes.join('')}</g>`);
  }
  if (chart.reference) {
    const at = y(chart.reference.value);
    parts.push(
      `<line class="reference" x1="${PLOT.left}" x2="${PLOT.right}" y1="${at}" y2="${at}"/>`,
      `<text class="reference-label" x="${PLOT.right - 4}" y="${at - 4}" text-anchor="end">${escapeHtml(chart.reference.label)}</text>`,
    );
  }
  const id = `chart-${chart.id}`;
  return [
    `<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="${id}-title" aria-describedby="${describedBy ?? `${id}-desc`}" preserveAspectRatio="xMinYMin meet">`,
    `<title id="${id}-title">${escapeHtml(chart.title)}</title>`,
    `<desc id="${id}-desc">${escapeHtml(chart.summary)}</desc>`,
    ...parts,
    '</svg>',
  ].join('');
}

/** The colours of a chart's series, named: one entry per series (none for a single series). */
export function legendHtml(chart: SessionChart): string {
  if (chart.series.length < 2) return '';
  const items = chart.series.map(
    (s) => `<li class="series series-${escapeHtml(s.key)}"><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect class="point" width="10" height="10"/></svg>${escapeHtml(s.label)}</li>`,
  );
  return `<ul class="legend" aria-label="${escapeHtml(`${chart.title}: legend`)}">${items.join('')}</ul>`;
}
