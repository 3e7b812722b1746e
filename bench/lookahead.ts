// Regime 7: the lookahead pool (issue 16), side by side with the modes it adds to. Per task, the
// n-gram and hybrid modes with and without the pool of the target's own outputs after rejected
// guesses (src/speculation/lookaheadPool.ts), on the completion as the editor asks for it and on a
// long generation (128 tokens, no stop but the end of text), each checked equal to plain decoding.
// The pool is kept per document across tasks, as the extension keeps it.
import { DEFAULT_SPECULATION } from '../src/inference/inferenceSession';
import type { CompletionRequest } from '../src/shared/completion';
import type { DecodeMode } from '../src/shared/decoding';
import { SpeculationPolicy } from '../src/speculation/policy';
import type { BenchTask } from './corpus';
import { type BenchSessionOptions, benchSession, type DecodeTally, emptyTally, engineDocument, tallyDecode } from './engineView';
import { Progress } from './stats';

export type LookaheadMode = 'plain' | 'ngram' | 'ngram+lookahead' | 'hybrid' | 'hybrid+lookahead';
export const LOOKAHEAD_MODES: readonly LookaheadMode[] = ['plain', 'ngram', 'ngram+lookahead', 'hybrid', 'hybrid+lookahead'];
export type Generation = 'editor' | 'long';

/** proposed / accepted: the lookahead source's. */
export interface LookaheadRow extends DecodeTally {
  mode: LookaheadMode;
  generation: Generation;
}

const LONG_TOKENS = 128;

export async function regimeLookahead(tasks: BenchTask[], pair: { target: string; draft: string }, opts: BenchSessionOptions) {
  const { session, engine } = await benchSession(pair, opts);
  const rows = new Map<string, LookaheadRow>();
  const row = (mode: LookaheadMode, generation: Generation) => {
    const key = `${mode}/${generation}`;
    let r = rows.get(key);
    if (!r) rows.set(key, (r = { mode, generation, ...emptyTally() }));
    return r;
  };
  // Each mode learns its own acceptance and costs, as a user's session in that mode would.
  const policies = new Map(LOOKAHEAD_MODES.map((m) => [m, new SpeculationPolicy({ ...DEFAULT_SPECULATION })]));
  const progress = new Progress(tasks.length * 2, `lookahead (${session.info.target.name})`);
  for (const [index, task] of tasks.entries()) {
    const editor = engine.buildRequest(engineDocument(task)) as CompletionRequest;
    const long: CompletionRequest = { ...editor, maxTokens: LONG_TOKENS, stopAtBlockEnd: false, singleLine: false, maxLines: undefined };
    for (const [generation, request] of [
      ['editor', editor],
      ['long', long],
    ] as const) {
      // Untimed: the prompt's KV is then warm for every mode alike.
      await session.complete({ ...request, mode: 'plain' });
      const plain = await session.complete({ ...request, mode: 'plain' });
      // Rotated, so no mode always runs right after another.
      const order = LOOKAHEAD_MODES.map((_, i) => LOOKAHEAD_MODES[(i + index) % LOOKAHEAD_MODES.length]);
      for (const mode of order) {
        const [decodeMode, withPool] = (mode === 'plain' ? ['plain', false] : [mode.replace('+lookahead', ''), mode.endsWith('+lookahead')]) as [DecodeMode, boolean];
        const result = mode === 'plain' ? plain : await session.complete({ ...request, mode: decodeMode }, undefined, { lookahead: withPool, policy: policies.get(mode) });
        tallyDecode(row(mode, generation), result, plain, 'lookahead');
      }
      progress.tick(generation);
    }
  }
  const info = session.info;
  await session.dispose();
  return { info, rows: [...rows.values()] };
}
