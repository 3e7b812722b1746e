// Prefetch after an accepted completion (issue 29): the completion at the cursor after the accept is
// computed before the editor asks, kept under the exact key the editor's next request has, and
// served from there without a model call or a debounce. It never delays a real request: a keystroke
// or a request elsewhere stops it at once, none starts while a real one runs, and the battery
// setting holds it back.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  CompletionEngine,
  DEFAULT_ENGINE_SETTINGS,
  documentAfterInsertion,
  type EngineDocument,
  type PrefetchWhileShown,
  prefetchWhileShownFor,
  SkippedCompletion,
  wastedPrefetches,
} from '../../src/engine/completionEngine';
import { DECLARATIONS } from '../../src/settings/declaredSettings';
import { statsReport } from '../../src/stats/statsReport';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import { embeddedPairPaths } from '../../src/models/embedded';
import { PowerMonitor, type PowerProbe, parsePmset, parseWin32BatteryStatus, readPowerSource } from '../../src/vscode/battery';
import type { CompletionRequest, CompletionResult } from '../../src/shared/completion';
import { WorkerClient, type WorkerError } from '../../src/worker/workerClient';

/** A backend whose every call waits until the test ends it (or its signal aborts it), answering `answer(request)`. */
class ScriptedBackend {
  readonly calls: { request: CompletionRequest; signal?: AbortSignal; finish(): void; aborted: boolean; abortedAt?: number }[] = [];

  constructor(private readonly answer: (request: CompletionRequest) => string) {}

  complete(request: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult> {
    return new Promise((resolve) => {
      const result = (text: string, stopReason: 'eos' | 'abort'): CompletionResult => ({
        text,
        stats: { promptTokens: 1, reusedPromptTokens: 0, generatedTokens: 1, promptMs: 1, timeToFirstTokenMs: 1, totalMs: 1, stopReason },
      });
      const call = {
        request,
        signal,
        aborted: false,
        abortedAt: undefined as number | undefined,
        finish: () => resolve(result(this.answer(request), 'eos')),
      };
      signal?.addEventListener('abort', () => {
        call.aborted = true;
        call.abortedAt = performance.now();
        resolve(result('', 'abort'));
      });
      this.calls.push(call);
    });
  }

  /** Ends the last call (after the engine had a turn to send it). */
  async finishLast(): Promise<void> {
    await tick();
    this.calls.at(-1)!.finish();
    await tick();
  }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

function textDocument(text: string, offset: number, uri = 'file:///a.ts'): EngineDocument {
  return { uri, languageId: 'typescript', offset, length: text.length, tabSize: 2, insertSpaces: true, slice: (s, e) => text.slice(s, e) };
}

/** The document the editor will have after inserting `inserted` at `offset`, as plain text: the reference for documentAfterInsertion. */
function inserted(text: string, offset: number, insertion: string, replaced = 0, uri?: string): EngineDocument {
  return textDocument(text.slice(0, offset) + insertion + text.slice(offset + replaced), offset + insertion.length, uri);
}

const SOURCE = `${Array.from({ length: 200 }, (_, i) => `const value${i} = compute(${i});`).join('\n')}\nfunction main() {\n  \n}\n`;
const CURSOR = SOURCE.indexOf('  \n}') + 2;

function engineWith(answer: (request: CompletionRequest) => string = () => 'return 1;') {
  const backend = new ScriptedBackend(answer);
  const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS, maxPrefixChars: 1000, maxSuffixChars: 200 });
  return { backend, engine };
}

