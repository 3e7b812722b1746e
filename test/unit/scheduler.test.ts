// The worker's scheduler (src/worker/scheduler.ts) on a fake session: who runs next by priority
// (completion > alternatives > prefetch > next edit > warm-up), round robin across windows, supersede
// per window, the busy refusal of a prefetch, and never two generations of a lane at once (the
// session queues nothing). The integration tests drive the same rules through the real worker.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContextGate } from '../../src/inference/contextGate';
import type { InferenceSession } from '../../src/inference/inferenceSession';
import type { NextEditRequest, NextEditResult } from '../../src/nextEdit/types';
import type { AlternativesResult, CompletionRequest, LocalCompletionResult } from '../../src/shared/completion';
import { type Connection, emptyLanes, type LoadedModels, Scheduler } from '../../src/worker/scheduler';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A session whose generations end when the test says so (or at once when aborted); it records their order. */
function fakeSession() {
  const started: string[] = [];
  const pending = new Map<string, () => void>();
  let completions = 0;
  let maxCompletions = 0;
  const generation = <T>(name: string, signal: AbortSignal | undefined, result: () => T, counts = true): Promise<T> => {
    started.push(name);
    if (counts) maxCompletions = Math.max(maxCompletions, ++completions);
    return new Promise<T>((resolve) => {
      const end = () => {
        pending.delete(name);
        if (counts) completions--;
        resolve(result());
      };
      pending.set(name, end);
      // A real generation stops at its next step: at once when it starts already aborted.
      if (signal?.aborted) end();
      else signal?.addEventListener('abort', end, { once: true });
    });
  };
  const completion = (text: string): LocalCompletionResult => ({
    text,
    tokens: [],
    stats: { promptTokens: 0, reusedPromptTokens: 0, generatedTokens: 0, promptMs: 0, timeToFirstTokenMs: 0, totalMs: 1, stopReason: 'eos', speculation: { mode: 'plain' } as never },
  });
  const session = {
    gate: new ContextGate(),
    complete: (request: CompletionRequest, signal?: AbortSignal) => generation(request.prefix, signal, () => completion(request.prefix)),
    alternatives: (request: CompletionRequest, count: number, signal?: AbortSignal) => generation(`${request.prefix} ×${count}`, signal, () => ({ completions: [], limitedBy: 'count', totalMs: 1 })),
    warmUp: (signal?: AbortSignal) => generation('warm-up', signal, () => 1),
    nextEdits: { run: (request: NextEditRequest, signal?: AbortSignal) => generation(`next edit ${request.documentKey}`, signal, () => ({ edits: [] }) as unknown as NextEditResult, false) },
  };
  return {
    session: session as unknown as InferenceSession,
    started,
    /** Ends the generation named `name` (it must be running). */
    finish: async (name: string) => {
      const end = pending.get(name);
      assert.ok(end, `${name} is not running (running: ${[...pending.keys()].join(', ')})`);
      end();
      await tick();
      await tick();
    },
    running: () => [...pending.keys()],
    maxCompletions: () => maxCompletions,
  };
}

function setUp() {
  const fake = fakeSession();
  const entry: LoadedModels = { key: 'models', session: fake.session, loading: null, users: new Set(), lanes: emptyLanes() };
  const scheduler = new Scheduler(
    () => [entry],
    () => undefined,
  );
  let ids = 0;
  const window = (): Connection => {
    const connection = { id: ++ids, send: () => undefined, models: entry, documents: new Set(), pendingDocuments: [], jobs: { completion: null, nextEdit: null } } as unknown as Connection;
    entry.users.add(connection);
    return connection;
  };
  let requestId = 0;
  const complete = (connection: Connection, prefix: string, options: { prefetch?: boolean; alternatives?: number } = {}) =>
    // Either answer's fields, for the assertions (the request says which it is).
    scheduler.enqueueCompletion(connection, entry, ++requestId, { prefix, suffix: '', prefetch: options.prefetch } as CompletionRequest, options.alternatives) as Promise<
      LocalCompletionResult & AlternativesResult
    >;
  const nextEdit = (connection: Connection, key: string) => scheduler.enqueueNextEdit(connection, entry, ++requestId, { documentKey: key } as unknown as NextEditRequest, () => undefined);
  return { ...fake, entry, scheduler, window, complete, nextEdit, lastId: () => requestId };
}

