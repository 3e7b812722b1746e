// The time budget (draftline.timeBudgetMs): once spent, a completion ends with the line in progress.
// A fake clock decides when it is spent (no timing): what is kept is whole lines of the greedy
// completion, and its tokens are the greedy ones.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CompletionRequest } from '../../src/shared/completion';
import type { DecodeMode, Token } from '../../src/shared/decoding';
import { DraftModelProposer } from '../../src/speculation/draftModelProposer';
import { proposersFor } from '../../src/speculation/modeProposers';
import { NgramProposer } from '../../src/speculation/ngramProposer';
import { SpeculationPolicy } from '../../src/speculation/policy';
import { decode } from '../../src/speculation/speculativeDecoder';
import { requestStops, StopRules, type TimeBudget } from '../../src/stopping/stopRules';
import { findInSequence } from '../../src/ngram';
import { StatsCollector } from '../../src/stats/statsCollector';
import { statsReport } from '../../src/stats/statsReport';
import { DEFAULT_ENGINE_SETTINGS } from '../../src/settings/declaredSettings';
import { FakeEvaluator, hashModel } from '../support/fakeModel';

/** One character a token: token 0 is a newline, 1 a space, the rest letters. */
const CHARS = '\n abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789;(){}';
const detokenize = (tokens: readonly Token[]) => tokens.map((t) => CHARS[t]).join('');
const tokenize = (text: string): Token[] => [...text].map((c) => CHARS.indexOf(c));

/** A clock that moves one unit each time it is read: the budget is spent at the `spentAt`-th read. */
function readsClock(spentAt: number): TimeBudget & { reads: number } {
  const clock = { reads: 0, deadline: spentAt, now: () => ++clock.reads };
  return clock;
}

function rules(budget?: TimeBudget, maxTokens = 100): StopRules {
  return new StopRules({ detokenize, isEndToken: () => false, maxTokens, ...(budget ? { timeBudget: budget } : {}) });
}

/** Pushes `text` a token a character until the rules stop it; the decision and the text. */
function feed(stop: StopRules, text: string) {
  for (const token of tokenize(text)) if (stop.push(token)) break;
  return { reason: stop.decision?.reason, text: stop.finalText, tokens: stop.tokens.length };
}

describe('the time budget in the stop rules', () => {
  it('once spent, the line in progress is finished and the completion ends there', () => {
    // Spent at the 5th token ("d", the second line's second): that line is the last.
    const result = feed(rules(readsClock(5)), 'ab\ncd\nef\ngh');
    assert.deepEqual(result, { reason: 'timeBudget', text: 'ab\ncd', tokens: 6 });
  });

  it('the first line with code is always finished, even when the budget was spent before it began', () => {
    assert.deepEqual(feed(rules(readsClock(1)), '\n  foo(x);\n  bar();'), { reason: 'timeBudget', text: '\n  foo(x);', tokens: 11 });
  });

  it('spent just after a line ended: that line is the last, nothing of the next is waited for', () => {
    // Token 3 is the newline; the budget is found spent at token 4 ("c").
    assert.deepEqual(feed(rules(readsClock(4)), 'ab\ncdefgh\nij'), { reason: 'timeBudget', text: 'ab', tokens: 4 });
  });

  it('not spent: the completion is what it would be without a budget', () => {
    assert.deepEqual(feed(rules(readsClock(1000), 9), 'ab\ncd\nef\ngh'), { reason: 'maxTokens', text: 'ab\ncd\nef\n', tokens: 9 });
    assert.deepEqual(feed(rules(undefined, 9), 'ab\ncd\nef\ngh'), { reason: 'maxTokens', text: 'ab\ncd\nef\n', tokens: 9 });
  });

  it('an earlier stop of another rule wins (a single-line request ends at its newline)', () => {
    const stop = new StopRules({ detokenize, isEndToken: () => false, maxTokens: 100, singleLine: true, timeBudget: readsClock(1) });
    assert.deepEqual(feed(stop, 'abc\ndef'), { reason: 'newline', text: 'abc', tokens: 4 });
  });

  it("a request's budget starts when the backend takes it; 0 or none is no budget", () => {
    const request: CompletionRequest = { prefix: '', suffix: '', maxTokens: 8, mode: 'plain' };
    assert.equal(requestStops(request).timeBudget, undefined);
    assert.equal(requestStops({ ...request, timeBudgetMs: 0 }).timeBudget, undefined);
    const budget = requestStops({ ...request, timeBudgetMs: 1000 }, '', { now: () => 5_000, startedAt: 4_200 }).timeBudget;
    assert.equal(budget?.deadline, 5_200);
    assert.equal(budget?.now(), 5_000);
    assert.equal(requestStops({ ...request, timeBudgetMs: 1000 }, '', { now: () => 7_000 }).timeBudget?.deadline, 8_000, 'started now by default');
  });
});

