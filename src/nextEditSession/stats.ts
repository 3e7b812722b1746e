// What the status bar tooltip, Show Stats and the log say about next-edit suggestions.
import { type SourceId, sourceName, sourceOrder } from '../shared/decoding';
import { median } from '../stats/medians';
import type { StatsSection } from '../stats/statsReport';
import type { NextEditResult } from '../nextEdit/types';
import { NextEditModelProblem } from './modelProblem';
import type { NextEditOutcome, ShownSuggestion } from './session';
import type { NextEditRender } from './shape';

/** One answered request's figures, as the backend reported them. */
export interface NextEditRequestFigures {
  /** Request start to the first final edit (streamed), or to the answer when none streamed. */
  firstEditMs: number | null;
  totalMs: number;
  /** Generated tokens per target evaluation (1 for plain decoding). */
  tokensPerEvaluation: number | null;
  /** Accepted / proposed tokens of each source that proposed (the window copy mostly), by source id. */
  bySource: Record<SourceId, { accepted: number; proposed: number }>;
  generatedTokens: number;
}

export interface NextEditSummary {
  requests: number;
  shown: number;
  applied: number;
  /** Escape. */
  dismissed: number;
  /** Removed by a keystroke, a cursor move, or ghost text with priority. */
  dropped: number;
  noSuggestion: number;
  /** Median ms from request start to the first final edit. */
  firstEditMs: number | null;
  /** Median ms from the last keystroke to the suggestion on screen. */
  onScreenMs: number | null;
  tokensPerEvaluation: number | null;
  /** Accepted / proposed tokens of each source that proposed, by source id. */
  acceptance: Record<SourceId, number>;
}

/** The figures of a backend's answer. */
export function requestFigures(result: Pick<NextEditResult, 'timeToFirstEditMs' | 'stats'>): NextEditRequestFigures {
  const stats = result.stats;
  const spec = stats?.speculation;
  const proposed = Object.entries(spec?.bySource ?? {}).filter(([, by]) => by.proposedTokens > 0);
  const generated = stats?.generatedTokens ?? 0;
  return {
    firstEditMs: result.timeToFirstEditMs ?? null,
    totalMs: stats?.totalMs ?? 0,
    tokensPerEvaluation: spec && spec.targetEvaluations > 0 ? generated / spec.targetEvaluations : null,
    bySource: Object.fromEntries(proposed.map(([source, by]) => [source, { accepted: by.acceptedTokens, proposed: by.proposedTokens }])),
    generatedTokens: generated,
  };
}

export class NextEditStats {
  requests = 0;
  noSuggestion = 0;
  readonly shownBy: Record<NextEditRender, number> = { ghost: 0, inline: 0, deletion: 0, block: 0 };
  readonly outcomes: Record<NextEditOutcome, number> = { applied: 0, dismissed: 0, typedOver: 0, movedAway: 0, fimPriority: 0, replaced: 0, closed: 0 };
  /** Kept bounded: the medians are over the last ones. */
  private readonly firstEdit: number[] = [];
  private readonly onScreen: number[] = [];
  private generated = 0;
  private evaluations = 0;
  /** Accepted and proposed tokens by source. */
  private readonly sources = new Map<SourceId, { accepted: number; proposed: number }>();
  /** The last reason an answer gave no suggestion. */
  lastNoSuggestion: string | null = null;
  /** A model that cannot serve next edits: said once, shown while it lasts. */
  readonly modelProblem = new NextEditModelProblem();

  requested(): void {
    this.requests++;
  }

  answered(figures: NextEditRequestFigures): void {
    if (figures.firstEditMs !== null) push(this.firstEdit, figures.firstEditMs);
    if (figures.tokensPerEvaluation !== null && figures.tokensPerEvaluation > 0) {
      this.generated += figures.generatedTokens;
      this.evaluations += figures.generatedTokens / figures.tokensPerEvaluation;
    }
    for (const [source, by] of Object.entries(figures.bySource)) {
      const tally = this.sources.get(source) ?? { accepted: 0, proposed: 0 };
      tally.accepted += by.accepted;
      tally.proposed += by.proposed;
      this.sources.set(source, tally);
    }
  }

  nothingToSuggest(reason: string): void {
    this.noSuggestion++;
    this.lastNoSuggestion = reason;
  }

  shown(render: NextEditRender, onScreenMs: number | null): void {
    this.shownBy[render]++;
    if (onScreenMs !== null) push(this.onScreen, onScreenMs);
  }

  ended(outcome: NextEditOutcome): void {
    this.outcomes[outcome]++;
  }

  summary(): NextEditSummary {
    const o = this.outcomes;
    return {
      requests: this.requests,
      shown: Object.values(this.shownBy).reduce((a, b) => a + b, 0),
      applied: o.applied,
      dismissed: o.dismissed,
      dropped: o.typedOver + o.movedAway + o.fimPriority,
      noSuggestion: this.noSuggestion,
      firstEditMs: median(this.firstEdit),
      onScreenMs: median(this.onScreen),
      tokensPerEvaluation: this.evaluations > 0 ? this.generated / this.evaluations : null,
      acceptance: Object.fromEntries(this.sourceIds().map((source) => [source, this.sources.get(source)!.accepted / this.sources.get(source)!.proposed])),
    };
  }