describe('the worker scheduler', () => {
  it('runs one completion-lane job at a time: a real completion first, then alternatives, then a prefetch; the window that waited longest among equals', async () => {
    const s = setUp();
    const [a, b, c, d] = [s.window(), s.window(), s.window(), s.window()];
    const first = s.complete(a, 'a1');
    await tick();
    const alternatives = s.complete(b, 'b1', { alternatives: 2 });
    const cFirst = s.complete(c, 'c1');
    const dFirst = s.complete(d, 'd1');
    await tick();
    assert.deepEqual(s.running(), ['a1']);
    await s.finish('a1');
    assert.equal((await first).text, 'a1');
    await s.finish('c1');
    await s.finish('d1');
    await s.finish('b1 ×2');
    assert.deepEqual(s.started, ['a1', 'c1', 'd1', 'b1 ×2']);
    assert.equal((await cFirst).text, 'c1');
    assert.equal((await dFirst).text, 'd1');
    assert.equal((await alternatives).limitedBy, 'count');
    assert.equal(s.maxCompletions(), 1, 'never two at once');
  });

  it("a window's newer request supersedes its waiting one (answered at once, not run) and stops its running one; another window's is untouched", async () => {
    const s = setUp();
    const [a, b] = [s.window(), s.window()];
    const running = s.complete(a, 'a1');
    const other = s.complete(b, 'b1');
    const waiting = s.complete(a, 'a2');
    await tick();
    // a1 was running: stopped at its next step; the window's newest waits its turn.
    assert.equal((await running).text, 'a1');
    const newest = s.complete(a, 'a3');
    assert.equal((await waiting).stats.stopReason, 'abort', 'the superseded waiting one answers at once');
    await tick();
    await s.finish('b1');
    await s.finish('a3');
    assert.equal((await other).text, 'b1');
    assert.equal((await newest).text, 'a3');
    assert.deepEqual(s.started, ['a1', 'b1', 'a3']);
  });

  it('a prefetch is refused as busy while a real request is pending (a cancelled one does not count) and stopped by one that comes', async () => {
    const s = setUp();
    const [a, b] = [s.window(), s.window()];
    const real = s.complete(a, 'a1');
    const realId = s.lastId();
    assert.throws(
      () => s.complete(b, 'b prefetch', { prefetch: true }),
      (e: Error & { code?: string }) => e.code === 'busy',
    );
    s.scheduler.cancel(a, realId);
    await real;
    const prefetch = s.complete(b, 'b prefetch', { prefetch: true });
    await tick();
    assert.deepEqual(s.running(), ['b prefetch']);
    // A next edit outranks no prefetch: it waits; a real completion of another window stops it.
    const edit = s.nextEdit(a, 'doc');
    await tick();
    assert.deepEqual(s.running(), ['b prefetch', 'next edit doc'], 'the lanes run side by side');
    const again = s.complete(a, 'a2');
    assert.equal((await prefetch).text, 'b prefetch', 'stopped (the fake ends a generation at its abort)');
    await tick();
    assert.deepEqual(s.running(), ['next edit doc', 'a2']);
    await s.finish('a2');
    await s.finish('next edit doc');
    assert.equal((await again).text, 'a2');
    assert.deepEqual((await edit).edits, []);
  });

  it('a next edit does not start while a real completion waits; the warm-up gives way to any request', async () => {
    const s = setUp();
    const [a, b, c] = [s.window(), s.window(), s.window()];
    s.scheduler.warmUp(s.entry, s.session);
    await tick();
    assert.deepEqual(s.running(), ['warm-up']);
    const first = s.complete(c, 'c1');
    await tick();
    await tick();
    assert.deepEqual(s.running(), ['c1'], 'the warm-up stopped for it');
    const second = s.complete(a, 'a1');
    const edit = s.nextEdit(b, 'doc');
    await tick();
    assert.deepEqual(s.running(), ['c1'], 'the next edit waits while a real completion waits');
    await s.finish('c1');
    // Both lanes go on: the completion takes the context gate, the next edit parks between its evaluations.
    assert.deepEqual(s.running().sort(), ['a1', 'next edit doc']);
    await s.finish('a1');
    await s.finish('next edit doc');
    await Promise.all([first, second, edit]);
    assert.deepEqual(s.started.slice(0, 2), ['warm-up', 'c1']);
  });
});