describe('the time budget in speculative decoding: whole lines of the greedy completion', () => {
  // A model that writes lines: a newline every few tokens, decided by a hash of the last tokens.
  const lines = (seed: number) => {
    const h = hashModel(seed, CHARS.length - 1, 2);
    return (history: readonly Token[]): Token => {
      const x = h(history);
      return x % 7 === 0 ? 0 : 1 + (x % (CHARS.length - 2));
    };
  };

  async function run(mode: DecodeMode, model: (h: readonly Token[]) => Token, prompt: Token[], budget?: TimeBudget) {
    const stop = rules(budget, 60);
    const draft = new DraftModelProposer(new FakeEvaluator((h) => (h.length % 3 ? model(h) : (model(h) + 1) % CHARS.length)), 0);
    const ngram = new NgramProposer((history, maxLen) => {
      const m = findInSequence(history, { minN: 2, maxN: 6, maxLen });
      return m ? { tokens: m.tokens, matchLength: m.n } : null;
    });
    const policy = new SpeculationPolicy({ maxProposal: 6, ngramMinMatch: 2, ngramMaxMatch: 6, draftMinConfidence: 0, adaptive: false, lookahead: false });
    const stats = await decode({ mode, target: new FakeEvaluator(model), prompt, stop, policy, proposers: proposersFor(mode, [ngram, draft]) });
    return { tokens: [...stop.tokens], text: stop.finalText, reason: stats.stopReason };
  }

  it('every mode keeps a prefix of the greedy tokens, cut at a line end once the budget is spent', async () => {
    let cut = 0;
    for (const seed of [1, 2, 3, 4, 5]) {
      const model = lines(seed);
      const prompt = tokenize(`x${'abc'.repeat(seed)}`);
      const greedy = await run('plain', model, prompt);
      for (const spentAt of [1, 5, 12, 25]) {
        for (const mode of ['plain', 'ngram', 'draft', 'hybrid'] as const) {
          const budgeted = await run(mode, model, prompt, readsClock(spentAt));
          assert.deepEqual(budgeted.tokens, greedy.tokens.slice(0, budgeted.tokens.length), `${mode}, seed ${seed}, spent at ${spentAt}: the greedy tokens`);
          assert.ok(greedy.text.startsWith(budgeted.text), `${mode}: a beginning of the greedy text`);
          if (budgeted.reason === 'timeBudget') {
            cut++;
            assert.equal(greedy.text[budgeted.text.length], '\n', `${mode}, seed ${seed}: ends where a line of the greedy text ends`);
            assert.match(budgeted.text, /\S/, 'with code on a line');
          } else assert.equal(budgeted.text, greedy.text, 'not cut: the whole greedy completion');
        }
      }
    }
    assert.ok(cut >= 40, `the budget ended most of them (${cut})`);
  });
});

describe('the time budget in the settings and in Show Stats', () => {
  it('is on by default (draftline.timeBudgetMs), for a line or two at once on a slow machine', () => {
    assert.equal(DEFAULT_ENGINE_SETTINGS.timeBudgetMs, 1000);
  });

  it('Show Stats names it as the stop reason, and counts the completions it ended', () => {
    const stats = new StatsCollector();
    const decoded = (stopReason: 'timeBudget' | 'eos') => ({ promptTokens: 10, reusedPromptTokens: 0, generatedTokens: 12, promptMs: 5, timeToFirstTokenMs: 5, totalMs: 900, stopReason });
    stats.record({ at: 0, latencyMs: 1_000, fromCache: false, chars: 40, stats: decoded('eos') });
    stats.record({ at: 1, latencyMs: 1_100, fromCache: false, chars: 30, stats: decoded('timeBudget') });
    const report = statsReport(stats, 'plain', null);
    assert.match(report, /\| stop reason \| time budget: draftline\.timeBudgetMs spent, ended with the line in progress \|/);
    assert.match(report, /\| ended by the time budget \(draftline\.timeBudgetMs\) \| 1 of 2 computed \|/);
  });
});