describe('prefetch: the key is exactly the next request', () => {
  it('the document after an insertion reads like the edited text, slice by slice', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.nat(), fc.string({ maxLength: 20 }), fc.nat(5), fc.nat(), fc.nat(), (text, at, insertion, replaced, a, b) => {
        const offset = at % (text.length + 1);
        const reference = inserted(text, offset, insertion, replaced);
        const virtual = documentAfterInsertion(textDocument(text, offset), insertion, replaced);
        assert.equal(virtual.length, reference.length);
        assert.equal(virtual.offset, reference.offset);
        const start = a % (reference.length + 1);
        const end = start + (b % (reference.length - start + 1));
        assert.equal(virtual.slice(start, end), reference.slice(start, end));
      }),
    );
  });

  it('after an accept, the next request is served from the prefetch: no model call, no debounce', async () => {
    const { backend, engine } = engineWith();
    // The window slides when the cursor moves past maxPrefixChars: only the exact window hits.
    const accepted = 'x'.repeat(600);
    const after = inserted(SOURCE, CURSOR, accepted);
    assert.equal(await Promise.all([engine.prefetch(documentAfterInsertion(textDocument(SOURCE, CURSOR), accepted)), backend.finishLast()]).then(([o]) => o), 'ready');
    assert.equal(backend.calls.length, 1);
    assert.equal(backend.calls[0].request.prefetch, true, 'the backend is told it is a prefetch');
    let debounced = false;
    const result = await engine.complete(after, undefined, async () => {
      debounced = true;
    });
    assert.ok(!(result instanceof SkippedCompletion));
    assert.equal(result.text, 'return 1;');
    assert.equal(result.prefetched, true);
    assert.equal(result.prefetchedBy, 'accepted');
    assert.match(statsReport(engine.stats, engine.mode, null), /## Last completion\s+served from a prefetch \(made at the accept\) in /);
    assert.equal(backend.calls.filter((c) => !c.request.prefetch).length, 0, 'no model call of its own');
    assert.equal(debounced, false, 'a prefetched completion skips the debounce');
    assert.equal(engine.stats.prefetch.served, 1);
  });

  it('the same request one character off is not served from it', async () => {
    const { backend, engine } = engineWith();
    const prefetching = engine.prefetch(inserted(SOURCE, CURSOR, 'abc'));
    await backend.finishLast();
    assert.equal(await prefetching, 'ready');
    const elsewhere = engine.complete(inserted(SOURCE, CURSOR, 'ab'));
    await backend.finishLast();
    const result = await elsewhere;
    assert.ok(!(result instanceof SkippedCompletion));
    assert.equal(result.prefetched, false);
    assert.equal(backend.calls.length, 2);
  });

  it('a request that comes while its prefetch runs waits for it rather than asking again', async () => {
    const { backend, engine } = engineWith();
    const doc = inserted(SOURCE, CURSOR, 'let');
    const prefetching = engine.prefetch(doc);
    await tick();
    let debounced = false;
    const request = engine.complete(doc, undefined, async () => {
      debounced = true;
    });
    await backend.finishLast();
    const result = await request;
    assert.equal(await prefetching, 'ready');
    assert.ok(!(result instanceof SkippedCompletion));
    assert.equal(result.text, 'return 1;');
    assert.equal(backend.calls.filter((c) => !c.request.prefetch).length, 0, 'no model call of its own');
    assert.equal(debounced, false);
  });

  it('the editor asks in the same turn as the accept, while the battery check is still out: the request still waits for the prefetch', async () => {
    const { backend, engine } = engineWith();
    engine.prefetchBlocker = () => new Promise((resolve) => setTimeout(() => resolve(null), 5));
    const doc = inserted(SOURCE, CURSOR, 'let');
    const prefetching = engine.prefetch(doc);
    let debounced = false;
    const request = engine.complete(doc, undefined, async () => {
      debounced = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    await backend.finishLast();
    assert.equal(await prefetching, 'ready');
    const result = await request;
    assert.ok(!(result instanceof SkippedCompletion));
    assert.equal(result.prefetched, true);
    assert.equal(backend.calls.length, 1, 'one model call, the prefetch');
    assert.equal(backend.calls[0].aborted, false);
    assert.equal(debounced, false);
  });

  it('an empty prefetched completion answers the same request with no model call (only that exact one)', async () => {
    const { backend, engine } = engineWith(() => '');
    const doc = inserted(SOURCE, CURSOR, 'done();');
    const prefetching = engine.prefetch(doc);
    await backend.finishLast();
    assert.equal(await prefetching, 'ready');
    const result = await engine.complete(doc);
    assert.ok(!(result instanceof SkippedCompletion));
    assert.equal(result.text, '');
    assert.equal(backend.calls.length, 1);
    assert.equal(engine.stats.prefetch.served, 1);
    assert.equal(engine.stats.prefetch.shown, 0);
  });
});

describe('prefetch: it never delays a real request', () => {
  it('a keystroke stops it at once', async () => {
    const { backend, engine } = engineWith();
    const doc = inserted(SOURCE, CURSOR, 'let');
    const prefetching = engine.prefetch(doc);
    await tick();
    assert.equal(backend.calls.length, 1);
    engine.documentEdited(doc.uri, [{ offset: doc.offset, deleteCount: 0, text: ' ' }]);
    // Synchronously, in the keystroke's own turn: no timer, no await between the two.
    assert.equal(backend.calls[0].aborted, true, 'the backend call is aborted in the same turn');
    assert.equal(await prefetching, 'cancelled');
    assert.equal(engine.stats.prefetch.cancelled, 1);
    assert.equal(wastedPrefetches(engine.stats.prefetch), 1);
    assert.equal(engine.cache.size, 0, 'nothing cached from a cancelled prefetch');
  });

  it('a request elsewhere stops it before its own model call', async () => {
    const { backend, engine } = engineWith();
    const prefetching = engine.prefetch(inserted(SOURCE, CURSOR, 'let'));
    await tick();
    const real = engine.complete(textDocument(SOURCE, 10));
    assert.equal(await prefetching, 'cancelled');
    await backend.finishLast();
    const result = await real;
    assert.ok(!(result instanceof SkippedCompletion));
    assert.equal(backend.calls.length, 2);
    assert.equal(backend.calls[0].aborted, true);
    assert.equal(backend.calls[1].request.prefetch, undefined, 'the real request is an ordinary one');
  });

  it('none while a real request runs', async () => {
    const { backend, engine } = engineWith();
    const real = engine.complete(textDocument(SOURCE, 10));
    await tick();
    assert.equal(backend.calls.length, 1);
    assert.equal(await engine.prefetch(inserted(SOURCE, CURSOR, 'let')), 'busy');
    assert.equal(backend.calls.length, 1, 'no prefetch was sent');
    assert.equal(backend.calls[0].aborted, false, 'the real request goes on');
    await backend.finishLast();
    await real;
    assert.equal(engine.stats.prefetch.busy, 1);
  });

  it('at most one at a time: a newer prefetch replaces the running one', async () => {
    const { backend, engine } = engineWith();
    const first = engine.prefetch(inserted(SOURCE, CURSOR, 'a'));
    await tick();
    const second = engine.prefetch(inserted(SOURCE, CURSOR, 'b'));
    assert.equal(await first, 'cancelled');
    await backend.finishLast();
    assert.equal(await second, 'ready');
    assert.equal(backend.calls.filter((c) => !c.aborted).length, 1);
  });

  it('the worker refuses a prefetch as busy: counted, nothing breaks', async () => {
    const busy = { complete: () => Promise.reject(Object.assign(new Error('a completion is running'), { code: 'busy' })) };
    const engine = new CompletionEngine(busy, { ...DEFAULT_ENGINE_SETTINGS });
    assert.equal(await engine.prefetch(inserted(SOURCE, CURSOR, 'a')), 'busy');
    assert.equal(engine.stats.prefetch.busy, 1);
    assert.equal(engine.prefetchRunning, false);
  });
});

describe('prefetch: a chain of accepts', () => {
  it('a shown prefetched completion prefetches the one after it; accepting it keeps that prefetch, other typing stops it', async () => {
    let n = 0;
    const { backend, engine } = engineWith(() => `step${++n};`);
    const first = inserted(SOURCE, CURSOR, 'go();');
    const prefetching = engine.prefetch(first);
    await backend.finishLast();
    assert.equal(await prefetching, 'ready');
    const shown = await engine.complete(first);
    assert.ok(!(shown instanceof SkippedCompletion));
    assert.equal(shown.text, 'step1;');
    await tick();
    assert.equal(engine.prefetchRunning, true, 'the chain prefetch runs while the user reads the ghost text');
    // Tab: the shown text is inserted at the cursor; that edit keeps the chain prefetch.
    engine.documentEdited(first.uri, [{ offset: first.offset, deleteCount: 0, text: 'step1;' }]);
    assert.equal(backend.calls.at(-1)!.aborted, false);
    await backend.finishLast();
    const second = inserted(`${SOURCE.slice(0, CURSOR)}go();${SOURCE.slice(CURSOR)}`, CURSOR + 5, 'step1;');
    const next = await engine.complete(second);
    assert.ok(!(next instanceof SkippedCompletion));
    assert.equal(next.text, 'step2;');
    assert.equal(next.prefetched, true);
    assert.ok(
      backend.calls.every((c) => c.request.prefetch),
      'no model call but prefetches',
    );
    // The third one now runs; a keystroke that is not the accept stops it.
    assert.equal(engine.prefetchRunning, true);
    engine.documentEdited(first.uri, [{ offset: second.offset, deleteCount: 0, text: 'x' }]);
    assert.equal(backend.calls.at(-1)!.aborted, true);
    await tick();
    assert.deepEqual({ ...engine.stats.prefetch }, { started: 3, ready: 2, served: 2, shown: 2, cancelled: 1, busy: 0, blocked: 0, failed: 0 });
    assert.match(statsReport(engine.stats, engine.mode, null), /prefetches: started \/ served \(with ghost text\) \/ never shown \/ cancelled \| 3 \/ 2 \(2\) \/ 1 \/ 1 \|/);
  });
});

describe('prefetch: while a ghost text is shown (the first accept of a chain)', () => {
  /** An engine with `whileShown`, after the model computed the ghost text at CURSOR (the backend answers `answer`). */
  async function shownAtCursor(whileShown: PrefetchWhileShown, answer: (request: CompletionRequest) => string) {
    const { backend, engine } = engineWith(answer);
    engine.prefetchWhileShown = () => whileShown;
    const doc = textDocument(SOURCE, CURSOR);
    const asked = engine.complete(doc);
    await backend.finishLast();
    return { backend, engine, doc, shown: await asked };
  }
  const counted = () => {
    let n = 0;
    return () => `step${++n};`;
  };

  it('a ghost text the model just computed prefetches the one after it; the Tab is then served with no model call', async () => {
    const { backend, engine, doc, shown } = await shownAtCursor('all', counted());
    assert.ok(!(shown instanceof SkippedCompletion));
    assert.equal(shown.text, 'step1;');
    assert.equal(engine.prefetchRunning, true, 'computed while the user reads the ghost text');
    assert.equal(backend.calls.at(-1)!.request.prefetch, true);
    assert.ok(backend.calls.at(-1)!.request.prefix.endsWith('function main() {\n  step1;'), 'at the cursor after the ghost text');
    // Tab: the accept's edit keeps it, and the editor's request at the new cursor is served from it.
    engine.documentEdited(doc.uri, [{ offset: CURSOR, deleteCount: 0, text: 'step1;' }]);
    assert.equal(backend.calls.at(-1)!.aborted, false);
    await backend.finishLast();
    const next = await engine.complete(inserted(SOURCE, CURSOR, 'step1;'));
    assert.ok(!(next instanceof SkippedCompletion));
    assert.equal(next.text, 'step2;');
    assert.equal(next.prefetched, true);
    assert.equal(next.prefetchedBy, 'shown', 'made while the ghost text before it was shown');
    // Show Stats says the same as the log (it said "computed after the accepted completion before it").
    assert.match(statsReport(engine.stats, engine.mode, null), /## Last completion\s+served from a prefetch \(made while the ghost text before it was shown\) in /);
    assert.equal(backend.calls.filter((c) => !c.request.prefetch).length, 1, 'one model call in all: the first ghost text');
  });

  it("typing the ghost text's first characters keeps the prefetch; the accept of the rest is served from it", async () => {
    const { backend, engine, doc } = await shownAtCursor('all', counted());
    const prefetch = backend.calls.at(-1)!;
    // The user types "st": the editor asks again and the cache serves the rest ("ep1;").
    engine.documentEdited(doc.uri, [{ offset: CURSOR, deleteCount: 0, text: 's' }]);
    engine.documentEdited(doc.uri, [{ offset: CURSOR + 1, deleteCount: 0, text: 't' }]);
    const rest = await engine.complete(inserted(SOURCE, CURSOR, 'st'));
    assert.ok(!(rest instanceof SkippedCompletion));
    assert.equal(rest.text, 'ep1;');
    assert.equal(prefetch.aborted, false, 'typing the ghost text is not a reason to stop');
    assert.equal(backend.calls.length, 2, 'the cache hit asks for no second prefetch of the same place');
    // Tab takes the rest: the prefetch is what the editor asks for next.
    engine.documentEdited(doc.uri, [{ offset: CURSOR + 2, deleteCount: 0, text: 'ep1;' }]);
    assert.equal(prefetch.aborted, false);
    await backend.finishLast();
    const next = await engine.complete(inserted(SOURCE, CURSOR, 'step1;'));
    assert.ok(!(next instanceof SkippedCompletion));
    assert.equal(next.prefetched, true);
    assert.equal(next.text, 'step2;');
  });

  it('a keystroke that does not type the ghost text stops it; with "prefetched" only a prefetched ghost text prefetches', async () => {
    const { backend, engine, doc } = await shownAtCursor('all', () => 'step;');
    engine.documentEdited(doc.uri, [{ offset: CURSOR, deleteCount: 0, text: 'x' }]);
    assert.equal(backend.calls.at(-1)!.aborted, true);
    await tick();
    assert.equal(engine.prefetchRunning, false);

    const other = await shownAtCursor('prefetched', () => 'step;');
    assert.equal(other.engine.prefetchRunning, false);
    assert.equal(other.backend.calls.length, 1);
  });

  it('"auto" is every shown ghost text with in-process models, only a chain with a server', () => {
    assert.equal(prefetchWhileShownFor('auto', 'local'), 'all');
    for (const server of ['llama-server', 'openai-compatible', 'ollama'] as const) assert.equal(prefetchWhileShownFor('auto', server), 'prefetched');
    assert.equal(prefetchWhileShownFor('all', 'ollama'), 'all');
    assert.equal(prefetchWhileShownFor('chain', 'local'), 'prefetched');
    const d = DECLARATIONS['draftline.prefetch.whileShown']!;
    assert.equal(d.scope, 'machine');
    assert.equal(d.default, 'auto');
    assert.deepEqual(d.enum, ['auto', 'all', 'chain']);
  });
});

describe('prefetch: settings and battery', () => {
  it('turned off, or held back by the battery check: nothing is sent', async () => {
    const { backend, engine } = engineWith();
    engine.settings = { ...engine.settings, prefetch: false };
    assert.equal(await engine.prefetch(inserted(SOURCE, CURSOR, 'a')), 'blocked');
    engine.settings = { ...engine.settings, prefetch: true };
    engine.prefetchBlocker = async () => 'on battery';
    assert.equal(await engine.prefetch(inserted(SOURCE, CURSOR, 'a')), 'blocked');
    assert.equal(backend.calls.length, 0);
    assert.equal(engine.stats.prefetch.blocked, 2);
  });

  it('both settings are declared machine-scoped and on by default', () => {
    for (const key of ['prefetch.enabled', 'prefetch.pauseOnBattery']) {
      const d = DECLARATIONS[`draftline.${key}`]!;
      assert.equal(d.scope, 'machine', key);
      assert.equal(d.default, true, key);
    }
    assert.equal(DEFAULT_ENGINE_SETTINGS.prefetch, true);
  });

  const linux = (files: Record<string, string>): PowerProbe => ({
    platform: 'linux',
    listDir: async (dir) => [...new Set(Object.keys(files).map((f) => f.slice(dir.length + 1).split('/')[0]))],
    readText: async (file) => files[file] ?? null,
    run: async () => null,
  });
  const sys = (name: string, values: Record<string, string>) => Object.fromEntries(Object.entries(values).map(([k, v]) => [`/sys/class/power_supply/${name}/${k}`, v]));

  it('Linux: an online adapter is AC, a discharging system battery is battery, a mouse battery is neither, nothing is unknown', async () => {
    assert.equal(await readPowerSource(linux({ ...sys('AC', { type: 'Mains', online: '1' }), ...sys('BAT0', { type: 'Battery', status: 'Charging' }) })), 'ac');
    assert.equal(await readPowerSource(linux({ ...sys('AC', { type: 'Mains', online: '0' }), ...sys('BAT0', { type: 'Battery', status: 'Discharging' }) })), 'battery');
    assert.equal(await readPowerSource(linux({ ...sys('ucsi-source-psy-USBC000:001', { type: 'USB', online: '1' }), ...sys('BAT0', { type: 'Battery', status: 'Discharging' }) })), 'ac');
    assert.equal(await readPowerSource(linux(sys('hidpp_battery_0', { type: 'Battery', scope: 'Device', status: 'Discharging' }))), 'unknown');
    assert.equal(await readPowerSource(linux({})), 'unknown');
  });

  it('macOS pmset and Windows Win32_Battery outputs', async () => {
    assert.equal(parsePmset("Now drawing from 'Battery Power'\n -InternalBattery-0 (id=1234)\t85%; discharging; 4:12 remaining present: true"), 'battery');
    assert.equal(parsePmset("Now drawing from 'AC Power'\n -InternalBattery-0 (id=1234)\t100%; charged; 0:00 remaining present: true"), 'ac');
    assert.equal(parsePmset(''), 'unknown');
    assert.equal(parseWin32BatteryStatus('1\r\n'), 'battery');
    assert.equal(parseWin32BatteryStatus('2\r\n'), 'ac');
    assert.equal(parseWin32BatteryStatus(''), 'unknown');
    const mac: PowerProbe = { platform: 'darwin', listDir: async () => [], readText: async () => null, run: async () => "Now drawing from 'Battery Power'" };
    assert.equal(await readPowerSource(mac), 'battery');
    const failing: PowerProbe = { ...mac, platform: 'win32', run: async () => null };
    assert.equal(await readPowerSource(failing), 'unknown');
  });

  it('the monitor reads once a minute at most', async () => {
    let reads = 0;
    let clock = 0;
    const probe: PowerProbe = { platform: 'darwin', listDir: async () => [], readText: async () => null, run: async () => (reads++, "Now drawing from 'Battery Power'") };
    const monitor = new PowerMonitor(probe, 60_000, () => clock);
    assert.equal(await monitor.onBattery(), true);
    clock = 59_000;
    assert.equal(await monitor.onBattery(), true);
    assert.equal(reads, 1);
    clock = 61_000;
    await monitor.onBattery();
    assert.equal(reads, 2);
  });
});

const ROOT = path.resolve(__dirname, '../..');
const WORKER = path.join(ROOT, 'dist/worker.js');

describe('prefetch in the worker: it yields to every real request', { skip: fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs`' }, () => {
  let client: WorkerClient;
  before(async () => {
    client = new WorkerClient({ workerPath: WORKER, env: { DRAFTLINE_WARM_UP: '0' } });
    const tiny = embeddedPairPaths(ROOT, 'tiny');
    await client.request('load', {
      models: { targetModel: tiny.target, draftModel: tiny.draft, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 2048 },
      speculation: DEFAULT_SPECULATION,
    });
  });
  after(() => client.dispose());

  // Long enough to still run when the next message arrives: no stop but the token budget (the tiny
  // target's context is 256 tokens).
  const long = (prefix: string, prefetch?: boolean): CompletionRequest => ({ prefix, suffix: '', maxTokens: 128, mode: 'plain', ...(prefetch ? { prefetch } : {}) });

  it('a prefetch sent while a real completion runs is refused as busy, and the real one is not stopped', async () => {
    const real = client.request('complete', { request: long('function fibonacci(n) {\n') });
    const prefetch = client.request('complete', { request: long('class Queue {\n', true) });
    await assert.rejects(prefetch, (e: WorkerError) => e.code === 'busy');
    const result = await real;
    assert.notEqual(result.stats.stopReason, 'abort');
  });

  it('a real completion already cancelled (by the keystroke before) does not hold a prefetch back', async () => {
    const controller = new AbortController();
    const real = client.request('complete', { request: long('function fibonacci(n) {\n') }, controller.signal);
    controller.abort();
    const prefetch = await client.request('complete', { request: { ...long('class Queue {\n', true), maxTokens: 8 } });
    assert.notEqual(prefetch.stats.stopReason, 'abort');
    assert.equal((await real).stats.stopReason, 'abort');
  });

  it('a real completion stops a running prefetch', async () => {
    // Sent right after it: the worker registers the prefetch before it reads the next message.
    const prefetch = client.request('complete', { request: long('function fibonacci(n) {\n', true) });
    const real = client.request('complete', { request: { ...long('class Queue {\n'), maxTokens: 8 } });
    assert.equal((await prefetch).stats.stopReason, 'abort');
    assert.notEqual((await real).stats.stopReason, 'abort');
  });
});
