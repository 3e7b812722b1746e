// Show Stats' alternatives section and the log line per alternatives answer (issue #32): what the
// user cycled through, how long the alternatives took, and why there were fewer than three.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, type EngineAlternatives, type EngineDocument } from '../../src/engine/completionEngine';
import { describeAlternatives, statsReport } from '../../src/stats/statsReport';
import type { AlternativesResult, CompletionResult } from '../../src/shared/completion';

const result = (text: string): CompletionResult => ({
  text,
  stats: { promptTokens: 1, reusedPromptTokens: 0, generatedTokens: 1, promptMs: 1, timeToFirstTokenMs: 1, totalMs: 1, stopReason: 'eos' },
});

const SOURCE = 'function add(a: number, b: number) {\n  return ';
const doc = (text: string): EngineDocument => ({ uri: 'file:///a.ts', languageId: 'typescript', offset: text.length, length: text.length, slice: (s, e) => text.slice(s, e) });

/** An engine whose clock advances `stepMs` per reading, over a backend with fixed alternatives. */
function engineWith(others: string[] | null, limitedBy?: string, stepMs = 10) {
  let clock = 0;
  const backend = {
    complete: async () => result('a + b;'),
    ...(others ? { alternatives: async (): Promise<AlternativesResult> => ({ completions: others.map(result), branch: { tokenIndex: 1, margin: 0.5 }, limitedBy, totalMs: 1 }) } : {}),
  };
  return new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS }, { now: () => (clock += stepMs) });
}

describe('Show Stats: alternatives', () => {
  it('has no alternatives section before the user asks for any', async () => {
    const engine = engineWith(['b + a;']);
    await engine.complete(doc(SOURCE));
    assert.doesNotMatch(statsReport(engine.stats, 'hybrid', null), /Alternatives/);
  });

  it('says how often they were asked and computed, how many were offered and how long they took, after the session figures', async () => {
    const engine = engineWith(['b + a;', 'a - b;']);
    await engine.alternatives(doc(SOURCE), 2);
    await engine.alternatives(doc(SOURCE), 2); // cycling back: served from memory
    const report = statsReport(engine.stats, 'hybrid', null);
    assert.match(report, /\| asked \(computed; the rest served again\) \| 2 \(1\) \|/);
    assert.match(report, /\| suggestions offered, mean \(the greedy one included\) \| 3\.0 \|/);
    const mean = engine.stats.alternatives.totalMs / engine.stats.alternatives.computed;
    assert.ok(mean > 0);
    assert.match(report, new RegExp(`\\| time to the alternatives, mean \\| ${Math.round(mean)} ms \\|`));
    assert.doesNotMatch(report, /fewer than asked/);
    assert.ok(report.indexOf('## Alternatives') > report.indexOf('## Session'), 'after the session figures');
  });

  it("says why there was one suggestion only: a backend without alternatives, or the backend's own reason", async () => {
    const none = engineWith(null);
    await none.alternatives(doc(SOURCE), 2);
    assert.match(statsReport(none.stats, 'hybrid', null), /\| fewer than asked, last time, because \| this backend computes one suggestion only \|/);
    const ollama = engineWith([], 'this Ollama server reports no token probabilities');
    await ollama.alternatives(doc(SOURCE), 2);
    const report = statsReport(ollama.stats, 'hybrid', null);
    assert.match(report, /\| suggestions offered, mean \(the greedy one included\) \| 1\.0 \|/);
    assert.match(report, /because \| this Ollama server reports no token probabilities \|/);
  });
});

describe('the log line per alternatives answer', () => {
  it('says how many, in how many ms, where they branch and why fewer', async () => {
    const engine = engineWith(['b + a;'], 'only 1 alternative token above the greedy one');
    const answer = (await engine.alternatives(doc(SOURCE), 2)) as EngineAlternatives;
    assert.equal(
      describeAlternatives(answer),
      `alternatives: 2 suggestions in ${Math.round(answer.latencyMs)} ms, branching at token 1 (top-2 margin 0.50); fewer than asked: only 1 alternative token above the greedy one`,
    );
    const again = (await engine.alternatives(doc(SOURCE), 2)) as EngineAlternatives;
    assert.match(describeAlternatives(again), /^alternatives: 2 suggestions served again \(computed earlier at this cursor\), branching/);
    assert.equal(describeAlternatives({ items: [{ text: 'x', replaceSuffixChars: 0 }], fromCache: false, latencyMs: 3.4 }), 'alternatives: 1 suggestion in 3 ms');
  });
});
