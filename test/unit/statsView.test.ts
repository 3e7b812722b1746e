// Show Stats' rendered view (issue #41): the session's charts have a point per completion, every
// figure is there as text too (a screen reader reads tables and words, not pictures), and the page
// loads nothing and runs only its own nonce'd script.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CompletionRecord, speedupOverPlain, StatsCollector } from '../../src/stats/statsCollector';
import { statsReport, statsReportModel } from '../../src/stats/statsReport';
import type { GenerationStats } from '../../src/shared/generationStats';
import { sessionCharts } from '../../src/statsView/sessionCharts';
import { CHARTED_COMPLETIONS, changedParts, statsPageHtml, statsView, statsViewParts } from '../../src/statsView/statsPage';
import { chartSvg, niceTop } from '../../src/statsView/svgChart';
import { loadedModels, runtimeChoice } from '../support/loadedModels';

const NONCE = 'abcdef0123456789abcdef';

/** A completion decoded in-process: `tokens` in `evaluations` target evaluations, n-gram and draft proposals. */
function decoded(tokens: number, evaluations: number, opts: { ngram?: [number, number]; draft?: [number, number]; oneStepMs?: number; decodeMs?: number } = {}): GenerationStats {
  const [ngramProposed, ngramAccepted] = opts.ngram ?? [0, 0];
  const [draftProposed, draftAccepted] = opts.draft ?? [0, 0];
  return {
    promptTokens: 200,
    reusedPromptTokens: 150,
    generatedTokens: tokens,
    promptMs: 40,
    timeToFirstTokenMs: 40,
    totalMs: 40 + (opts.decodeMs ?? 100),
    stopReason: 'eos',
    speculation: {
      mode: 'hybrid',
      targetEvaluations: evaluations,
      targetTokensEvaluated: evaluations + ngramProposed + draftProposed,
      draftEvaluations: draftProposed,
      bySource: {
        ngram: { steps: ngramProposed ? 1 : 0, proposedTokens: ngramProposed, acceptedTokens: ngramAccepted },
        draft: { steps: draftProposed ? 1 : 0, proposedTokens: draftProposed, acceptedTokens: draftAccepted },
        lookahead: { steps: 0, proposedTokens: 0, acceptedTokens: 0 },
        copy: { steps: 0, proposedTokens: 0, acceptedTokens: 0 },
      },
      targetMs: 80,
      draftMs: 10,
      policy: {
        verifyMs: opts.oneStepMs === undefined ? { 2: 12 } : { 1: opts.oneStepMs, 2: opts.oneStepMs * 1.3 },
        proposeMsPerToken: { draft: 1 },
        acceptance: { ngram: 0.5, draft: 0.5, lookahead: 0, copy: 0.75 },
        bestLength: { ngram: 4, draft: 3, lookahead: 0, copy: 32 },
        retryInterval: { ngram: 16, draft: 16, lookahead: 16, copy: 16 },
      },
    },
  };
}

const computed = (latencyMs: number, stats: GenerationStats): CompletionRecord => ({ at: 0, latencyMs, waitMs: 100, fromCache: false, chars: 20, stats });
const cached = (latencyMs: number, prefetched = false): CompletionRecord => ({
  at: 0,
  latencyMs,
  fromCache: true,
  ...(prefetched ? { prefetchedBy: 'accepted' as const } : {}),
  chars: 20,
  stats: null,
});
const server = (latencyMs: number): CompletionRecord => ({
  at: 0,
  latencyMs,
  fromCache: false,
  chars: 20,
  stats: {
    promptTokens: 100,
    reusedPromptTokens: 0,
    generatedTokens: 12,
    promptMs: 30,
    timeToFirstTokenMs: 30,
    totalMs: 90,
    stopReason: 'eos',
    serverDraft: { proposedTokens: 10, acceptedTokens: 7 },
  },
});

/** A session: 4 computed completions (3 with a measured one-token step), 2 cache hits, 1 from a prefetch. */
function session(): StatsCollector {
  const stats = new StatsCollector();
  stats.record(computed(412, decoded(24, 10, { ngram: [8, 6], draft: [10, 5], oneStepMs: 10, decodeMs: 100 })));
  stats.record(cached(3));
  stats.record(computed(287, decoded(16, 12, { draft: [6, 2], oneStepMs: 10, decodeMs: 120 })));
  stats.record(cached(2, true));
  stats.record(computed(353, decoded(30, 9, { ngram: [20, 18], oneStepMs: 10, decodeMs: 90 })));
  stats.record(computed(198, decoded(8, 8)));
  stats.record(cached(4));
  return stats;
}

const localInfo = {
  kind: 'local' as const,
  model: 'draftline-code-target',
  local: loadedModels({ runtime: runtimeChoice({ gpuBinaries: [] }) }),
};

