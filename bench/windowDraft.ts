// Regime 8: self-speculation on a KV window (issue 16), the acceptance side. The target drafts for
// itself from a second context that holds only the prompt's first 4 tokens and its last W
// (src/speculation/windowDraft.ts), next to the pair's draft model, per task: tokens per target
// evaluation, how many drafted tokens the full target keeps, and decode speed against plain, each
// output checked equal to plain decoding. Fixed proposals of 5 (what the acceptance is) and the
// adaptive policy (what a user would get). The embedded models are trained on 1,024 tokens: prompts
// here are a few hundred, so this measures how often a window agrees with the full context, not the
// 4k-16k contexts where a window would be cheap (bench/longContext.ts measures that cost).
import { DEFAULT_SPECULATION } from '../src/inference/inferenceSession';
import type { CompletionRequest } from '../src/shared/completion';
import { SpeculationPolicy } from '../src/speculation/policy';
import type { BenchTask } from './corpus';
import { type BenchSessionOptions, benchSession, type DecodeTally, emptyTally, engineDocument, tallyDecode } from './engineView';
import { median, Progress } from './stats';

export const WINDOWS = [64, 128, 256];
const FIXED = 5;

/** proposed / accepted: the draft source's (the draft model or the window). */
export interface WindowRow extends DecodeTally {
  source: string;
  policy: 'fixed 5' | 'adaptive';
}

export async function regimeWindowDraft(tasks: BenchTask[], pair: { target: string; draft: string }, opts: BenchSessionOptions) {
  const { session, engine } = await benchSession(pair, opts);
  const sources = ['draft model', ...WINDOWS.map((w) => `window ${w}`)];
  const rows = new Map<string, WindowRow>();
  const policies = new Map<string, SpeculationPolicy>();
  const progress = new Progress(tasks.length, `window draft (${session.info.target.name})`);
  const promptTokens: number[] = [];
  for (const task of tasks) {
    const request = { ...(engine.buildRequest(engineDocument(task)) as CompletionRequest), mode: 'draft' as const };
    promptTokens.push(session.promptFor(request).length);
    await session.complete({ ...request, mode: 'plain' });
    const plain = await session.complete({ ...request, mode: 'plain' });
    const plainRow = rowFor(rows, 'plain', 'adaptive');
    tallyDecode(plainRow, plain, plain, 'draft');
    for (const source of sources) {
      for (const policyKind of ['fixed 5', 'adaptive'] as const) {
        const key = `${source}/${policyKind}`;
        let policy = policies.get(key);
        if (!policy) policies.set(key, (policy = new SpeculationPolicy(policyKind === 'adaptive' ? { ...DEFAULT_SPECULATION } : { ...DEFAULT_SPECULATION, adaptive: false, maxProposal: FIXED })));
        const draft = source === 'draft model' ? undefined : await session.windowDraft(request, Number(source.split(' ')[1]));
        const result = await session.complete(request, undefined, { draft, policy });
        tallyDecode(rowFor(rows, source, policyKind), result, plain, 'draft');
      }
    }
    progress.tick();
  }
  const info = session.info;
  await session.dispose();
  return { info, rows: [...rows.values()], promptTokensMedian: median(promptTokens) };
}

function rowFor(rows: Map<string, WindowRow>, source: string, policy: WindowRow['policy']): WindowRow {
  const key = `${source}/${policy}`;
  let r = rows.get(key);
  if (!r) rows.set(key, (r = { source, policy, ...emptyTally() }));
  return r;
}
