// Alternatives through the real inference worker (issue #32): the `alternatives` request of
// dist/worker.js on the tiny pair, scheduled as a completion of its window — a real request (a
// prefetch gives way to it), superseded by the window's next request (a keystroke) or its cancel,
// never by another window's — and LocalBackend.alternatives, what the engine calls.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LocalBackend } from '../../src/backend/localBackend';
import { ModelQuarantine } from '../../src/backend/modelQuarantine';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, type EngineAlternatives, type EngineDocument, SkippedCompletion } from '../../src/engine/completionEngine';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import type { AlternativesResult, CompletionRequest, LocalCompletionResult } from '../../src/shared/completion';
import { loadedWorker, ROOT, sharedWindows, tinyModels, WORKER, workerMissing } from '../support/tinyWorker';
import type { WorkerError } from '../../src/worker/workerClient';

const skip = workerMissing;
const MODELS = tinyModels();
const TMP = path.join(ROOT, 'test-output', 'alternatives-worker');
const SOURCE = 'export function sum(values: number[]): number {\n  let total = 0;\n  for (let i = 0; i < values.length; i';
const short = (prefix = SOURCE): CompletionRequest => ({ prefix, suffix: '\n}\n', maxTokens: 16, mode: 'hybrid' });
/** Long enough to still run when the next message arrives: no stop but the token budget. */
const long = (prefix: string, prefetch?: boolean): CompletionRequest => ({ prefix, suffix: '', maxTokens: 160, mode: 'plain', ...(prefetch ? { prefetch } : {}) });

/** Each alternative keeps the greedy tokens before the branch point and differs there. */
function assertBranches(result: AlternativesResult, greedy: LocalCompletionResult): void {
  assert.ok(result.branch, `a branch point (${result.limitedBy})`);
  const i = result.branch.tokenIndex;
  assert.ok(result.completions.length > 0, 'alternatives came back');
  for (const c of result.completions) {
    assert.ok(c.tokens, 'with their tokens');
    assert.deepEqual(c.tokens.slice(0, i), greedy.tokens.slice(0, i));
    assert.notEqual(c.tokens[i], greedy.tokens[i]);
    assert.notEqual(c.text, greedy.text);
  }
}

describe('alternatives in the worker', { skip }, () => {
  const worker = loadedWorker();

  it('come back for the completion the window just got, branching off its tokens', async () => {
    const greedy = await worker.client.request('complete', { request: short() });
    const result = await worker.client.request('alternatives', { request: short(), count: 2 });
    assertBranches(result, greedy);
    assert.ok(result.completions.length <= 2);
    assert.equal(new Set(result.completions.map((c) => c.text)).size, result.completions.length, 'distinct');
  });

  it("the window's next completion request (a keystroke) supersedes them; its own answer is whole", async () => {
    await worker.client.request('complete', { request: long('function fibonacci(n) {\n') });
    // Sent right after: the worker has them generating (or waiting) when the keystroke arrives.
    const alternatives = worker.client.request('alternatives', { request: long('function fibonacci(n) {\n'), count: 2 });
    const keystroke = worker.client.request('complete', { request: short() });
    const superseded = await alternatives;
    assert.equal(superseded.limitedBy, 'cancelled');
    assert.ok(superseded.completions.length < 2, `stopped before both were done (${superseded.completions.length})`);
    assert.notEqual((await keystroke).stats.stopReason, 'abort');
  });

  it('a cancel stops them', async () => {
    const controller = new AbortController();
    const alternatives = worker.client.request('alternatives', { request: long('class Queue {\n'), count: 2 }, controller.signal);
    controller.abort();
    assert.equal((await alternatives).limitedBy, 'cancelled');
  });

  it('they stop a running prefetch, and a prefetch waits for them (refused as busy)', async () => {
    const prefetch = worker.client.request('complete', { request: long('function fibonacci(n) {\n', true) });
    const alternatives = worker.client.request('alternatives', { request: short(), count: 2 });
    assert.equal((await prefetch).stats.stopReason, 'abort');
    const busy = worker.client.request('complete', { request: long('class Stack {\n', true) });
    await assert.rejects(busy, (e: WorkerError) => e.code === 'busy');
    const result = await alternatives;
    assert.equal(result.limitedBy, undefined);
    assert.ok(result.completions.length > 0);
  });
});

