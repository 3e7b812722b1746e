// Regime 10: alternatives on demand (issue #32). On each task the greedy ghost text is shown (untimed:
// what the user saw), then the user asks for the next suggestion (Alt+]): timed from that ask to the
// up-to-3 suggestions being available to the provider (the greedy one from the engine's cache, the
// others computed in-process: branch at the least certain token, the greedy continuation of the next
// most likely tokens there, post-processed and deduplicated). Scored: whether the file's real
// continuation's first line equals the first line of one of the suggestions (top-3 first-line exact)
// against the greedy one alone. All through CompletionEngine over an in-process session: the same
// path (window, prompt, speculation, post-processing, dedup, cache) as the extension, without the IPC hop.
// Two branch scopes side by side: anywhere in the greedy completion (smallest margin overall), or only
// before its first line with content is complete (each alternative then shows another first line).
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, type EngineAlternatives, SkippedCompletion } from '../src/engine/completionEngine';
import type { CompletionRequest } from '../src/shared/completion';
import type { BenchTask } from './corpus';
import { type BenchSessionOptions, benchSession, engineDocument } from './engineView';
import { oneAtATime } from './oneAtATime';
import { firstContentLine, firstLineExactMatch } from './quality';
import { Progress } from './stats';

/** Alternatives asked for besides the greedy suggestion (the engine's default: 3 suggestions in all). */
export const ALTERNATIVES_ASKED = 2;

/** Where alternatives may branch (InferenceSession.alternativesScope), compared side by side. */
export const SCOPES = ['completion', 'firstLine'] as const;
export type AlternativesScope = (typeof SCOPES)[number];

export interface AlternativesTaskRow {
  task: number;
  scope: AlternativesScope;
  /** The greedy ghost text's own latency (the untimed first request, for scale). */
  greedyMs: number;
  /** Ask -> suggestions available, ms. */
  alternativesMs: number;
  /** Suggestions offered in all (greedy included when it has text). */
  suggestions: number;
  /** Distinct first lines (with content) among the suggestions: an alternative that branches after the first line shows the same one. */
  distinctFirstLines: number;
  greedyExact: boolean;
  top3Exact: boolean;
  /** Which suggestion's first line is the truth's: the greedy one, an alternative, or none. */
  matchedBy: 'greedy' | 'alternative' | null;
  branch: EngineAlternatives['branch'] | null;
  limitedBy: string | null;
}

export async function regimeAlternatives(tasks: BenchTask[], pair: { target: string; draft: string }, opts: BenchSessionOptions) {
  const { session } = await benchSession(pair, opts);
  const turn = oneAtATime();
  const backend = {
    complete: (request: CompletionRequest, signal?: AbortSignal) => turn(() => session.complete(request, signal)),
    alternatives: (request: CompletionRequest, count: number, signal?: AbortSignal) => turn(() => session.alternatives(request, count, signal)),
  };
  const rows: AlternativesTaskRow[] = [];
  const progress = new Progress(tasks.length * SCOPES.length, `alternatives (${session.info.target.name})`);
  for (const [index, task] of tasks.entries()) {
    const doc = engineDocument(task);
    session.documents.setDocument(doc.uri, task.text);
    // Side by side, the order rotated per task; the greedy completion is computed (and timed) once,
    // by the first, and the second's comes from the session's memory of it, as the first's alternatives did.
    const order = SCOPES.map((_, i) => SCOPES[(i + index) % SCOPES.length]);
    let greedyMs = 0;
    for (const scope of order) {
      session.alternativesScope = scope;
      // A fresh engine (its own cache), no prefetch: nothing runs but what is measured.
      const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS, maxTokens: opts.maxTokens, prefetch: false, timeBudgetMs: 0 });
      const t0 = performance.now();
      const greedy = await engine.complete(doc);
      if (scope === order[0]) greedyMs = performance.now() - t0;
      const t1 = performance.now();
      const answer = await engine.alternatives(doc, ALTERNATIVES_ASKED);
      const alternativesMs = performance.now() - t1;
      progress.tick(scope);
      if (greedy instanceof SkippedCompletion || answer instanceof SkippedCompletion) continue;
      const texts = answer.items.map((i) => i.text);
      // The greedy suggestion alone, as today (an empty one shows nothing: a miss unless the truth is empty too).
      const greedyExact = firstLineExactMatch(greedy.text, task.truth);
      const anyExact = texts.some((t) => firstLineExactMatch(t, task.truth));
      rows.push({
        task: task.id,
        scope,
        greedyMs,
        alternativesMs,
        suggestions: texts.length,
        distinctFirstLines: new Set(texts.map(firstContentLine)).size,
        greedyExact,
        top3Exact: greedyExact || anyExact,
        matchedBy: greedyExact ? 'greedy' : anyExact ? 'alternative' : null,
        branch: answer.branch ?? null,
        limitedBy: answer.limitedBy ?? null,
      });
    }
    session.documents.removeDocument(doc.uri);
  }
  const info = session.info;
  await session.dispose();
  return { info, rows };
}
