import type { CompletionRequest } from '../src/shared/completion';
import type { PromptLayout } from '../src/prompt/fimPrompt';
import type { BenchTask } from './corpus';
import { type BenchSessionOptions, benchSession, engineDocument, timedCompletion } from './engineView';
import { summarizeTimed, type TimedCompletion, type TimedSummary } from './quality';
import { Progress } from './stats';

export const LAYOUTS: PromptLayout[] = ['standard', 'lineAnchored'];
type Case = 'cold' | 'keystroke';

interface LayoutRun extends TimedCompletion {
  task: number;
  layout: PromptLayout;
  case: Case;
}

export interface LayoutRow extends TimedSummary {
  layout: PromptLayout;
  case: Case;
}

export async function regimeKeystroke(tasks: BenchTask[], pair: { target: string; draft: string }, opts: BenchSessionOptions) {
  const { session, engine } = await benchSession(pair, opts);
  const runs: LayoutRun[] = [];
  const progress = new Progress(tasks.length * LAYOUTS.length, 'prompt layouts');
  for (const task of tasks) {
    const doc = engineDocument(task);
    const request = { ...(engine.buildRequest(doc) as CompletionRequest), mode: 'plain' as const };
    const earlier = { ...request, prefix: request.prefix.slice(0, -1) };
    const measure = async (layout: PromptLayout, kase: Case) => {
      runs.push({ task: task.id, layout, case: kase, ...(await timedCompletion(session, request, doc, task, engine.settings.maxLines)) });
    };
    for (let i = 0; i < LAYOUTS.length; i++) {
      const layout = LAYOUTS[(i + task.id) % LAYOUTS.length];
      session.promptLayout = layout;
      await session.resetCaches();
      await measure(layout, 'cold');
      await session.resetCaches();
      await session.complete(earlier);
      await measure(layout, 'keystroke');
      progress.tick(layout);
    }
  }
  const info = session.info;
  await session.dispose();
  const rows: LayoutRow[] = [];
  for (const kase of ['keystroke', 'cold'] as Case[]) {
    for (const layout of LAYOUTS) rows.push({ layout, case: kase, ...summarizeTimed(runs.filter((r) => r.layout === layout && r.case === kase)) });
  }
  return { info, rows, runs };
}