const count = (html: string, pattern: RegExp) => html.match(new RegExp(pattern.source, 'g'))?.length ?? 0;
const chartOf = (stats: StatsCollector, id: string) => sessionCharts(stats.all, stats.firstKeptNumber).find((c) => c.id === id)!;
const pageOf = (stats: StatsCollector) => statsPageHtml(statsView(statsReportModel(stats, 'hybrid', localInfo), stats.all, stats.firstKeptNumber), NONCE);

describe('Show Stats view: the charts of the session', () => {
  it('the latency chart has a bar per completion, coloured by what served it', () => {
    const svg = chartSvg(chartOf(session(), 'latency'))!;
    assert.equal(count(svg, /<rect class="point"/), 7);
    assert.equal(count(svg, /<g class="series series-computed">/), 1);
    assert.match(svg, /<g class="series series-computed">(<rect[^>]*><title>[^<]*<\/title><\/rect>){4}<\/g>/);
    assert.match(svg, /<g class="series series-cache">(<rect[^>]*><title>[^<]*<\/title><\/rect>){2}<\/g>/);
    assert.match(svg, /<g class="series series-prefetch">(<rect[^>]*><title>[^<]*<\/title><\/rect>){1}<\/g>/);
    assert.match(svg, /<title>completion 3, computed: 287 ms<\/title>/);
  });

  it('tokens per target evaluation and the speedup have a bar per completion that has the figure, against plain decoding at 1', () => {
    const stats = session();
    const perEvaluation = chartSvg(chartOf(stats, 'tokens-per-evaluation'))!;
    assert.equal(count(perEvaluation, /<rect class="point"/), 4, 'the 4 computed completions');
    assert.match(perEvaluation, /completion 1, tokens per target evaluation: 2\.40/);
    assert.match(perEvaluation, /<line class="reference"/);
    const speedup = chartOf(stats, 'speedup');
    // 23 one-token steps of 10 ms against 100 ms taken; the fourth completion has no measured step.
    assert.deepEqual(speedup.series[0]!.values, [2.3, null, 1.25, null, 29 / 9, null, null]);
    assert.equal(count(chartSvg(speedup)!, /<rect class="point"/), 3);
  });

  it('acceptance has a line per source that proposed, with a dot per completion where it proposed', () => {
    const chart = chartOf(session(), 'acceptance');
    assert.deepEqual(
      chart.series.map((s) => s.key),
      ['ngram', 'draft'],
    );
    assert.deepEqual(chart.series[0]!.values, [0.75, null, null, null, 0.9, null, null]);
    const svg = chartSvg(chart)!;
    assert.equal(count(svg, /<circle class="point"/), 4, '2 n-gram + 2 draft');
    assert.match(svg, /<title>completion 5, n-gram: 90%<\/title>/);
  });

  it("a server's draft model has its own acceptance line; a session without a figure says so in words instead of a chart", () => {
    const stats = new StatsCollector();
    stats.record(server(120));
    const acceptance = chartOf(stats, 'acceptance');
    assert.deepEqual(
      acceptance.series.map((s) => s.key),
      ['server'],
    );
    const perEvaluation = chartOf(stats, 'tokens-per-evaluation');
    assert.equal(chartSvg(perEvaluation), null);
    assert.match(perEvaluation.summary, /^No completion decoded by Draftline's own models yet/);
    const html = pageOf(stats);
    assert.match(html, /a server keeps no count of target evaluations/);
  });

  it('keeps a bounded history: the charts show the kept completions, numbered as in the session', () => {
    const stats = new StatsCollector(5);
    for (let i = 1; i <= 8; i++) stats.record(computed(100 + i, decoded(10, 5, { oneStepMs: 10 })));
    assert.equal(stats.all.length, 5);
    assert.equal(stats.firstKeptNumber, 4);
    const latency = chartOf(stats, 'latency');
    assert.deepEqual(latency.completions, [4, 5, 6, 7, 8]);
    assert.equal(count(chartSvg(latency)!, /<rect class="point"/), 5);
    assert.match(chartSvg(latency)!, />#4<\/text>.*>#8<\/text>/);
    stats.clear();
    assert.equal(stats.firstKeptNumber, 1);
  });

  it(`charts and lists the last ${CHARTED_COMPLETIONS} completions of a longer session, and says so`, () => {
    const stats = new StatsCollector(500);
    for (let i = 1; i <= 600; i++) stats.record(i % 2 ? cached(2) : computed(100 + i, decoded(10, 5, { oneStepMs: 10 })));
    const view = statsView(statsReportModel(stats, 'hybrid', null), stats.all, stats.firstKeptNumber);
    const latency = view.charts.find((c) => c.id === 'latency')!;
    assert.equal(latency.completions.length, CHARTED_COMPLETIONS);
    assert.deepEqual([latency.completions[0], latency.completions.at(-1)], [501, 600]);
    assert.equal(count(chartSvg(latency)!, /<rect class="point"/), CHARTED_COMPLETIONS);
    assert.equal(view.completions.rows.length, CHARTED_COMPLETIONS);
    assert.equal(view.completions.rows[0]![0], '600', 'newest first');
    const parts = statsViewParts(view);
    assert.match(parts.charts, /^<p class="note">The last 100 completions of 600\.<\/p>/);
    // The session's figures still cover every kept completion.
    assert.match(parts.sections, /completions \(from the cache \/ from a prefetch\)<\/th><td>500 \(250 \/ 0\)/);
  });

  it('the y axis tops at a round number above the highest value', () => {
    assert.deepEqual([0.3, 1, 1.2, 3.7, 9.99, 10, 287, 412, 0].map(niceTop), [0.5, 1, 2, 5, 10, 10, 500, 500, 1]);
  });
});

describe('Show Stats agrees with itself', () => {
  it('the latency chart and the Session table give the same median for the same completions', () => {
    // Ten computed completions whose two middle latencies are 409 and 445 ms: the chart said 409 (the
    // lower one), the table 445 (the upper one). Both are now their mean.
    const stats = new StatsCollector();
    for (const latency of [612, 350, 445, 380, 409, 520, 300, 700, 390, 480]) stats.record(computed(latency, decoded(10, 5)));
    const chart = chartOf(stats, 'latency');
    assert.match(chart.summary, /computed: last 480 ms, median 427 ms, lowest 300 ms, highest 700 ms \(10 completions\)/);
    assert.match(statsReport(stats, 'hybrid', null), /\| latency median \/ p90, computed \| 427 ms \/ 612 ms \(10\) \|/);
  });

  it('one set of names for how a completion was served: the chart, the table of completions, the Session table, the last completion', () => {
    const stats = session();
    const chart = chartOf(stats, 'latency');
    assert.deepEqual(
      chart.series.map((x) => x.label),
      ['computed', 'from the cache', 'from a prefetch'],
    );
    const html = pageOf(stats);
    for (const name of ['computed', 'from the cache', 'from a prefetch']) {
      assert.match(html, new RegExp(`<td>${name}</td>`), `the table of completions says "${name}"`);
      assert.match(html, new RegExp(`latency median / p90, ${name}</th>`), `the Session table says "${name}"`);
    }
    stats.record(cached(2, true));
    assert.match(statsReport(stats, 'hybrid', null), /## Last completion\s+served from a prefetch \(made at the accept\) in 2 ms/);
  });
});

describe('Show Stats view: every figure as text', () => {
  it("has the report's figures as tables, each chart's figures in words, and every completion in a table", () => {
    const stats = session();
    const html = pageOf(stats);
    // The figures Show Stats had as Markdown, in table rows.
    assert.match(html, /<tr><th scope="row">completions \(from the cache \/ from a prefetch\)<\/th><td>7 \(2 \/ 1\)<\/td><\/tr>/);
    // Each way of serving apart, as the latency chart's series (a cache hit's few ms would pull the median toward 0 ms).
    assert.match(html, /<tr><th scope="row">latency median \/ p90, computed<\/th><td>320 ms \/ 412 ms \(4\)<\/td><\/tr>/);
    assert.match(html, /<tr><th scope="row">latency median \/ p90, from the cache<\/th><td>4 ms \/ 4 ms \(2\)<\/td><\/tr>/);
    assert.match(html, /<tr><th scope="row">latency median \/ p90, from a prefetch<\/th><td>2 ms \/ 2 ms \(1\)<\/td><\/tr>/);
    assert.match(html, /<p><span class="label">Mode:<\/span> hybrid<\/p>/);
    assert.match(html, /<p><span class="label">Target:<\/span> draftline-code-target \(30\.0 MB, fim\)<\/p>/);
    assert.match(html, /<h2 id="section-last">Last completion<\/h2><p>served from the cache in 4 ms<\/p>/);
    // Each chart: an image named by its title and described by the words under it.
    for (const id of ['latency', 'tokens-per-evaluation', 'acceptance', 'speedup']) {
      assert.match(html, new RegExp(`<svg class="chart"[^>]* role="img" aria-labelledby="chart-${id}-title" aria-describedby="chart-${id}-summary"`));
      assert.match(html, new RegExp(`<p class="summary" id="chart-${id}-summary">[^<]+</p>`));
    }
    assert.match(html, /computed: last 198 ms, median 320 ms, lowest 198 ms, highest 412 ms \(4 completions\)/);
    assert.match(html, /n-gram: last 90%, median 83%, lowest 75%, highest 90% \(2 completions\)/);
    // The completions, newest first, with what the charts draw.
    assert.match(html, /<tr><th scope="row">7<\/th><td>from the cache<\/td><td>4 ms<\/td>/);
    assert.match(html, /<tr><th scope="row">1<\/th><td>computed<\/td><td>412 ms<\/td><td>24<\/td><td>2\.40<\/td><td>n-gram 75%, draft model 50%<\/td><td>2\.30x<\/td><\/tr>/);
    assert.match(html, /The completions charted, newest first \(<span id="part-count">7<\/span>\)/);
    assert.doesNotMatch(html, /class="note"/, 'all of them are charted');
  });

  it('the Markdown text (Copy as Markdown) has the same figures, the speedup included', () => {
    const stats = session();
    stats.record(computed(300, decoded(24, 10, { ngram: [8, 6], oneStepMs: 10, decodeMs: 100 })));
    const text = statsReport(stats, 'hybrid', localInfo);
    assert.match(text, /\| speedup vs plain decoding \(estimated\) \| 2\.30x \(230 ms estimated, 100 ms taken\) \|/);
    // Over the completions with an estimate: (230 + 150 + 290 + 230) / (100 + 120 + 90 + 100).
    assert.match(text, /\| speedup vs plain decoding \(estimated\) \| 2\.20x over 4 completions \(900 ms estimated, 410 ms taken\) \|/);
    assert.ok(pageOf(stats).includes('<th scope="row">speedup vs plain decoding (estimated)</th><td>2.30x (230 ms estimated, 100 ms taken)</td>'));
  });

  it('escapes what it shows: a model named like markup stays text', () => {
    const stats = session();
    const info = { ...localInfo, local: { ...localInfo.local, target: { ...localInfo.local.target, name: '<img src=x onerror=alert(1)>' } } };
    const html = statsPageHtml(statsView(statsReportModel(stats, 'hybrid', info), stats.all), NONCE);
    assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;'));
    assert.doesNotMatch(html, /<img/);
  });
});

describe('Show Stats view: the page loads nothing and runs only its own script', () => {
  it('has a strict Content-Security-Policy, and its one script and one stylesheet carry the nonce', () => {
    const html = pageOf(session());
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
    assert.equal(csp, `default-src 'none'; style-src 'nonce-${NONCE}'; script-src 'nonce-${NONCE}'; base-uri 'none'; form-action 'none'`);
    assert.ok(html.indexOf('Content-Security-Policy') < html.indexOf('<style'), 'the policy comes before anything it governs');
    assert.equal(count(html, /<script/), 1);
    assert.equal(count(html, /<script nonce="abcdef0123456789abcdef">/), 1);
    assert.equal(count(html, /<style/), 1);
    assert.equal(count(html, /<style nonce="abcdef0123456789abcdef">/), 1);
  });

  it('names no URL and no resource: no http(s), no src, href or url(), no inline style or event handler', () => {
    const html = pageOf(session());
    assert.doesNotMatch(html, /https?:/i);
    assert.doesNotMatch(html, /\s(src|href|srcset|xlink:href|style|on[a-z]+)=/i);
    assert.doesNotMatch(html, /url\(|@import|@font-face/i);
    assert.match(html, /var\(--vscode-editor-foreground\)/, "the theme's colours");
  });

  it('refuses a nonce that could break out of its attribute', () => {
    const view = statsView(statsReportModel(session(), 'hybrid', null), []);
    assert.throws(() => statsPageHtml(view, 'short'), /nonce/);
    assert.throws(() => statsPageHtml(view, `${NONCE}" onload="x`), /nonce/);
  });

  it('a live update carries only the parts that changed', () => {
    const stats = session();
    const view = () => statsViewParts(statsView(statsReportModel(stats, 'hybrid', localInfo), stats.all));
    const before = view();
    assert.deepEqual(changedParts(before, view()), {});
    assert.deepEqual(Object.keys(changedParts({}, before)).sort(), ['charts', 'completions', 'count', 'overview', 'sections']);
    stats.record(cached(5));
    const changed = changedParts(before, view());
    assert.deepEqual(Object.keys(changed).sort(), ['charts', 'completions', 'count', 'sections']);
    assert.equal(changed.count, '8');
  });
});

describe('speedupOverPlain', () => {
  it("is plain decoding's estimated time (a one-token step per token after the first) over the time decoding took", () => {
    assert.deepEqual(speedupOverPlain(decoded(11, 4, { oneStepMs: 10, decodeMs: 50 })), { plainMs: 100, decodeMs: 50, speedup: 2 });
  });

  it('is unknown without a measured one-token step, with one token or none, or with no time', () => {
    assert.equal(speedupOverPlain(decoded(11, 4)), null);
    assert.equal(speedupOverPlain(decoded(1, 1, { oneStepMs: 10 })), null);
    assert.equal(speedupOverPlain(decoded(11, 4, { oneStepMs: 10, decodeMs: 0 })), null);
    assert.equal(speedupOverPlain(server(100).stats!), null);
  });
});