describe("alternatives in a shared worker: another window's requests neither stop them nor get their answer", { skip }, () => {
  const shared = sharedWindows();
  after(() => fs.rmSync(TMP, { recursive: true, force: true }));

  it('window B completes while window A asks for alternatives: each gets its own, whole', async () => {
    fs.rmSync(TMP, { recursive: true, force: true });
    fs.mkdirSync(TMP, { recursive: true });
    const client = shared.windowsOf('alt', 'alternatives');
    const a = client();
    const b = client();
    await a.request('load', { models: MODELS, speculation: DEFAULT_SPECULATION });
    const joined = await b.request('load', { models: MODELS, speculation: DEFAULT_SPECULATION });
    assert.equal(joined.sharedWith, 1, 'one loaded pair');
    const request = long('function fibonacci(n) {\n');
    const greedy = await a.request('complete', { request });
    const alone = await a.request('alternatives', { request, count: 2 });
    // Both in flight at once, on the same models (no waits: a loaded machine's timers could let one end first).
    const fromA = a.request('alternatives', { request, count: 2 });
    const fromB = b.request('complete', { request: short() });
    const [ra, rb] = await Promise.all([fromA, fromB]);
    assert.equal(ra.limitedBy, alone.limitedBy, "B's request did not cancel A's alternatives");
    assert.deepEqual(
      ra.completions.map((c) => c.tokens),
      alone.completions.map((c) => c.tokens),
    );
    assertBranches(ra, greedy);
    assert.ok('stats' in rb && rb.stats.stopReason !== 'abort' && !('completions' in rb), 'B got its own completion, after A');
    // A's keystroke supersedes A's alternatives only: B's running completion goes on.
    const runningB = b.request('complete', { request: long('class Queue {\n') });
    const altA = a.request('alternatives', { request, count: 2 });
    const keyA = a.request('complete', { request: short() });
    assert.equal((await altA).limitedBy, 'cancelled');
    assert.notEqual((await keyA).stats.stopReason, 'abort');
    assert.notEqual((await runningB).stats.stopReason, 'abort');
  });

  it("a window's completion does not wait behind another window's alternatives asked before it (issue #48)", async () => {
    fs.mkdirSync(TMP, { recursive: true });
    const client = shared.windowsOf('alt', 'alternatives-order');
    const [a, b, c] = [client(), client(), client()];
    for (const w of [a, b, c]) await w.request('load', { models: MODELS, speculation: DEFAULT_SPECULATION });
    const request = long('function fibonacci(n) {\n');
    await b.request('complete', { request });
    const ended: string[] = [];
    const note =
      (name: string) =>
      <T>(result: T): T => (ended.push(name), result);
    // A generates; B's alternatives wait, then C's completion comes: C goes first.
    const running = a.request('complete', { request: long('class Queue {\n') }).then(note('A complete'));
    const alternatives = b.request('alternatives', { request, count: 2 }).then(note('B alternatives'));
    const completion = c.request('complete', { request: short() }).then(note('C complete'));
    await Promise.all([running, alternatives, completion]);
    assert.deepEqual(ended, ['A complete', 'C complete', 'B alternatives']);
    assert.ok((await alternatives).completions.length > 0, 'the alternatives still came, after');
  });
});

describe('LocalBackend.alternatives under the engine', { skip }, () => {
  let backend: LocalBackend;
  before(async () => {
    fs.mkdirSync(TMP, { recursive: true });
    backend = new LocalBackend(
      { workerPath: WORKER, quarantine: new ModelQuarantine(path.join(TMP, `quarantine-${process.pid}.json`)), settings: async () => ({ models: MODELS, speculation: DEFAULT_SPECULATION }) },
      { log: () => undefined, onOutage: () => undefined, onRecovered: () => undefined, onResync: () => undefined },
    );
    await backend.load();
  });
  after(() => backend.dispose());

  it('the engine offers the greedy suggestion, then the distinct post-processed alternatives the worker computed', async () => {
    // No time budget: the alternatives are compared whole, however long the loaded machine takes.
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS, timeBudgetMs: 0 });
    const text = 'function clamp(value, min, max) {\n  if (value < min) return min;\n  if (value > max) return ';
    const doc: EngineDocument = { uri: 'file:///clamp.js', languageId: 'javascript', offset: text.length, length: text.length, tabSize: 2, insertSpaces: true, slice: (s, e) => text.slice(s, e) };
    const first = await engine.complete(doc);
    assert.ok(!(first instanceof SkippedCompletion));
    const answer = await engine.alternatives(doc, 2);
    assert.ok(!(answer instanceof SkippedCompletion), String(answer));
    const { items, branch, limitedBy } = answer as EngineAlternatives;
    assert.ok(branch, `a branch point (${limitedBy})`);
    if (first.text) assert.equal(items[0].text, first.text, 'the greedy one first');
    assert.ok(items.length >= 2, `${items.length} suggestions: ${JSON.stringify(items)} (${limitedBy})`);
    assert.equal(new Set(items.map((i) => i.text)).size, items.length, 'distinct');
    assert.equal(engine.stats.alternatives.computed, 1);
  });
});
