// Completion quality against the file's own continuation: pure functions, no model.
//
// What is scored is the text the user would see (the completion after the engine's post-processing)
// against `truth`, what the file really has after the cursor. Both metrics compare text without
// trailing whitespace: it is invisible in ghost text and the post-processing drops it anyway.
import { median } from './stats';

/**
 * Where the first line with content ends (its line break, or the end of the text). Blank lines and
 * indentation before it belong to it: at the end of a line the real continuation is "\n  next line",
 * and the literal first line ("") would match any completion that starts a new line, even a wrong one.
 */
export function firstContentLineEnd(text: string): number {
  const content = text.search(/\S/);
  if (content < 0) return text.length;
  const end = text.indexOf('\n', content);
  return end < 0 ? text.length : end;
}

/** The first line with content, leading line breaks and indentation kept, trailing whitespace dropped. */
export function firstContentLine(text: string): string {
  return text.slice(0, firstContentLineEnd(text)).trimEnd();
}

/**
 * The completion's first line with content equals the truth's. An empty (or blank) completion shows
 * nothing, so it is a miss, unless the truth has no content either (then showing nothing is right).
 */
export function firstLineExactMatch(completion: string, truth: string): boolean {
  return firstContentLine(completion) === firstContentLine(truth);
}

/** Edit distance (insert, delete, substitute: cost 1 each) over UTF-16 code units; two rows of memory. */
export function levenshtein(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length < b.length) [a, b] = [b, a];
  if (b.length === 0) return a.length;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  let current = new Array<number>(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    const ai = a.charCodeAt(i - 1);
    for (let j = 1; j <= b.length; j++) {
      const substitute = previous[j - 1]! + (ai === b.charCodeAt(j - 1) ? 0 : 1);
      current[j] = Math.min(substitute, previous[j]! + 1, current[j - 1]! + 1);
    }
    [previous, current] = [current, previous];
  }
  return previous[b.length]!;
}

/**
 * The truth cut to as many lines as the completion has. Lines, not characters: a character cut
 * would give a completion that stops half-way through the line the user needs a perfect score
 * (the truth would be cut to match it), while a line cut charges it for the missing half; text
 * past the completion's last line is not held against it (the model stopped; that is a choice of
 * length, scored by the exact-match column and the latency, not a wrong character).
 */
export function truthCutToLines(truth: string, completion: string): string {
  const lines = completion.split('\n').length;
  return truth.split('\n').slice(0, lines).join('\n');
}

/**
 * 1 - levenshtein(completion, truthCut) / max(lengths), in [0, 1], without trailing whitespace. An
 * empty (or blank) completion scores 0, unless the truth has no content either (1): it is not
 * "similar" to anything it does not show, and an end-of-line truth starts with an empty line that
 * would otherwise make nothing look perfect.
 */
export function editSimilarity(completion: string, truth: string): number {
  const shown = completion.trimEnd();
  if (shown.trim() === '') return truth.trim() === '' ? 1 : 0;
  const cut = truthCutToLines(truth, shown).trimEnd();
  return 1 - levenshtein(shown, cut) / Math.max(shown.length, cut.length);
}

export interface QualityScore {
  firstLineExact: boolean;
  similarity: number;
  /** Nothing to show (blank after post-processing): the user sees no ghost text. */
  empty: boolean;
}

export function scoreCompletion(completion: string, truth: string): QualityScore {
  return { firstLineExact: firstLineExactMatch(completion, truth), similarity: editSimilarity(completion, truth), empty: completion.trim() === '' };
}

/**
 * The score of a ghost text as the line reads once it is accepted: `shown.text` in place of the first
 * `shown.replaceSuffixChars` characters of `restOfLine` (the cursor line's rest in the document, e.g.
 * what the editor auto-closed), the rest of them after it. Nothing shown is a miss however well the
 * auto-closed characters alone would match.
 */
export function scoreShown(shown: { text: string; replaceSuffixChars: number }, restOfLine: string, truth: string): QualityScore {
  if (shown.text.trim() === '') return { firstLineExact: truth.trim() === '', similarity: truth.trim() === '' ? 1 : 0, empty: true };
  return scoreCompletion(shown.text + restOfLine.slice(shown.replaceSuffixChars), truth);
}

export interface QualitySummary {
  /** Share of tasks whose first line with content is exactly right. */
  firstLineExact: number;
  /** Mean edit similarity over the tasks. */
  similarity: number;
  /** Share of tasks with no ghost text to show. */
  empty: number;
}

/** Null when nothing was scored (e.g. a mode whose text is not known). */
export function summarizeQuality(scores: readonly QualityScore[]): QualitySummary | null {
  if (!scores.length) return null;
  return {
    firstLineExact: scores.filter((s) => s.firstLineExact).length / scores.length,
    similarity: scores.reduce((n, s) => n + s.similarity, 0) / scores.length,
    empty: scores.filter((s) => s.empty).length / scores.length,
  };
}

/** One completion as the latency regimes (4, 6) record it. */
export interface TimedCompletion {
  latencyMs: number;
  ttftMs: number;
  promptTokens: number;
  promptTokensEvaluated: number;
  quality: QualityScore;
}

/** Medians of a group of timed completions, with their quality. */
export interface TimedSummary {
  tasks: number;
  latencyMedianMs: number | null;
  ttftMedianMs: number | null;
  promptTokensMedian: number | null;
  promptTokensEvaluatedMedian: number | null;
  firstLineExact: number | null;
  similarity: number | null;
  empty: number | null;
}

export function summarizeTimed(rs: readonly TimedCompletion[]): TimedSummary {
  const med = median;
  const quality = summarizeQuality(rs.map((r) => r.quality));
  return {
    tasks: rs.length,
    latencyMedianMs: med(rs.map((r) => r.latencyMs)),
    ttftMedianMs: med(rs.map((r) => r.ttftMs)),
    promptTokensMedian: med(rs.map((r) => r.promptTokens)),
    promptTokensEvaluatedMedian: med(rs.map((r) => r.promptTokensEvaluated)),
    firstLineExact: quality?.firstLineExact ?? null,
    similarity: quality?.similarity ?? null,
    empty: quality?.empty ?? null,
  };
}