  /** The sources that proposed, in their display order. */
  private sourceIds(): SourceId[] {
    return sourceOrder(this.sources.keys());
  }

  /** Show Stats' section. */
  section(): StatsSection {
    const s = this.summary();
    const base = { id: 'nextEdits' as const, heading: 'Next-edit suggestions', columns: ['figure', 'value'] as const };
    if (s.requests === 0) return { ...base, rows: [], sentence: 'none asked yet (Draftline: Toggle Next-Edit Suggestions turns them on)' };
    const ms = (v: number | null) => (v === null ? '-' : `${Math.round(v)} ms`);
    const by = this.shownBy;
    const problem = this.modelProblem.problem;
    return {
      ...base,
      rows: [
        ...(problem ? [['no suggestions while the model cannot serve', problem] as [string, string]] : []),
        ['asked / no suggestion', `${s.requests} / ${s.noSuggestion}${this.lastNoSuggestion ? ` (last: ${this.lastNoSuggestion})` : ''}`],
        ['shown (ghost text, inline, deletion, block)', `${s.shown} (${by.ghost}, ${by.inline}, ${by.deletion}, ${by.block})`],
        ['applied', `${s.applied}${s.shown ? ` (${Math.round((100 * s.applied) / s.shown)}%)` : ''}`],
        ['dismissed (Escape)', String(s.dismissed)],
        ['removed by typing / a cursor move / ghost text first', `${this.outcomes.typedOver} / ${this.outcomes.movedAway} / ${this.outcomes.fimPriority}`],
        ['time to the first edit, median', ms(s.firstEditMs)],
        ['last keystroke to the suggestion on screen, median', ms(s.onScreenMs)],
        ['tokens per target evaluation', s.tokensPerEvaluation === null ? '-' : s.tokensPerEvaluation.toFixed(2)],
        ...this.sourceIds().map((source): [string, string] => {
          const { accepted, proposed } = this.sources.get(source)!;
          return [`${sourceName(source)}: accepted`, `${Math.round(s.acceptance[source]! * 100)}% (${accepted}/${proposed} tokens)`];
        }),
      ],
    };
  }

  /** The status bar tooltip's line (null before the first request). */
  tooltipLine(): string | null {
    const s = this.summary();
    if (s.requests === 0) return null;
    const problem = this.modelProblem.problem;
    if (problem) return `Next edits: no suggestions (${problem})`;
    const parts = [`${s.shown} shown, ${s.applied} applied, ${s.dismissed + s.dropped} dismissed`];
    if (s.firstEditMs !== null) parts.push(`first edit ${Math.round(s.firstEditMs)} ms`);
    if (s.tokensPerEvaluation !== null) parts.push(`${s.tokensPerEvaluation.toFixed(2)} tokens/evaluation`);
    for (const source of this.sourceIds()) parts.push(`${sourceName(source)} ${Math.round(s.acceptance[source]! * 100)}% accepted`);
    return `Next edits: ${parts.join(' · ')}`;
  }
}

function push(values: number[], value: number): void {
  values.push(value);
  if (values.length > 200) values.shift();
}

/** The one log line of a suggestion, when it ends. */
export function describeSuggestion(s: ShownSuggestion, outcome: NextEditOutcome, figures: NextEditRequestFigures | null, onScreenMs: number | null): string {
  const e = s.edit;
  // The line where it was shown (the document may have changed since: typing removes it).
  const line = s.shape.firstLine + 1;
  const what = e.start === e.end ? `insert ${JSON.stringify(clip(e.text))}` : e.text ? `replace ${e.end - e.start} chars with ${JSON.stringify(clip(e.text))}` : `delete ${e.end - e.start} chars`;
  const place = s.shape.distance === 0 ? 'on the cursor line' : `${s.shape.distance} line${s.shape.distance === 1 ? '' : 's'} from the cursor${s.shape.far ? ', far' : ''}`;
  const timing = [
    onScreenMs !== null ? `on screen ${Math.round(onScreenMs)} ms after the last keystroke` : null,
    figures?.firstEditMs != null ? `first edit ${Math.round(figures.firstEditMs)} ms` : null,
    figures ? `answer ${Math.round(figures.totalMs)} ms` : null,
    figures?.tokensPerEvaluation != null ? `${figures.tokensPerEvaluation.toFixed(2)} tokens/evaluation` : null,
    ...sourceOrder(Object.keys(figures?.bySource ?? {})).map((source) => `${sourceName(source)} ${figures!.bySource[source]!.accepted}/${figures!.bySource[source]!.proposed}`),
  ].filter(Boolean);
  const chain = s.chainIndex > 0 ? `, chain step ${s.chainIndex + 1}` : '';
  return `next edit ${OUTCOME_WORDS[outcome]}: line ${line}, ${what}, shown as ${s.shape.render} ${place}${s.jumped ? ' (jumped to)' : ''}${chain}${timing.length ? `; ${timing.join(', ')}` : ''}`;
}

const OUTCOME_WORDS: Record<NextEditOutcome, string> = {
  applied: 'applied',
  dismissed: 'dismissed (Escape)',
  typedOver: 'removed by typing',
  movedAway: 'removed (the cursor moved away)',
  fimPriority: 'withdrawn (ghost text at the cursor has priority)',
  replaced: 'replaced by a newer one',
  closed: 'removed (editor changed or next edits off)',
};

function clip(text: string, max = 40): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
