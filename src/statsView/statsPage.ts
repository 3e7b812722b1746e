// Show Stats' rendered view as one HTML page for a VS Code webview: the report's figures as tables,
// the session's charts as inline SVG, VS Code's theme colours (its CSS variables), and a strict
// Content-Security-Policy: nothing is loaded (no network, no file, no font), the one script and the one
// stylesheet run by nonce. The extension updates the page in parts (statsViewParts) by postMessage.
import type { CompletionRecord } from '../stats/statsCollector';
import type { FigureRow, StatsReportModel, StatsSection } from '../stats/statsReport';
import { escapeHtml } from './html';
import { completionTable, type SessionChart, sessionCharts } from './sessionCharts';
import { chartSvg, legendHtml } from './svgChart';

/**
 * The completions charted and listed: the last ones. More would be bars under a pixel wide, and the
 * page is rendered again in the extension host after each completion while it is open.
 */
export const CHARTED_COMPLETIONS = 100;

export interface StatsView {
  report: StatsReportModel;
  charts: SessionChart[];
  completions: { columns: string[]; rows: string[][] };
  /** Completions of the session before the charted ones (0: all are charted). */
  notCharted: number;
}

/** The view of a report and the completions the collector keeps (oldest first, the first numbered `firstNumber`). */
export function statsView(report: StatsReportModel, records: readonly CompletionRecord[], firstNumber = 1): StatsView {
  const charted = records.slice(-CHARTED_COMPLETIONS);
  const first = firstNumber + records.length - charted.length;
  return { report, charts: sessionCharts(charted, first), completions: completionTable(charted, first), notCharted: first - 1 };
}

/** The parts of the page the extension replaces when the figures change, by id (part-<id> in the page). */
export type StatsViewParts = Record<'overview' | 'charts' | 'sections' | 'count' | 'completions', string>;

export function statsViewParts(view: StatsView): StatsViewParts {
  return {
    overview: view.report.overview.map(([label, value]) => `<p><span class="label">${escapeHtml(label)}:</span> ${escapeHtml(value)}</p>`).join(''),
    charts:
      (view.notCharted ? `<p class="note">The last ${view.completions.rows.length} completions of ${view.notCharted + view.completions.rows.length}.</p>` : '') + view.charts.map(chartFigure).join(''),
    sections: view.report.sections.map(sectionHtml).join(''),
    count: `${view.completions.rows.length}`,
    completions: view.completions.rows.length
      ? tableHtml(
          view.completions.columns,
          view.completions.rows.map((row) => row.map(escapeHtml)),
          'completions',
        )
      : '<p>No completion yet.</p>',
  };
}

/** The parts of `next` that differ from `previous`: what an update posts. */
export function changedParts(previous: Partial<StatsViewParts>, next: StatsViewParts): Partial<StatsViewParts> {
  return Object.fromEntries(Object.entries(next).filter(([id, html]) => previous[id as keyof StatsViewParts] !== html));
}

function chartFigure(chart: SessionChart): string {
  const summaryId = `chart-${chart.id}-summary`;
  const svg = chartSvg(chart, summaryId);
  return [
    `<figure class="chart-figure" id="figure-${chart.id}">`,
    `<figcaption>${escapeHtml(chart.title)}</figcaption>`,
    svg ?? '',
    svg ? legendHtml(chart) : '',
    `<p class="summary" id="${summaryId}">${escapeHtml(chart.summary)}</p>`,
    '</figure>',
  ].join('');
}

function sectionHtml(section: StatsSection): string {
  const heading = `<h2 id="section-${section.id}">${escapeHtml(section.heading)}</h2>`;
  const body =
    section.sentence !== undefined
      ? `<p>${escapeHtml(section.sentence)}</p>`
      : section.rows.length
        ? tableHtml(
            section.columns,
            section.rows.map(([figure, value]: FigureRow) => [escapeHtml(figure), escapeHtml(value)]),
            section.id,
          )
        : '';
  return `<section aria-labelledby="section-${section.id}">${heading}${body}</section>`;
}

