// The time budget on a real model (the embedded v3 pair): a fake clock spends it at a set token, and
// what is kept is whole lines of the greedy completion, its tokens the greedy ones, in every mode; the
// alternatives of a request share its budget.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { InferenceSession } from '../../src/inference/inferenceSession';
import { embeddedPairPaths } from '../../src/models/embedded';
import type { CompletionRequest } from '../../src/shared/completion';
import type { BudgetClock } from '../../src/stopping/stopRules';
import { loadOnCpu } from '../support/losslessPairs';
import { promptCases } from '../support/prompts';

const ROOT = path.resolve(__dirname, '../..');

/** A clock that moves 10 ms each time it is read (once a token): a budget of 10·n ms is spent at the n-th token. */
function tokenClock(): Required<BudgetClock> {
  let ms = 0;
  return { now: () => (ms += 10), startedAt: 0 };
}

describe('the time budget on the embedded pair', () => {
  let session: InferenceSession;
  before(async () => {
    const pair = embeddedPairPaths(ROOT, 'v3');
    session = await loadOnCpu(pair.target, pair.draft);
  });
  after(async () => session?.dispose());

  const requests = (): CompletionRequest[] =>
    promptCases(30, 55)
      .filter((c) => c.name.startsWith('code'))
      .map((c) => ({ prefix: c.prefix, suffix: c.suffix, maxTokens: 48, maxLines: 16, mode: 'plain', languageId: 'typescript' }));

  it('in every mode: a prefix of the greedy tokens, cut where a line of the greedy text ends', async () => {
    let cut = 0;
    for (const request of requests()) {
      const greedy = await session.complete(request);
      for (const mode of ['plain', 'hybrid'] as const) {
        const budgeted = await session.complete({ ...request, mode, timeBudgetMs: 80 }, undefined, { budgetClock: tokenClock() });
        assert.deepEqual(budgeted.tokens, greedy.tokens.slice(0, budgeted.tokens.length), `${mode}: the greedy tokens`);
        assert.ok(greedy.text.startsWith(budgeted.text), `${mode}: the beginning of the greedy text\n${JSON.stringify(budgeted.text)}\n${JSON.stringify(greedy.text)}`);
        if (budgeted.stats.stopReason === 'timeBudget') {
          cut++;
          assert.equal(greedy.text[budgeted.text.length], '\n', `${mode}: ends where a line of the greedy text ends`);
          assert.match(budgeted.text, /\S/);
          assert.ok(budgeted.tokens.length < greedy.tokens.length);
        } else assert.equal(budgeted.text, greedy.text, `${mode}: not cut, the whole completion`);
      }
    }
    assert.ok(cut >= 6, `the budget ended several of them (${cut})`);
  });

  it("alternatives share their request's budget: spent from the start, each ends with its first line with code", async () => {
    const spent: BudgetClock = { now: () => 1e9, startedAt: 0 };
    let checked = 0;
    for (const request of requests().slice(0, 6)) {
      const budgeted = { ...request, mode: 'hybrid' as const, timeBudgetMs: 1000 };
      const result = await session.alternatives(budgeted, 2, undefined, { budgetClock: spent });
      for (const alternative of result.completions) {
        const code = alternative.text.search(/\S/);
        if (code < 0) continue;
        checked++;
        assert.equal(alternative.text.indexOf('\n', code), -1, `one line with code: ${JSON.stringify(alternative.text)}`);
      }
    }
    assert.ok(checked >= 3, `alternatives checked (${checked})`);
  });
});
