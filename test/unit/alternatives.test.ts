// Alternatives on demand (issue #32), the engine's part: the greedy suggestion the user already saw
// comes first and costs no model call; the backend's alternatives are post-processed like it and
// only those that read differently are offered; a keystroke cancels them; cycling back asks nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, distinctSuggestions, type EngineAlternatives, type EngineDocument, SkippedCompletion } from '../../src/engine/completionEngine';
import type { AlternativesResult, CompletionRequest, CompletionResult } from '../../src/shared/completion';

const result = (text: string, stopReason: 'eos' | 'abort' = 'eos'): CompletionResult => ({
  text,
  stats: { promptTokens: 1, reusedPromptTokens: 0, generatedTokens: 1, promptMs: 1, timeToFirstTokenMs: 1, totalMs: 1, stopReason },
});

class FakeBackend {
  completeCalls = 0;
  alternativesCalls: { request: CompletionRequest; count: number }[] = [];
  constructor(
    private readonly greedy: string,
    private readonly others: string[],
  ) {}
  async complete(): Promise<CompletionResult> {
    this.completeCalls++;
    return result(this.greedy);
  }
  async alternatives(request: CompletionRequest, count: number, signal?: AbortSignal): Promise<AlternativesResult> {
    this.alternativesCalls.push({ request, count });
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (signal?.aborted) return { completions: [], totalMs: 5 };
    return { completions: this.others.map((t) => result(t)), branch: { tokenIndex: 2, margin: 0.25 }, totalMs: 5 };
  }
}

function doc(text: string, offset = text.length): EngineDocument {
  return { uri: 'file:///a.ts', languageId: 'typescript', offset, length: text.length, tabSize: 2, insertSpaces: true, slice: (s, e) => text.slice(s, e) };
}

const SOURCE = 'function add(a: number, b: number) {\n  return ';

describe('CompletionEngine.alternatives', () => {
  it('offers the greedy suggestion first without computing it again, then the distinct alternatives', async () => {
    const backend = new FakeBackend('a + b;', ['a + b;   ', '', 'b + a;', 'a - b;', 'a * b;']);
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    const first = await engine.complete(doc(SOURCE));
    assert.ok(!(first instanceof SkippedCompletion) && first.text === 'a + b;');
    const alternatives = (await engine.alternatives(doc(SOURCE), 2)) as EngineAlternatives;
    assert.equal(backend.completeCalls, 1, 'the greedy one came from the cache');
    assert.equal(alternatives.greedy.fromCache, true);
    // The one that reads as the greedy one (trailing spaces aside) and the empty one are gone; two asked.
    assert.deepEqual(
      alternatives.items.map((i) => i.text),
      ['a + b;', 'b + a;', 'a - b;'],
    );
    assert.deepEqual(alternatives.branch, { tokenIndex: 2, margin: 0.25 });
    assert.equal(backend.alternativesCalls.length, 1);
    assert.equal(backend.alternativesCalls[0].count, 2);
    assert.equal(backend.alternativesCalls[0].request.prefix, SOURCE);
    assert.equal(engine.stats.alternatives.computed, 1);
  });

  it('post-processes the alternatives like the greedy one (the ")" the line already has is not repeated)', async () => {
    const backend = new FakeBackend('x)', ['y)', 'x)']);
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    const alternatives = (await engine.alternatives(doc('call()\n', 5), 2)) as EngineAlternatives;
    assert.deepEqual(
      alternatives.items.map((i) => [i.text, i.replaceSuffixChars]),
      [
        ['x', 0],
        ['y', 0],
      ],
    );
  });

  it('asks the backend once per cursor: cycling back is served from memory', async () => {
    const backend = new FakeBackend('a + b;', ['b + a;']);
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    assert.equal(engine.hasAlternatives(doc(SOURCE)), false);
    const a = (await engine.alternatives(doc(SOURCE))) as EngineAlternatives;
    assert.equal(engine.hasAlternatives(doc(SOURCE)), true, 'the editor shows no spinner for them');
    assert.equal(engine.hasAlternatives(doc(`${SOURCE}a`)), false);
    const b = (await engine.alternatives(doc(SOURCE))) as EngineAlternatives;
    assert.equal(backend.alternativesCalls.length, 1);
    assert.equal(a.fromCache, false);
    assert.equal(b.fromCache, true);
    assert.deepEqual(b.items, a.items);
    assert.equal(engine.stats.alternatives.asked, 2);
  });

  it('says so when the backend has one suggestion only', async () => {
    const backend = { complete: async () => result('a + b;') };
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    const alternatives = (await engine.alternatives(doc(SOURCE))) as EngineAlternatives;
    assert.deepEqual(
      alternatives.items.map((i) => i.text),
      ['a + b;'],
    );
    assert.match(alternatives.limitedBy!, /one suggestion/);
    assert.equal(engine.stats.alternatives.lastLimitedBy, alternatives.limitedBy);
  });

  it('a keystroke (the signal) cancels them, and nothing is remembered', async () => {
    const backend = new FakeBackend('a + b;', ['b + a;']);
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    await engine.complete(doc(SOURCE));
    const controller = new AbortController();
    const asked = engine.alternatives(doc(SOURCE), 2, controller.signal);
    setTimeout(() => controller.abort(), 1);
    const answer = await asked;
    assert.ok(answer instanceof SkippedCompletion && answer.reason === 'cancelled');
    await engine.alternatives(doc(SOURCE));
    assert.equal(backend.alternativesCalls.length, 2, 'the cancelled answer was not kept');
  });
});

describe('distinctSuggestions', () => {
  it('keeps the first of each text as the user would see it, drops empty ones, stops at max', () => {
    const s = (text: string) => ({ text, replaceSuffixChars: 0 });
    assert.deepEqual(
      distinctSuggestions([s('a')], [s('a\n'), s(''), s('b'), s('b  '), s('c'), s('d')], 3).map((x) => x.text),
      ['a', 'b', 'c'],
    );
    assert.deepEqual(
      distinctSuggestions([], [s(''), s('x')], 3).map((x) => x.text),
      ['x'],
    );
  });
});