/** A table whose first cell in each row names the row; cells are HTML already. */
function tableHtml(columns: readonly string[], rows: string[][], id: string): string {
  const head = `<thead><tr>${columns.map((c) => `<th scope="col">${escapeHtml(c)}</th>`).join('')}</tr></thead>`;
  const body = rows.map(([first, ...rest]) => `<tr><th scope="row">${first}</th>${rest.map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('');
  return `<table class="table-${escapeHtml(id)}">${head}<tbody>${body}</tbody></table>`;
}

/** The page's Content-Security-Policy: nothing loads; only the page's own nonce'd style and script run. */
export function contentSecurityPolicy(nonce: string): string {
  return `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; base-uri 'none'; form-action 'none'`;
}

/** The whole page. `nonce`: fresh for each page, letters and digits only. */
export function statsPageHtml(view: StatsView, nonce: string): string {
  if (!/^[A-Za-z0-9]{16,}$/.test(nonce)) throw new Error('statsPageHtml: the nonce must be 16 or more letters and digits');
  const parts = statsViewParts(view);
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(nonce)}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<title>Draftline Stats</title>',
    `<style nonce="${nonce}">${STYLE}</style>`,
    '</head>',
    '<body>',
    '<header><h1>Draftline stats</h1><button id="copy" type="button">Copy as Markdown</button></header>',
    // The pictures first, then the figures, then what computes them.
    '<section aria-labelledby="section-charts"><h2 id="section-charts">This session, per completion</h2>',
    `<div class="charts" id="part-charts">${parts.charts}</div></section>`,
    `<div id="part-sections">${parts.sections}</div>`,
    '<section aria-labelledby="section-overview"><h2 id="section-overview">What computes the completions</h2>',
    `<div class="overview" id="part-overview">${parts.overview}</div></section>`,
    `<details><summary>The completions charted, newest first (<span id="part-count">${parts.count}</span>)</summary>`,
    `<div id="part-completions">${parts.completions}</div></details>`,
    `<script nonce="${nonce}">${SCRIPT}</script>`,
    '</body>',
    '</html>',
  ].join('\n');
}

/** In the page: replaces the parts an update carries, asks for the figures once loaded (again after VS Code reloads a hidden page), and copies. */
const SCRIPT = `(() => {
  const vscode = acquireVsCodeApi();
  window.addEventListener('message', (event) => {
    const message = event.data;
    if (!message || message.type !== 'update' || typeof message.parts !== 'object') return;
    for (const [id, html] of Object.entries(message.parts)) {
      const part = document.getElementById('part-' + id);
      if (part && typeof html === 'string') part.innerHTML = html;
    }
  });
  document.getElementById('copy').addEventListener('click', () => vscode.postMessage({ type: 'copy' }));
  vscode.postMessage({ type: 'ready' });
})();`;

const STYLE = `
body { color: var(--vscode-editor-foreground); background: var(--vscode-editor-background); font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); padding: 0 20px 24px; max-width: 1200px; }
header { display: flex; align-items: center; justify-content: space-between; gap: 1em; }
h1 { font-size: 1.6em; font-weight: 600; margin: 0.5em 0 0; }
h2 { font-size: 1.15em; font-weight: 600; margin: 1.2em 0 0.5em; padding-bottom: 0.25em; border-bottom: 1px solid var(--vscode-widget-border, rgba(128, 128, 128, 0.35)); }
.overview p { margin: 0.15em 0; }
.overview .label { font-weight: 600; }
table { border-collapse: collapse; margin: 0.3em 0; }
th, td { text-align: left; vertical-align: top; padding: 3px 16px 3px 0; border-bottom: 1px solid var(--vscode-widget-border, rgba(128, 128, 128, 0.25)); }
thead th { font-weight: 600; }
tbody th { font-weight: normal; color: var(--vscode-descriptionForeground); }
td { font-variant-numeric: tabular-nums; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: 8px 28px; }
figure { margin: 0; }
figcaption { font-weight: 600; margin: 0.3em 0; }
.chart { display: block; width: 100%; height: auto; }
.chart .grid { stroke: var(--vscode-charts-lines, rgba(128, 128, 128, 0.4)); stroke-width: 1; }
.chart .axis, .chart .reference-label { fill: var(--vscode-descriptionForeground, currentColor); font-size: 11px; font-family: var(--vscode-font-family); }
.chart .reference { stroke: var(--vscode-charts-foreground, currentColor); stroke-width: 1; stroke-dasharray: 5 4; }
/* A source without a colour of its own. */
.series { --series: var(--vscode-charts-foreground, currentColor); }
.series-model, .series-computed { --series: var(--vscode-charts-blue, #3794ff); }
.series-cache { --series: var(--vscode-charts-green, #89d185); }
.series-prefetch { --series: var(--vscode-charts-purple, #b180d7); }
.series-ngram { --series: var(--vscode-charts-orange, #d18616); }
.series-draft { --series: var(--vscode-charts-blue, #3794ff); }
.series-lookahead { --series: var(--vscode-charts-purple, #b180d7); }
.series-server { --series: var(--vscode-charts-yellow, #cca700); }
.series .point { fill: var(--series); }
.series .line { fill: none; stroke: var(--series); stroke-width: 2; }
.legend { display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; list-style: none; margin: 0.2em 0; padding: 0; }
.swatch { width: 0.8em; height: 0.8em; margin-right: 0.4em; vertical-align: -0.05em; }
.summary, .note { color: var(--vscode-descriptionForeground); margin: 0.3em 0 0.6em; }
.note { grid-column: 1 / -1; }
button { font: inherit; color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; border-radius: 2px; padding: 4px 12px; cursor: pointer; }
button:hover { background: var(--vscode-button-hoverBackground); }
button:focus-visible, summary:focus-visible { outline: 1px solid var(--vscode-focusBorder); outline-offset: 2px; }
details > summary { cursor: pointer; font-weight: 600; margin: 1.4em 0 0.5em; }
`;
