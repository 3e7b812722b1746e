// The server backends (src/remote/) against a scripted HTTP server (test/support/stubServer.ts)
// replaying what llama-server, vLLM and Ollama send (test/fixtures/remote/: llama-server's captured
// from a real server, vLLM's and Ollama's reconstructed from their source and docs): what load()
// says, what each request carries, how streams are read through the stop rules, every failure's
// ServerError code, outages and recovery, cancellation that closes the connection, and the engine
// on top of it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import type { BackendEvents } from '../../src/backend/backend';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, type EngineDocument } from '../../src/engine/completionEngine';
import { ServerError, type ServerErrorCode } from '../../src/remote/http';
import type { ServerKind } from '../../src/remote/serverApi';
import type { ServerBackend, ServerBackendDeps } from '../../src/remote/serverBackend';
import { createServerBackend, serverApiKeyName } from '../../src/remote/servers';
import type { BackendSettings } from '../../src/shared/settings';
import type { CompletionRequest } from '../../src/shared/completion';
import { splitTrailingBlank } from '../../src/prompt/fimPrompt';
import { requestStops, StopRules } from '../../src/stopping/stopRules';
import { drop, fixture, fixtureJson, hang, json, jsonFixture, type RecordedRequest, replay, type Reply, type Route, stream, StubServer } from '../support/stubServer';

const PREFIX = 'export function add(a: number, b: number): number {\n  return ';
const SUFFIX = ';\n}\n';
/** PREFIX as every API sends it: its trailing space stays out of the prompt, as on the local path (splitTrailingBlank). */
const SENT_PREFIX = 'export function add(a: number, b: number): number {\n  return';
/**
 * The Qwen2.5-Coder template as text, line-anchored as the local path lays it out: the middle starts
 * at the newline that opens the cursor's group of lines (here the window's first newline).
 */
const QWEN_ANCHORED = '<|fim_prefix|>export function add(a: number, b: number): number {<|fim_suffix|>;\n}\n<|fim_middle|>\n  return';
const EXTRA = { files: [{ path: 'src/math.ts', text: 'export const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);\n' }], path: 'src/add.ts', repoName: 'demo', maxTokens: 256 };

function request(overrides: Partial<CompletionRequest> = {}): CompletionRequest {
  return { prefix: PREFIX, suffix: SUFFIX, maxTokens: 24, mode: 'plain', languageId: 'typescript', ...overrides };
}

// ---------------------------------------------------------------------------------------------
// Harness: every stub and backend a test makes is closed after it.

const stubs: StubServer[] = [];
const backends: ServerBackend[] = [];

afterEach(async () => {
  for (const b of backends.splice(0)) b.dispose();
  await Promise.all(stubs.splice(0).map((s) => s.close()));
});

async function startStub(routes: Record<string, Route>, port = 0): Promise<StubServer> {
  const stub = await StubServer.start(routes, port);
  stubs.push(stub);
  return stub;
}

interface Recorder {
  events: BackendEvents;
  logs: string[];
  outages: number;
  recoveries: number;
  /** Resolves at the next onRecovered. */
  recovered(timeoutMs?: number): Promise<void>;
}

function recorder(): Recorder {
  const waiting: (() => void)[] = [];
  const r: Recorder = {
    logs: [],
    outages: 0,
    recoveries: 0,
    events: {
      log: (level, message) => void r.logs.push(`${level}: ${message}`),
      onOutage: () => void r.outages++,
      onRecovered: () => {
        r.recoveries++;
        for (const w of waiting.splice(0)) w();
      },
      onResync: () => undefined,
    },
    recovered: (timeoutMs = 3000) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no onRecovered within ${timeoutMs} ms`)), timeoutMs);
        waiting.push(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
  return r;
}

interface Made {
  backend: ServerBackend;
  rec: Recorder;
  /** deps.sleep's waits (instant). */
  sleeps: number[];
  /** The endpoints the API key was asked for. */
  keyAsked: URL[];
}

function makeBackend(kind: ServerKind, endpoint: string, options: { settings?: Partial<BackendSettings>; key?: string; deps?: Partial<ServerBackendDeps> } = {}): Made {
  const rec = recorder();
  const sleeps: number[] = [];
  const keyAsked: URL[] = [];
  const settings: BackendSettings = { kind, endpoint, model: '', caFile: '', timeoutMs: 2000, sendExtraContext: false, sharedWorker: false, ...options.settings };
  const backend = createServerBackend(
    settings,
    {
      apiKey: async (url) => {
        keyAsked.push(url);
        return options.key;
      },
      sleep: async (ms) => void sleeps.push(ms),
      firstOutageMs: 20,
      maxOutageMs: 40,
      ...options.deps,
    },
    rec.events,
  );
  backends.push(backend);
  return { backend, rec, sleeps, keyAsked };
}

/** A rejection with this ServerError code (and message). */
async function rejectsWith(promise: Promise<unknown>, code: ServerErrorCode, message?: RegExp): Promise<ServerError> {
  let caught: unknown;
  await assert.rejects(promise, (e: unknown) => {
    caught = e;
    return true;
  });
  assert.ok(caught instanceof ServerError, `expected a ServerError, got ${String(caught)}`);
  assert.equal(caught.code, code, `code of: ${caught.message}`);
  if (message) assert.match(caught.message, message);
  return caught;
}

async function waitFor(condition: () => boolean, timeoutMs = 3000, what = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A port with nothing listening on it (one a stub had a moment ago). */
async function freePort(): Promise<number> {
  const stub = await StubServer.start();
  const port = stub.port;
  await stub.close();
  return port;
}

function sse(objects: unknown[], done = false): string {
  return objects.map((o) => `data: ${JSON.stringify(o)}\n\n`).join('') + (done ? 'data: [DONE]\n\n' : '');
}

/** The texts of a recorded stream's content events. */
function infillTexts(name: string): string[] {
  return fixture(name)
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => (JSON.parse(e.slice(6)) as { content: string }).content);
}

// ---------------------------------------------------------------------------------------------
// llama-server

const LLAMA = 'llama-server';
const INFILL_TEXT = infillTexts(`${LLAMA}/infill-stream.sse`).join('');
const INFILL_EVENTS = infillTexts(`${LLAMA}/infill-stream.sse`).length;
/** The final chunk of the draft server's stream (timings with draft_n / draft_n_accepted). */
const DRAFT_FINAL = JSON.parse(fixture(`${LLAMA}/infill-draft-stream.sse`).trim().split('\n\n').at(-1)!.slice(6)) as Record<string, unknown> & { timings: Record<string, number> };

/** llama-server's routes: /health, /props, /infill (the check answered as not streamed, completions as `stream`). */
function llamaRoutes(stream: Reply | Reply[] | ((r: RecordedRequest) => Reply) = replay(`${LLAMA}/infill-stream.sse`), extra: Record<string, Route> = {}): Record<string, Route> {
  let completions = 0;
  return {
    'GET /health': jsonFixture(200, `${LLAMA}/health.json`),
    'GET /props': jsonFixture(200, `${LLAMA}/props.json`),
    'POST /infill': (r) => {
      if (!r.json?.stream) return jsonFixture(200, `${LLAMA}/infill.json`);
      if (typeof stream === 'function') return stream(r);
      return Array.isArray(stream) ? stream[Math.min(completions++, stream.length - 1)]! : stream;
    },
    ...extra,
  };
}

/** The streamed completion requests a llama-server stub got (not the load's check). */
const infillCalls = (stub: StubServer) => stub.to('/infill', 'POST').filter((r) => r.json?.stream === true);

describe('llama-server backend', () => {
  it('load() describes the server: model name from /props, its context size and build, after /health and an /infill check', async () => {
    const stub = await startStub(llamaRoutes());
    const { backend } = makeBackend('llama-server', stub.url);
    const info = await backend.load();
    assert.equal(info.kind, 'llama-server');
    assert.equal(info.model, 'tiny-code-target.gguf');
    assert.equal(info.remote?.contextSize, 256);
    assert.equal(info.remote?.server, 'llama-server b1-de3ff81');
    assert.equal(info.remote?.endpoint, `${stub.url}/`);
    // No /slots route (404): no draft model claimed.
    assert.equal(info.remote?.speculation, null);
    assert.match(info.remote?.promptFormat ?? '', /^\/infill/);
    assert.doesNotMatch(info.remote?.promptFormat ?? '', /input_extra/);
    // The /infill check, then /tokenize to read the vocabulary (this stub has none: /infill it is, checked again).
    assert.deepEqual(
      stub.requests.map((r) => `${r.method} ${r.path}`),
      ['GET /health', 'GET /props', 'GET /slots', 'POST /infill', 'POST /tokenize', 'POST /infill'],
    );
    const check = stub.to('/infill')[0]!.json;
    assert.equal(check.n_predict, 0);
    assert.notEqual(check.stream, true);
  });

  it('/slots with a speculative slot: load() says the server drafts with a second model', async () => {
    const stub = await startStub(llamaRoutes(undefined, { 'GET /slots': json(200, [{ id: 0, speculative: true }]) }));
    const info = await makeBackend('llama-server', stub.url).backend.load();
    assert.match(info.remote?.speculation ?? '', /draft model/);
  });

  it("complete() returns the streamed text joined, with the server's figures, and sends a greedy cached streamed /infill", async () => {
    const stub = await startStub(llamaRoutes());
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const result = await backend.complete(request());
    assert.equal(result.text, INFILL_TEXT);
    assert.equal(result.text, '\n    return this;\n}\nexport function scheduled(1, b) {\n    return this._sched');
    const s = result.stats;
    assert.equal(s.promptTokens, 22);
    assert.equal(s.reusedPromptTokens, 21);
    assert.equal(s.generatedTokens, 24);
    assert.equal(s.serverTokensPerSecond, 2025.004402183483);
    assert.equal(s.stopReason, 'maxTokens'); // stop_type "limit"
    assert.equal(s.serverDraft, undefined); // no draft_n: the server has no draft model
    assert.ok(s.totalMs >= 0 && s.timeToFirstTokenMs <= s.totalMs);

    const [call] = infillCalls(stub);
    assert.ok(call);
    const body = call.json;
    assert.equal(body.input_prefix, SENT_PREFIX);
    assert.equal(body.input_suffix, SUFFIX);
    assert.equal(body.temperature, 0);
    assert.equal(body.top_k, 1);
    assert.equal(body.cache_prompt, true);
    assert.equal(body.stream, true);
    assert.equal(body.n_predict, 24);
    assert.equal(body.stop, undefined);
    assert.equal(call.headers['content-type'], 'application/json');
    // The server's answer ran to its end: nothing cut it short.
    assert.equal(await call.ended, false);
    assert.equal(call.eventsSent, INFILL_EVENTS);
  });

  it("n_predict never exceeds half the server's context", async () => {
    const stub = await startStub(llamaRoutes());
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    await backend.complete(request({ maxTokens: 500 }));
    assert.equal(infillCalls(stub)[0]!.json.n_predict, 128); // n_ctx 256
  });

  it('singleLine: cut at the first newline, "\\n" sent as a stop, and the connection closed before the server is done', async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-stream.sse`, { delayMs: 20 })));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const started = Date.now();
    const result = await backend.complete(request({ singleLine: true }));
    // The fixture's first token is "\n": nothing before it.
    assert.equal(result.text, '');
    assert.equal(result.stats.stopReason, 'newline');
    assert.equal(result.stats.generatedTokens, 1);
    assert.ok(Date.now() - started < 20 * INFILL_EVENTS, 'did not wait for the rest of the stream');
    const [call] = infillCalls(stub);
    assert.deepEqual(call!.json.stop, ['\n']);
    assert.equal(await call!.ended, true, 'the client closed the connection');
    assert.ok(call!.eventsSent < INFILL_EVENTS, `the server stopped early (${call!.eventsSent} of ${INFILL_EVENTS} events)`);
  });

  it('maxLines: cut at the second line end, the rest of the stream not read', async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-stream.sse`, { delayMs: 10 })));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const result = await backend.complete(request({ maxLines: 2 }));
    assert.equal(result.text, '\n    return this;');
    assert.equal(result.stats.stopReason, 'maxLines');
    assert.equal(result.stats.generatedTokens, 5); // the pieces read, not the server's predicted_n
    assert.equal(await infillCalls(stub)[0]!.ended, true);
  });

  it('the time budget: once spent, the stream ends with the line in progress and the connection closes', async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-stream.sse`, { delayMs: 10 })));
    // A clock that moves 400 ms each time it is read: the 1000 ms budget is spent within the first line.
    let t = 0;
    const { backend } = makeBackend('llama-server', stub.url, { deps: { now: () => (t += 400) } });
    await backend.load();
    const result = await backend.complete(request({ timeBudgetMs: 1000 }));
    assert.equal(result.text, '\n    return this;', 'the first line with code, whole');
    assert.equal(result.stats.stopReason, 'timeBudget');
    assert.equal(await infillCalls(stub)[0]!.ended, true);
  });

  it('a stop word the server matched: its text, stopReason stopSequence, the figures of the last partial chunk', async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-stream-stopword.sse`)));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const result = await backend.complete(request({ stop: [';'] }));
    assert.equal(result.text, '\n    return this');
    assert.equal(result.stats.stopReason, 'stopSequence');
    assert.equal(result.stats.generatedTokens, 5);
    assert.equal(result.stats.reusedPromptTokens, 2);
    assert.equal(result.stats.serverTokensPerSecond, 1208.4592145015106);
    assert.deepEqual(infillCalls(stub)[0]!.json.stop, [';']);
  });

  it("a draft server's stream: serverDraft from draft_n / draft_n_accepted, its decode speed", async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-draft-stream.sse`)));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const result = await backend.complete(request());
    assert.equal(result.text, infillTexts(`${LLAMA}/infill-draft-stream.sse`).join(''));
    assert.deepEqual(result.stats.serverDraft, { proposedTokens: 75, acceptedTokens: 13 });
    assert.equal(result.stats.serverTokensPerSecond, 519.8915009041591);
    assert.equal(result.stats.generatedTokens, 24);
  });

  it('SSE pings (comments) and events split across writes are read as the same stream', async () => {
    const text = fixture(`${LLAMA}/infill-stream.sse`);
    // ": ping" every so often, and the bytes cut at arbitrary places (inside JSON, inside "data:").
    const withPings = text.replace(/\n\n/g, '\n\n:\n\n');
    const pieces: string[] = [];
    for (let i = 0; i < withPings.length; i += 37) pieces.push(withPings.slice(i, i + 37));
    const stub = await startStub(llamaRoutes({ kind: 'stream', events: pieces, contentType: 'text/event-stream' }));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const result = await backend.complete(request());
    assert.equal(result.text, INFILL_TEXT);
    assert.equal(result.stats.generatedTokens, 24);
  });

  it('a non-streamed JSON answer (a proxy that ignores stream) is read the same way', async () => {
    const stub = await startStub(llamaRoutes(jsonFixture(200, `${LLAMA}/infill.json`)));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const expected = fixtureJson<{ content: string; timings: { predicted_n: number; cache_n: number } }>(`${LLAMA}/infill.json`);
    const result = await backend.complete(request());
    assert.equal(result.text, expected.content);
    assert.equal(result.stats.generatedTokens, expected.timings.predicted_n);
    assert.equal(result.stats.reusedPromptTokens, expected.timings.cache_n);
  });

  it('input_extra only when sendExtraContext is on', async () => {
    const stub = await startStub(llamaRoutes());
    const on = makeBackend('llama-server', stub.url, { settings: { sendExtraContext: true } });
    const infoOn = await on.backend.load();
    assert.match(infoOn.remote?.promptFormat ?? '', /input_extra/);
    await on.backend.complete(request({ extraContext: EXTRA }));
    const sentOn = infillCalls(stub)[0]!.json;
    // As the captured request (infill-stream.request.json) carried it.
    assert.deepEqual(sentOn.input_extra, fixtureJson<{ input_extra: unknown }>(`${LLAMA}/infill-stream.request.json`).input_extra);

    const off = makeBackend('llama-server', stub.url, { settings: { sendExtraContext: false } });
    await off.backend.load();
    await off.backend.complete(request({ extraContext: EXTRA }));
    const sentOff = infillCalls(stub)[1]!;
    assert.equal('input_extra' in sentOff.json, false);
    assert.doesNotMatch(sentOff.bodyText, /reduce/, 'nothing of the other file left the machine');
  });

  it('Authorization: Bearer <key> on every request when a key is set, for this endpoint', async () => {
    const stub = await startStub(llamaRoutes());
    const { backend, keyAsked } = makeBackend('llama-server', `${stub.url}/`, { key: 'sk-test-123' });
    await backend.load();
    await backend.complete(request());
    assert.ok(stub.requests.length >= 5);
    for (const r of stub.requests) assert.equal(r.headers.authorization, 'Bearer sk-test-123', `${r.method} ${r.path}`);
    assert.ok(keyAsked.every((u) => u.origin === stub.url));
    assert.equal(serverApiKeyName(keyAsked[0]!), `draftline.server.apiKey:${stub.url}`);
  });

  it('no Authorization header when no key is set', async () => {
    const stub = await startStub(llamaRoutes());
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    await backend.complete(request());
    assert.ok(stub.requests.length >= 5);
    for (const r of stub.requests) assert.equal(r.headers.authorization, undefined, `${r.method} ${r.path}`);
  });

  it('400 exceed_context_size_error: asked again with the window cut to fit (prefix end and suffix start kept, no extra context)', async () => {
    const longPrefix = `${'// filler line of the file before the function\n'.repeat(40)}${SENT_PREFIX}`;
    const stub = await startStub(llamaRoutes([jsonFixture(400, `${LLAMA}/error-400-exceed-context.json`), replay(`${LLAMA}/infill-stream.sse`)]));
    const { backend } = makeBackend('llama-server', stub.url, { settings: { sendExtraContext: true } });
    await backend.load();
    const result = await backend.complete(request({ prefix: longPrefix, extraContext: EXTRA }));
    assert.equal(result.text, INFILL_TEXT);
    const [first, second] = infillCalls(stub);
    assert.equal(first!.json.input_prefix, longPrefix);
    assert.ok(first!.json.input_extra);
    const cut: string = second!.json.input_prefix;
    assert.ok(cut.length < longPrefix.length * 0.6, `cut to ${cut.length} of ${longPrefix.length}`);
    assert.ok(longPrefix.endsWith(cut), 'the text nearest the cursor is kept');
    assert.ok(SUFFIX.startsWith(second!.json.input_suffix));
    assert.equal(second!.json.input_extra, undefined);
  });

  it("a model without fill-in-the-middle tokens (501 at the load's /infill check): the text before the cursor alone to /completion, as the local path does", async () => {
    const stub = await startStub(llamaRoutes(undefined, { 'POST /infill': jsonFixture(501, `${LLAMA}/error-501-infill-no-fim.json`), 'POST /completion': replay(`${LLAMA}/infill-stream.sse`) }));
    const { backend, sleeps } = makeBackend('llama-server', stub.url);
    const info = await backend.load();
    assert.match(info.remote?.promptFormat ?? '', /^the prefix only \(no FIM tokens\) template as text to \/completion \(llama-server's \/infill says the model has no fill-in-the-middle tokens\)$/);
    assert.deepEqual(sleeps, []);
    assert.equal((await backend.complete(request())).text, INFILL_TEXT);
    const [call] = stub.to('/completion');
    assert.equal(call!.json.prompt, SENT_PREFIX);
    assert.equal(stub.to('/infill').length, 1, 'only the check');
  });

  it('an error event in the middle of the stream fails the completion (code server), not a short completion', async () => {
    const pieces = fixture(`${LLAMA}/infill-stream.sse`).split('\n\n').slice(0, 3).join('\n\n');
    const errorEvent = sse([{ error: { code: 500, message: 'slot crashed', type: 'server_error' } }]);
    const stub = await startStub(llamaRoutes(stream(`${pieces}\n\n${errorEvent}`, 'sse')));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'server', /slot crashed/);
  });
});

// ---------------------------------------------------------------------------------------------
// The template llama-server's model calls for (src/remote/llamaServerModel.ts)

/**
 * llama-server's POST /tokenize (parse_special, with_pieces) over a vocabulary with these special
 * tokens: each special text is one token, every other character one token of its own.
 */
function tokenizeRoute(specials: Record<string, number>): (r: RecordedRequest) => Reply {
  const texts = Object.keys(specials).sort((a, b) => b.length - a.length);
  return (r) => {
    const content = String(r.json?.content ?? '');
    const tokens: { id: number; piece: string }[] = [];
    for (let i = 0; i < content.length; ) {
      const special = r.json?.parse_special === false ? undefined : texts.find((t) => content.startsWith(t, i));
      if (special) tokens.push({ id: specials[special]!, piece: special });
      else tokens.push({ id: 100_000 + content.charCodeAt(i), piece: content[i]! });
      i += special?.length ?? 1;
    }
    return json(200, { tokens });
  };
}

/** The embedded v3 pair's special tokens: Qwen's FIM texts, no repo-level tokens. */
const V3_SPECIALS = { '<|endoftext|>': 4092, '<|fim_prefix|>': 4093, '<|fim_middle|>': 4094, '<|fim_suffix|>': 4095 };
/** What the v3 target's /infill check answers, captured (its `prompt`: BOS, then the FIM tokens of an empty prefix and suffix). */
const V3_CHECK = fixtureJson<{ prompt: string }>(`${LLAMA}/infill-check-v3.json`);
/** The v3 target's answer to the special-text /tokenize request, captured: the real BPE pieces of the texts it does not have. */
const V3_SPECIAL_TEXTS = { request: fixtureJson<{ content: string }>(`${LLAMA}/tokenize-special-texts-v3.request.json`), answer: fixture(`${LLAMA}/tokenize-special-texts-v3.json`) };
const QWEN_SPECIALS = { '<|endoftext|>': 151643, '<|fim_prefix|>': 151659, '<|fim_middle|>': 151660, '<|fim_suffix|>': 151661, '<|fim_pad|>': 151662, '<|repo_name|>': 151663, '<|file_sep|>': 151664 };
/** A Qwen2.5-Coder model's: llama-server puts its repo-level header first (no BOS: the model wants none). */
const QWEN_CHECK = { ...V3_CHECK, prompt: '<|repo_name|>myproject\n<|file_sep|>filename\n<|fim_prefix|><|fim_suffix|><|fim_middle|>' };
/** The v3 generic template as text, line-anchored, with the trailing blank left out. */
const V3_ANCHORED = '<|fim_prefix|>export function add(a: number, b: number): number {<|fim_suffix|>;\n}\n<|fim_middle|>\n  return';

/** A llama-server whose vocabulary can be read (/tokenize), its completions from /completion. */
function vocabularyRoutes(specials: Record<string, number>, check: unknown, completion: Route = replay(`${LLAMA}/infill-stream.sse`), extra: Record<string, Route> = {}): Record<string, Route> {
  const tokenize = tokenizeRoute(specials);
  // The v3 model answers the special-text request as the real server did.
  const v3 = specials === V3_SPECIALS;
  return llamaRoutes(undefined, {
    'POST /infill': json(200, check),
    'POST /tokenize': (r) => (v3 && r.json?.content === V3_SPECIAL_TEXTS.request.content ? json(200, V3_SPECIAL_TEXTS.answer) : tokenize(r)),
    'POST /completion': completion,
    ...extra,
  });
}

describe("the prompt template llama-server's model calls for", () => {
  it('llama-server: the FIM tokens /infill shows, no known family (v3): the generic template as text to /completion, line-anchored', async () => {
    const stub = await startStub(vocabularyRoutes(V3_SPECIALS, V3_CHECK));
    const { backend } = makeBackend('llama-server', stub.url);
    const info = await backend.load();
    assert.equal(
      info.remote?.promptFormat,
      "the fill-in-the-middle (the model's FIM tokens) template as text to /completion, line-anchored as on the local path (chosen from the model's vocabulary as llama-server reports it: its FIM tokens in /infill's prompt, the others through /tokenize)",
    );
    const result = await backend.complete(request());
    assert.equal(result.text, INFILL_TEXT);
    const [call] = stub.to('/completion');
    // The prompt the local path evaluates (buildPrompt, line-anchored); the server adds the BOS itself.
    assert.equal(call!.json.prompt, V3_ANCHORED);
    assert.equal(call!.json.temperature, 0);
    assert.equal(call!.json.cache_prompt, true);
    assert.equal(call!.json.stream, true);
    assert.equal(call!.json.stop, undefined, 'no template stop texts: the server writes no text for control tokens');
    assert.equal(stub.to('/infill').length, 1, 'only the check');
    // The /tokenize calls: the check's prompt, then the known families' special texts.
    const [built, known] = stub.to('/tokenize');
    assert.equal(built!.json.content, V3_CHECK.prompt);
    assert.equal(built!.json.parse_special, true);
    assert.equal(built!.json.with_pieces, true);
    assert.deepEqual(known!.json, V3_SPECIAL_TEXTS.request, 'the request the real server was asked (tokenize-special-texts-v3.request.json)');
  });

  it('llama-server: a Qwen2.5-Coder vocabulary (repo tokens too): its repo-level template, extra context with the real path', async () => {
    const stub = await startStub(vocabularyRoutes(QWEN_SPECIALS, QWEN_CHECK));
    const { backend } = makeBackend('llama-server', stub.url, { settings: { sendExtraContext: true } });
    const info = await backend.load();
    assert.match(info.remote?.promptFormat ?? '', /^the Qwen2\.5-Coder \(repo-level\) template as text to \/completion, line-anchored .*chosen from the model's vocabulary/);
    await backend.complete(request({ extraContext: EXTRA }));
    assert.equal(stub.to('/completion')[0]!.json.prompt, `<|repo_name|>demo\n<|file_sep|>src/math.ts\n${EXTRA.files[0]!.text}<|file_sep|>src/add.ts\n${QWEN_ANCHORED}`);
  });

  it("llama-server: CodeLlama's ▁<EOT> and DeepSeek-Coder's <|EOT|>, which llama.cpp writes as text and does not end at, end the completion as locally", async () => {
    // The ids of the real vocabularies (test/integration/realTokenizers.test.ts); /infill's check shows the FIM tokens after the BOS.
    const families: { specials: Record<string, number>; prompt: string; eot: string; label: RegExp }[] = [
      { specials: { '<s>': 1, '▁<PRE>': 32007, '▁<SUF>': 32008, '▁<MID>': 32009, '▁<EOT>': 32010 }, prompt: '<s>▁<PRE>▁<SUF>▁<MID>', eot: ' <EOT>', label: /^the CodeLlama template/ },
      {
        specials: { '<｜begin▁of▁sentence｜>': 32013, '<｜fim▁hole｜>': 32015, '<｜fim▁begin｜>': 32016, '<｜fim▁end｜>': 32017, '<|EOT|>': 32021 },
        prompt: '<｜begin▁of▁sentence｜><｜fim▁begin｜><｜fim▁hole｜><｜fim▁end｜>',
        eot: '<|EOT|>',
        label: /^the DeepSeek-Coder template/,
      },
    ];
    for (const f of families) {
      // The model ends its middle with the token, and (llama-server not stopping there) goes on.
      const completion = stream(sse([{ content: '\n  return a' }, { content: ' + b;' }, { content: f.eot }, { content: '\n}\n\nexport' }, { content: '', stop: true }]), 'sse');
      const stub = await startStub(vocabularyRoutes(f.specials, { ...V3_CHECK, prompt: f.prompt }, completion));
      const { backend } = makeBackend('llama-server', stub.url);
      const info = await backend.load();
      assert.match(info.remote?.promptFormat ?? '', f.label);
      const result = await backend.complete(request());
      assert.equal(result.text, '\n  return a + b;', JSON.stringify(f.eot));
    }
  });

  it("llama-server: a model's FIM tokens under other ids than the family's texts (chooseTemplate's metadata check): the model's own tokens", async () => {
    // /infill shows FIM tokens of no known family; the vocabulary also has Qwen's texts, but not as its FIM tokens.
    const specials = { ...QWEN_SPECIALS, '<fim-prefix>': 9, '<fim-suffix>': 10, '<fim-middle>': 11 };
    const stub = await startStub(vocabularyRoutes(specials, { ...V3_CHECK, prompt: '<fim-prefix><fim-suffix><fim-middle>' }));
    const { backend } = makeBackend('llama-server', stub.url);
    const info = await backend.load();
    assert.match(info.remote?.promptFormat ?? '', /^the fill-in-the-middle \(the model's FIM tokens\) template/);
    await backend.complete(request());
    assert.equal(stub.to('/completion')[0]!.json.prompt, '<fim-prefix>export function add(a: number, b: number): number {<fim-suffix>;\n}\n<fim-middle>\n  return');
  });

  it("OpenAI endpoint of llama-server: /props answers beside /v1, so the model's vocabulary decides, not its file name", async () => {
    const stub = await startStub({
      ...vocabularyRoutes(V3_SPECIALS, V3_CHECK),
      'GET /v1/models': jsonFixture(200, `${LLAMA}/v1-models.json`),
      'POST /v1/completions': replay(`${LLAMA}/v1-completions-stream.sse`),
    });
    const { backend } = makeBackend('openai-compatible', `${stub.url}/v1`);
    const info = await backend.load();
    assert.match(info.remote?.promptFormat ?? '', /^the fill-in-the-middle \(the model's FIM tokens\) template as text to \/completions, line-anchored .*chosen from the model's vocabulary/);
    // The server's own routes at its root, not under /v1.
    assert.deepEqual(
      stub.requests.map((r) => `${r.method} ${r.path}`),
      ['GET /v1/models', 'GET /props', 'POST /infill', 'POST /tokenize', 'POST /tokenize'],
    );
    await backend.complete(request());
    const body = stub.to('/v1/completions')[0]!.json;
    assert.equal(body.prompt, V3_ANCHORED);
    assert.equal('suffix' in body, false);
  });

  it('OpenAI endpoint of llama-server without /props (a proxy that forwards only /v1): the family guessed from the model id, saying so', async () => {
    const stub = await startStub(vllmRoutes(replay(`${LLAMA}/v1-completions-stream.sse`), jsonFixture(200, `${LLAMA}/v1-models.json`)));
    const { backend } = makeBackend('openai-compatible', stub.url);
    const info = await backend.load();
    assert.equal(
      info.remote?.promptFormat,
      `the prefix only (no FIM tokens) template as text to /v1/completions (the model's name "tiny-code-target.gguf" names no known family; llama-server ignores \`suffix\`, and its /props, /infill and /tokenize did not say what the model's vocabulary has)`,
    );
    assert.deepEqual(
      stub.requests.map((r) => `${r.method} ${r.path}`),
      ['GET /v1/models', 'GET /props'],
    );
    await backend.complete(request());
    assert.equal(stub.to('/v1/completions')[0]!.json.prompt, SENT_PREFIX);
  });

  it('OpenAI endpoint of llama-server: a /props that does not answer yet (503 loading) fails the load to be tried again, not a guess', async () => {
    const stub = await startStub({
      'GET /v1/models': jsonFixture(200, `${LLAMA}/v1-models.json`),
      'GET /props': json(503, { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } }),
    });
    const { backend, sleeps } = makeBackend('openai-compatible', stub.url);
    await rejectsWith(backend.load(), 'busy');
    assert.equal(sleeps.length, 2, 'tried three times');
  });
});

// ---------------------------------------------------------------------------------------------
// The prefix's trailing blank (serverBackend.ts): out of every API's prompt, off the ghost text's start

describe("the prefix's trailing spaces and tabs, for every API", () => {
  /** The cursor on an empty indented line (issue #30: `nst m = value;` from llama-server's OpenAI endpoint). */
  const BLANK_PREFIX = 'export function clamp(value: number, min: number, max: number): number {\n  if (value < min) {\n    return min;\n  }\n \t ';
  const BLANK_SUFFIX = '\n}\n';
  const typed = (overrides: Partial<CompletionRequest> = {}) => request({ prefix: BLANK_PREFIX, suffix: BLANK_SUFFIX, ...overrides });
  /** The model writes the indentation the prompt left out, then the line. */
  const WRITTEN = [' \t ', 'const', ' m = value;'];
  const llamaStream = () =>
    stream(
      sse([
        ...WRITTEN.map((content, i) => ({ index: 0, content, stop: false, tokens_predicted: i + 1 })),
        { index: 0, content: '', stop: true, stop_type: 'eos', tokens_predicted: 3, timings: { predicted_n: 3 } },
      ]),
      'sse',
    );
  const openAiStream = () => stream(sse([...WRITTEN.map((text) => ({ choices: [{ text, finish_reason: null }] })), { choices: [{ text: '', finish_reason: 'stop' }] }], true), 'sse');
  const ollamaStream = () => stream([...WRITTEN.map((response) => ({ response, done: false })), { response: '', done: true, done_reason: 'stop' }].map((o) => JSON.stringify(o)).join('\n'), 'ndjson');
  const withoutBlank = 'export function clamp(value: number, min: number, max: number): number {\n  if (value < min) {\n    return min;\n  }\n';

  const cases: { name: string; kind: ServerKind; routes: () => Record<string, Route>; sent: (stub: StubServer) => string }[] = [
    {
      name: 'llama-server /completion (the vocabulary read)',
      kind: 'llama-server',
      routes: () => vocabularyRoutes(V3_SPECIALS, V3_CHECK, llamaStream()),
      sent: (stub) => stub.to('/completion')[0]!.json.prompt,
    },
    { name: 'llama-server /infill (the vocabulary not read)', kind: 'llama-server', routes: () => llamaRoutes(llamaStream()), sent: (stub) => infillCalls(stub)[0]!.json.input_prefix },
    { name: 'OpenAI-compatible, FIM template as text (vLLM)', kind: 'openai-compatible', routes: () => vllmRoutes(openAiStream()), sent: (stub) => stub.to('/v1/completions')[0]!.json.prompt },
    { name: 'OpenAI-compatible, `suffix` field', kind: 'openai-compatible', routes: () => vllmRoutes(openAiStream(), GENERIC_MODELS), sent: (stub) => stub.to('/v1/completions')[0]!.json.prompt },
    { name: 'Ollama, `suffix` through its template', kind: 'ollama', routes: () => ollamaRoutes({ 'POST /api/generate': ollamaStream() }), sent: (stub) => stub.to('/api/generate')[0]!.json.prompt },
    {
      name: 'Ollama, raw template text',
      kind: 'ollama',
      routes: () => ollamaRoutes({ 'POST /api/show': json(200, SHOW_NO_INSERT), 'POST /api/generate': ollamaStream() }),
      sent: (stub) => stub.to('/api/generate')[0]!.json.prompt,
    },
  ];
  for (const c of cases) {
    it(`${c.name}: the prompt ends before the blank, and the ghost text starts after the blank the model wrote`, async () => {
      const stub = await startStub(c.routes());
      const { backend } = makeBackend(c.kind, stub.url);
      await backend.load();
      const result = await backend.complete(typed());
      assert.equal(result.text, 'const m = value;');
      const prompt = c.sent(stub);
      assert.doesNotMatch(prompt, /[ \t]$/, 'no trailing blank at the end of the prompt');
      // The text before the cursor, less its blank, is all there (the template's tokens around it).
      assert.ok(prompt.endsWith('\n') || prompt.includes('<|fim_middle|>'), prompt);
      assert.ok(prompt.replace(/<\|[a-z_]+\|>/g, '').includes(withoutBlank.slice(withoutBlank.indexOf('{') + 1)) || prompt.endsWith(withoutBlank), prompt);
    });
  }

  it('a completion that does not start with the blank is kept whole (the blank is typed already; nothing to take off)', async () => {
    const stub = await startStub(vllmRoutes(stream(sse([{ choices: [{ text: 'if (value > max) {', finish_reason: 'stop' }] }], true), 'sse'), GENERIC_MODELS));
    const { backend } = makeBackend('openai-compatible', stub.url);
    await backend.load();
    assert.equal((await backend.complete(typed())).text, 'if (value > max) {');
  });

  it('the stop rules read the completion as the local path does: from the prompt without the blank (a block end found the same)', async () => {
    const written = ' \t return value;\n}\n\nexport const x = 1;';
    const stub = await startStub(vllmRoutes(stream(sse([{ choices: [{ text: written, finish_reason: 'stop' }] }], true), 'sse'), GENERIC_MODELS));
    const { backend } = makeBackend('openai-compatible', stub.url);
    await backend.load();
    const req = typed({ stopAtBlockEnd: true });
    const result = await backend.complete(req);
    // InferenceSession.stopRulesFor: the rules see the text after the prompt's prefix, which ends before the blank.
    const local = new StopRules({ detokenize: () => written, isEndToken: () => false, maxTokens: 100, ...requestStops(req, splitTrailingBlank(req.prefix).prefix) });
    local.push(0);
    assert.ok(local.finalText.startsWith(' \t '));
    assert.equal(result.text, local.finalText.slice(3));
    assert.ok(!result.text.includes('export const x'), result.text);
  });
});

// ---------------------------------------------------------------------------------------------
// vLLM and other OpenAI-compatible servers

const VLLM = 'vllm';
const VLLM_MODEL = 'Qwen/Qwen2.5-Coder-1.5B';

function vllmRoutes(completions: Route = replay(`${VLLM}/v1-completions-stream.sse`), models: Reply = jsonFixture(200, `${VLLM}/v1-models.json`)): Record<string, Route> {
  return { 'GET /v1/models': models, 'POST /v1/completions': completions };
}

/** A server that lists its models as the OpenAI API does, owned by someone else than vLLM or llama.cpp (LM Studio, a hosted API). */
const GENERIC_MODELS = json(200, { object: 'list', data: [{ id: 'qwen2.5-coder-1.5b-base', object: 'model', owned_by: 'organization_owner' }] });

describe('OpenAI-compatible backend (vLLM)', () => {
  it('load(): the model from /v1/models, the server recognised as vLLM, its max_model_len', async () => {
    const stub = await startStub(vllmRoutes());
    const { backend } = makeBackend('openai-compatible', stub.url);
    const info = await backend.load();
    assert.equal(info.kind, 'openai-compatible');
    assert.equal(info.model, VLLM_MODEL);
    assert.equal(info.remote?.server, 'vLLM');
    assert.equal(info.remote?.contextSize, 32768);
    assert.match(info.remote?.promptFormat ?? '', /Qwen2\.5-Coder.*template as text/);
    assert.deepEqual(
      stub.requests.map((r) => r.path),
      ['/v1/models'],
    );
  });

  it('the model asked for, when the server has it', async () => {
    const models = json(200, {
      object: 'list',
      data: [
        { id: 'other', owned_by: 'vllm' },
        { id: VLLM_MODEL, owned_by: 'vllm', max_model_len: 4096 },
      ],
    });
    const stub = await startStub(vllmRoutes(undefined, models));
    const info = await makeBackend('openai-compatible', stub.url, { settings: { model: VLLM_MODEL } }).backend.load();
    assert.equal(info.model, VLLM_MODEL);
    assert.equal(info.remote?.contextSize, 4096);
  });

  it('an unknown model: modelNotFound naming the models the server has, not retried', async () => {
    const stub = await startStub(vllmRoutes());
    const { backend, sleeps } = makeBackend('openai-compatible', stub.url, { settings: { model: 'no-such-model' } });
    const e = await rejectsWith(backend.load(), 'modelNotFound', /"no-such-model"/);
    assert.match(e.message, new RegExp(`serves "${VLLM_MODEL.replace('/', '\\/')}"`));
    assert.deepEqual(sleeps, []);
    assert.equal(stub.requests.length, 1);
  });

  it('owner vllm: the FIM template as the prompt, no `suffix` field; usage chunk and [DONE] read', async () => {
    const stub = await startStub(vllmRoutes());
    const { backend } = makeBackend('openai-compatible', stub.url);
    await backend.load();
    const result = await backend.complete(request({ maxTokens: 8 }));
    assert.equal(result.text, 'a + b');
    assert.equal(result.stats.promptTokens, 27);
    assert.equal(result.stats.generatedTokens, 4);
    assert.equal(result.stats.reusedPromptTokens, 0);
    assert.equal(result.stats.stopReason, 'eos'); // finish_reason "stop"
    assert.equal(result.stats.serverTokensPerSecond, undefined);

    const [call] = stub.to('/v1/completions');
    const body = call!.json;
    assert.equal(body.prompt, QWEN_ANCHORED);
    assert.equal('suffix' in body, false);
    assert.equal(body.model, VLLM_MODEL);
    assert.equal(body.temperature, 0);
    assert.equal(body.stream, true);
    assert.equal(body.max_tokens, 8);
    assert.deepEqual(body.stream_options, { include_usage: true });
    // The template's own tokens end a completion.
    assert.ok(body.stop.includes('<|fim_prefix|>') && body.stop.includes('<|endoftext|>'));
    assert.equal(await call!.ended, false);
  });

  it('a stream without usage (the server ignores include_usage): the text and the number of pieces', async () => {
    const stub = await startStub(vllmRoutes(replay(`${VLLM}/v1-completions-stream-no-usage.sse`)));
    const { backend } = makeBackend('openai-compatible', stub.url);
    await backend.load();
    const result = await backend.complete(request());
    assert.equal(result.text, 'a + b');
    assert.equal(result.stats.generatedTokens, 3);
    assert.equal(result.stats.promptTokens, 0);
  });

  it('finish_reason "length": stopReason maxTokens', async () => {
    const text = fixture(`${VLLM}/v1-completions-stream.sse`).replace('"finish_reason":"stop"', '"finish_reason":"length"');
    assert.notEqual(text, fixture(`${VLLM}/v1-completions-stream.sse`));
    const stub = await startStub(vllmRoutes(stream(text, 'sse')));
    const { backend } = makeBackend('openai-compatible', stub.url);
    await backend.load();
    const result = await backend.complete(request());
    assert.equal(result.stats.stopReason, 'maxTokens');
  });

  it('a generic OpenAI-compatible server: prompt = prefix and the `suffix` field', async () => {
    const stub = await startStub(vllmRoutes(undefined, GENERIC_MODELS));
    const { backend } = makeBackend('openai-compatible', stub.url);
    const info = await backend.load();
    assert.equal(info.remote?.server, 'an OpenAI-compatible server');
    assert.match(info.remote?.promptFormat ?? '', /suffix/);
    await backend.complete(request());
    const body = stub.to('/v1/completions')[0]!.json;
    assert.equal(body.prompt, SENT_PREFIX);
    assert.equal(body.suffix, SUFFIX);
    assert.equal(body.model, 'qwen2.5-coder-1.5b-base');
    assert.equal(body.stop, undefined);
  });

  it('a 400 that mentions suffix: asked once more with the template as text, and from then on directly', async () => {
    const stub = await startStub(vllmRoutes([jsonFixture(400, `${VLLM}/error-400-suffix.json`), replay(`${VLLM}/v1-completions-stream.sse`)], GENERIC_MODELS));
    const { backend, rec } = makeBackend('openai-compatible', stub.url);
    await backend.load();
    const result = await backend.complete(request());
    assert.equal(result.text, 'a + b');
    const [first, second] = stub.to('/v1/completions');
    assert.equal(first!.json.suffix, SUFFIX);
    assert.equal('suffix' in second!.json, false);
    assert.equal(second!.json.prompt, QWEN_ANCHORED);
    assert.ok(rec.logs.some((l) => /suffix is not currently supported: asking again/.test(l)));

    await backend.complete(request());
    const calls = stub.to('/v1/completions');
    assert.equal(calls.length, 3, 'the next completion goes as text at once');
    assert.equal('suffix' in calls[2]!.json, false);
  });

  it('a 400 that does not mention suffix: not retried (badRequest)', async () => {
    const refused = json(400, { error: { message: "'max_tokens' is too large: 999999", type: 'BadRequestError', param: null, code: 400 } });
    const stub = await startStub(vllmRoutes(refused, GENERIC_MODELS));
    const { backend } = makeBackend('openai-compatible', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'badRequest', /max_tokens' is too large/);
    assert.equal(stub.to('/v1/completions').length, 1);
  });

  it('an error event in the stream (vLLM keeps status 200): code server', async () => {
    const stub = await startStub(vllmRoutes(replay(`${VLLM}/v1-completions-stream-error.sse`)));
    const { backend } = makeBackend('openai-compatible', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'server', /Internal server error/);
  });

  it('an endpoint that ends with /v1: /v1 once in the path', async () => {
    const stub = await startStub(vllmRoutes());
    const { backend } = makeBackend('openai-compatible', `${stub.url}/v1/`);
    await backend.load();
    await backend.complete(request());
    assert.deepEqual(
      stub.requests.map((r) => r.path),
      ['/v1/models', '/v1/completions'],
    );
  });

  it("llama-server's OpenAI endpoint (owner llamacpp): no `suffix` (it would be ignored), usage, timings and draft figures in one chunk", async () => {
    const stub = await startStub(vllmRoutes(replay(`${LLAMA}/v1-completions-draft-stream.sse`), jsonFixture(200, `${LLAMA}/v1-models.json`)));
    const { backend } = makeBackend('openai-compatible', stub.url);
    const info = await backend.load();
    assert.equal(info.remote?.server, "llama-server's OpenAI endpoint");
    assert.equal(info.remote?.contextSize, 256);
    const result = await backend.complete(request());
    assert.equal('suffix' in stub.to('/v1/completions')[0]!.json, false);
    assert.equal(result.stats.stopReason, 'maxTokens');
    assert.equal(result.stats.promptTokens, 22);
    assert.equal(result.stats.reusedPromptTokens, 21);
    assert.equal(result.stats.generatedTokens, 8);
    assert.equal(result.stats.serverTokensPerSecond, 608.9604175728579);
    assert.deepEqual(result.stats.serverDraft, { proposedTokens: 15, acceptedTokens: 3 });
  });

  it('401 with a flat error string (vLLM): unauthorized, telling to set the API key', async () => {
    const stub = await startStub(vllmRoutes(undefined, jsonFixture(401, `${VLLM}/error-401.json`)));
    const { backend, sleeps } = makeBackend('openai-compatible', stub.url, { key: 'wrong' });
    const e = await rejectsWith(backend.load(), 'unauthorized', /Unauthorized.*Draftline: Set Server API Key/);
    assert.equal(e.status, 401);
    assert.deepEqual(sleeps, []);
  });
});

// ---------------------------------------------------------------------------------------------
// Ollama

const OLLAMA = 'ollama';
const OLLAMA_MODEL = 'qwen2.5-coder:1.5b';
const SHOW_NO_INSERT = { ...fixtureJson<Record<string, unknown>>(`${OLLAMA}/show.json`), capabilities: ['completion'] };

function ollamaRoutes(overrides: Record<string, Route> = {}): Record<string, Route> {
  return {
    'GET /api/version': json(200, { version: '0.12.3' }),
    'GET /api/tags': jsonFixture(200, `${OLLAMA}/tags.json`),
    'POST /api/show': jsonFixture(200, `${OLLAMA}/show.json`),
    'POST /api/generate': replay(`${OLLAMA}/generate-stream.ndjson`),
    ...overrides,
  };
}

describe('Ollama backend', () => {
  it('load(): version, the first model of /api/tags, its context length from /api/show', async () => {
    const stub = await startStub(ollamaRoutes());
    const { backend } = makeBackend('ollama', stub.url);
    const info = await backend.load();
    assert.equal(info.kind, 'ollama');
    assert.equal(info.model, OLLAMA_MODEL);
    assert.equal(info.remote?.server, 'Ollama 0.12.3');
    assert.equal(info.remote?.contextSize, 32768);
    assert.match(info.remote?.promptFormat ?? '', /suffix/);
    assert.deepEqual(stub.to('/api/show')[0]!.json, fixtureJson(`${OLLAMA}/show.request.json`));
  });

  it('a model with "insert": prompt + suffix through its template; NDJSON read, speed from eval_count / eval_duration', async () => {
    const stub = await startStub(ollamaRoutes());
    const { backend } = makeBackend('ollama', stub.url);
    await backend.load();
    const result = await backend.complete(request());
    assert.equal(result.text, 'a + b');
    assert.equal(result.stats.promptTokens, 21);
    assert.equal(result.stats.generatedTokens, 4);
    assert.equal(result.stats.stopReason, 'eos');
    // 4 tokens in 36 472 000 ns.
    assert.ok(Math.abs(result.stats.serverTokensPerSecond! - 4e9 / 36_472_000) < 1e-9, `${result.stats.serverTokensPerSecond}`);
    const body = stub.to('/api/generate')[0]!.json;
    assert.equal(body.model, OLLAMA_MODEL);
    assert.equal(body.prompt, SENT_PREFIX);
    assert.equal(body.suffix, SUFFIX);
    assert.equal(body.raw, undefined);
    assert.equal(body.stream, true);
    assert.equal(body.options.temperature, 0);
    assert.equal(body.options.num_predict, 24);
    assert.equal(typeof body.keep_alive, 'string');
  });

  it('NDJSON lines cut across writes, and a character cut between its bytes, are read whole', async () => {
    const text = fixture(`${OLLAMA}/generate-stream.ndjson`).replace('" +"', '" ×"');
    const bytes = Buffer.from(text, 'utf8');
    const pieces: Buffer[] = [];
    for (let i = 0; i < bytes.length; i += 13) pieces.push(bytes.subarray(i, i + 13));
    const at = bytes.indexOf(Buffer.from('×'));
    const split = [bytes.subarray(0, at + 1), bytes.subarray(at + 1)]; // "×" is 2 bytes: cut between them
    const stub = await startStub(
      ollamaRoutes({
        'POST /api/generate': [
          { kind: 'stream', events: pieces, contentType: 'application/x-ndjson' },
          { kind: 'stream', events: split, contentType: 'application/x-ndjson' },
        ],
      }),
    );
    const { backend } = makeBackend('ollama', stub.url);
    await backend.load();
    assert.equal((await backend.complete(request())).text, 'a × b');
    assert.equal((await backend.complete(request())).text, 'a × b');
  });

  it('a model without "insert": the FIM template as text with raw, no suffix', async () => {
    const stub = await startStub(ollamaRoutes({ 'POST /api/show': json(200, SHOW_NO_INSERT), 'POST /api/generate': replay(`${OLLAMA}/generate-raw-stream.ndjson`) }));
    const { backend } = makeBackend('ollama', stub.url, { settings: { model: OLLAMA_MODEL } });
    const info = await backend.load();
    assert.match(info.remote?.promptFormat ?? '', /template as text to \/api\/generate \(raw\)/);
    assert.equal(stub.to('/api/tags').length, 0, 'the model was set: no need for the list');
    const result = await backend.complete(request());
    assert.equal(result.text, 'a + b');
    const body = stub.to('/api/generate')[0]!.json;
    assert.equal(body.raw, true);
    assert.equal('suffix' in body, false);
    assert.equal(body.prompt, QWEN_ANCHORED);
    assert.ok(body.options.stop.includes('<|fim_prefix|>'));
  });

  it('"does not support insert" (400) after all: asked again as raw template text', async () => {
    const stub = await startStub(ollamaRoutes({ 'POST /api/generate': [jsonFixture(400, `${OLLAMA}/error-400-insert.json`), replay(`${OLLAMA}/generate-raw-stream.ndjson`)] }));
    const { backend } = makeBackend('ollama', stub.url);
    await backend.load();
    const result = await backend.complete(request());
    assert.equal(result.text, 'a + b');
    const [first, second] = stub.to('/api/generate');
    assert.equal(first!.json.suffix, SUFFIX);
    assert.equal(second!.json.raw, true);
    assert.equal('suffix' in second!.json, false);
  });

  it('an unknown model (404 from /api/show): modelNotFound, pointing at draftline.server.model', async () => {
    const stub = await startStub(ollamaRoutes({ 'POST /api/show': jsonFixture(404, `${OLLAMA}/error-404-show.json`) }));
    const { backend, sleeps } = makeBackend('ollama', stub.url, { settings: { model: 'no-such-model' } });
    const e = await rejectsWith(backend.load(), 'modelNotFound', /no-such-model.*draftline\.server\.model/);
    assert.equal(e.status, 404);
    assert.deepEqual(sleeps, []);
  });

  it('a model removed while in use (404 from /api/generate): modelNotFound at complete()', async () => {
    const stub = await startStub(ollamaRoutes({ 'POST /api/generate': jsonFixture(404, `${OLLAMA}/error-404-model.json`) }));
    const { backend } = makeBackend('ollama', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'modelNotFound', /not found/);
    assert.equal(backend.outage(), null);
  });

  it('no model pulled yet: modelNotFound saying to pull one', async () => {
    const stub = await startStub(ollamaRoutes({ 'GET /api/tags': json(200, { models: [] }) }));
    await rejectsWith(makeBackend('ollama', stub.url).backend.load(), 'modelNotFound', /ollama pull/);
  });

  it('an error line in the stream: code server', async () => {
    const stub = await startStub(ollamaRoutes({ 'POST /api/generate': replay(`${OLLAMA}/generate-stream-error.ndjson`) }));
    const { backend } = makeBackend('ollama', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'server', /an error was encountered while running the model/);
  });
});

// ---------------------------------------------------------------------------------------------
// Failures

describe('server failures', () => {
  it('401 (llama-server --api-key): unauthorized, telling to set the API key, not retried', async () => {
    const stub = await startStub(llamaRoutes(undefined, { 'GET /props': jsonFixture(401, `${LLAMA}/error-401-no-key.json`) }));
    const { backend, sleeps } = makeBackend('llama-server', stub.url);
    const e = await rejectsWith(backend.load(), 'unauthorized', /Invalid API Key.*set its API key with "Draftline: Set Server API Key"/);
    assert.equal(e.status, 401);
    assert.equal(e.transient, false);
    assert.deepEqual(sleeps, []);
    assert.equal(stub.to('/props').length, 1);
    assert.equal(backend.outage(), null);
  });

  it('401 on a completion (the key was changed on the server): unauthorized', async () => {
    const stub = await startStub(llamaRoutes(jsonFixture(401, `${LLAMA}/error-401-wrong-key.json`)));
    const { backend } = makeBackend('llama-server', stub.url, { key: 'old' });
    await backend.load();
    await rejectsWith(backend.complete(request()), 'unauthorized', /API Key/);
  });

  it('404 on a route (the endpoint is not that kind of server): notFound', async () => {
    // An OpenAI-compatible backend pointed at a server without /v1/models: llama-server's own 404.
    const stub = await startStub({});
    const { backend, sleeps } = makeBackend('openai-compatible', stub.url);
    const e = await rejectsWith(backend.load(), 'notFound', /no such endpoint \(404: File Not Found\)/);
    assert.equal(e.status, 404);
    assert.deepEqual(sleeps, []);
  });

  it('500 on a completion: code server (no outage: the server is there)', async () => {
    const stub = await startStub(llamaRoutes(jsonFixture(500, `${LLAMA}/error-500-missing-input-suffix.json`)));
    const { backend, rec } = makeBackend('llama-server', stub.url);
    await backend.load();
    const e = await rejectsWith(backend.complete(request()), 'server', /failed \(500: .*input_suffix/);
    assert.equal(e.status, 500);
    assert.equal(backend.outage(), null);
    assert.equal(rec.outages, 0);
  });

  it('503 while the model loads: load() waits (growing) and tries again, then succeeds', async () => {
    const loading = jsonFixture(503, `${LLAMA}/health-loading.json`);
    const stub = await startStub(llamaRoutes(undefined, { 'GET /health': [loading, loading, jsonFixture(200, `${LLAMA}/health.json`)] }));
    const { backend, sleeps, rec } = makeBackend('llama-server', stub.url);
    const info = await backend.load();
    assert.equal(info.model, 'tiny-code-target.gguf');
    assert.deepEqual(sleeps, [500, 1000]);
    assert.equal(stub.to('/health').length, 3);
    assert.equal(rec.outages, 0);
    assert.ok(rec.logs.some((l) => /warn: .*busy or still loading \(503: Loading model\)/.test(l)));
  });

  it('503 that lasts: load() fails (busy), keeps checking, and says when the server answers', async () => {
    const loading = jsonFixture(503, `${LLAMA}/health-loading.json`);
    const stub = await startStub(llamaRoutes(undefined, { 'GET /health': [loading, loading, loading, loading, jsonFixture(200, `${LLAMA}/health.json`)] }));
    const { backend, rec } = makeBackend('llama-server', stub.url);
    const recovered = rec.recovered();
    await rejectsWith(backend.load(), 'busy', /Loading model/);
    assert.ok(backend.outage());
    assert.equal(rec.outages, 1);
    await recovered;
    assert.equal(backend.outage(), null);
    assert.equal((await backend.complete(request())).text, INFILL_TEXT);
  });

  it('connection refused at load: unreachable, an outage (fail fast), recovered once the server listens', async () => {
    const port = await freePort();
    const { backend, rec, sleeps } = makeBackend('llama-server', `http://127.0.0.1:${port}`);
    await rejectsWith(backend.load(), 'unreachable', /nothing is listening at http:\/\/127\.0\.0\.1:\d+ \(connection refused\)/);
    assert.deepEqual(sleeps, [500, 1000], 'tried three times');
    const outage = backend.outage();
    assert.ok(outage, 'an outage is in progress');
    assert.match(outage.description, /connection refused/);
    assert.ok(outage.remainingMs <= 40);
    assert.ok(rec.outages >= 1);
    const started = Date.now();
    await rejectsWith(backend.complete(request()), 'unreachable');
    assert.ok(Date.now() - started < 100, 'fails fast');

    const recovered = rec.recovered();
    await startStub(llamaRoutes(), port);
    await recovered;
    assert.equal(backend.outage(), null);
    // The controller loads again on onRecovered.
    await backend.load();
    assert.equal((await backend.complete(request())).text, INFILL_TEXT);
  });

  it('the server goes away between completions: unreachable, an outage, completions fail fast without a request, onRecovered when it is back', async () => {
    const stub = await startStub(llamaRoutes());
    const port = stub.port;
    const { backend, rec } = makeBackend('llama-server', stub.url, { deps: { firstOutageMs: 60, maxOutageMs: 60 } });
    await backend.load();
    await stub.close();
    await rejectsWith(backend.complete(request()), 'unreachable', /connection refused|closed the connection/);
    assert.ok(backend.outage());
    assert.equal(rec.outages, 1);
    const started = Date.now();
    await rejectsWith(backend.complete(request()), 'unreachable', /trying again in \d+ s/);
    assert.ok(Date.now() - started < 50);

    const recovered = rec.recovered();
    const back = await startStub(llamaRoutes(), port);
    await recovered;
    assert.equal(rec.recoveries, 1);
    assert.equal(backend.outage(), null);
    assert.equal((await backend.complete(request())).text, INFILL_TEXT);
    assert.equal(infillCalls(back).length, 1, 'no completion reached the server during the outage');
  });

  it('back after an outage but refusing (a new API key): the checks stop, and onRecovered lets the load show the refusal', async () => {
    const stub = await startStub(llamaRoutes());
    const port = stub.port;
    const { backend, rec } = makeBackend('llama-server', stub.url, { deps: { firstOutageMs: 30, maxOutageMs: 30 } });
    await backend.load();
    await stub.close();
    await rejectsWith(backend.complete(request()), 'unreachable');
    assert.ok(backend.outage());
    const recovered = rec.recovered();
    const refusing = await startStub({ 'GET /health': jsonFixture(401, `${LLAMA}/error-401-wrong-key.json`) }, port);
    await recovered;
    assert.equal(backend.outage(), null, 'no endless checking of a server that refuses');
    const outagesThen = rec.outages;
    await rejectsWith(backend.load(), 'unauthorized', /Set Server API Key/);
    await new Promise((r) => setTimeout(r, 120));
    assert.equal(rec.outages, outagesThen, 'a refusal starts no new outage');
    await refusing.close();
  });

  it('a server slower than timeoutMs to answer: timeout, and the connection is closed', async () => {
    const stub = await startStub(llamaRoutes(hang()));
    const { backend } = makeBackend('llama-server', stub.url, { settings: { timeoutMs: 300 } });
    await backend.load();
    const started = Date.now();
    await rejectsWith(backend.complete(request()), 'timeout', /did not answer within 0\.3 s/);
    const elapsed = Date.now() - started;
    assert.ok(elapsed >= 280 && elapsed < 1500, `${elapsed} ms`);
    assert.equal(await infillCalls(stub)[0]!.ended, true);
    assert.equal(backend.outage(), null);
  });

  it('a check slower than timeoutMs at load: timeout (tried three times)', async () => {
    const stub = await startStub(llamaRoutes(undefined, { 'GET /props': hang() }));
    const { backend, sleeps } = makeBackend('llama-server', stub.url, { settings: { timeoutMs: 200 } });
    await rejectsWith(backend.load(), 'timeout', /did not answer/);
    assert.equal(sleeps.length, 2);
    assert.equal(stub.to('/props').length, 3);
  });

  it('a check whose answer stalls after its headers: timeout, not a load that never ends', { timeout: 5000 }, async () => {
    const stalled: Reply = { kind: 'stream', events: ['{"model_path":'], contentType: 'application/json', stallAfter: 1 };
    const stub = await startStub(llamaRoutes(undefined, { 'GET /props': stalled }));
    const { backend } = makeBackend('llama-server', stub.url, { settings: { timeoutMs: 200 } });
    await rejectsWith(backend.load(), 'timeout', /sent its headers, then nothing for 0\.2 s/);
    assert.equal(stub.to('/props').length, 3, 'tried three times');
  });

  it('a refused completion whose error body stalls: timeout, not a completion that never ends', { timeout: 5000 }, async () => {
    const stalled: Reply = { kind: 'stream', status: 400, events: ['{"error":{"code":400,'], contentType: 'application/json', stallAfter: 1 };
    const stub = await startStub(llamaRoutes(stalled));
    const { backend } = makeBackend('llama-server', stub.url, { settings: { timeoutMs: 200 } });
    await backend.load();
    await rejectsWith(backend.complete(request()), 'badRequest', /refused the request \(400/);
    assert.equal(await infillCalls(stub)[0]!.ended, true);
  });

  it('a server that stalls in the middle of its stream: timeout after timeoutMs of silence, connection closed', async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-stream.sse`, { stallAfter: 3 })));
    const { backend } = makeBackend('llama-server', stub.url, { settings: { timeoutMs: 300 } });
    await backend.load();
    const started = Date.now();
    await rejectsWith(backend.complete(request()), 'timeout', /sent nothing for 0\.3 s in the middle of a completion/);
    assert.ok(Date.now() - started >= 280);
    const [call] = infillCalls(stub);
    assert.equal(await call!.ended, true);
    assert.equal(call!.eventsSent, 3);
  });

  it('a connection dropped in the middle of the stream: unreachable', async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-stream.sse`, { dropAfter: 4 })));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'unreachable', /closed the connection in the middle of its answer/);
  });

  it('a connection dropped before any answer (a stale keep-alive socket): tried once more, then unreachable', async () => {
    const stub = await startStub(llamaRoutes(drop()));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'unreachable', /closed the connection/);
    assert.equal(infillCalls(stub).length, 2);
  });

  it('a dropped connection then an answer: the retry succeeds', async () => {
    const stub = await startStub(llamaRoutes([drop(), replay(`${LLAMA}/infill-stream.sse`)]));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    assert.equal((await backend.complete(request())).text, INFILL_TEXT);
    assert.equal(backend.outage(), null);
  });

  it('garbage in an SSE stream: malformed', async () => {
    const stub = await startStub(llamaRoutes(stream('data: <html><body>502 Bad Gateway</body></html>\n\n', 'sse')));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'malformed', /not what its API sends \(<html>/);
  });

  it('garbage as the whole answer (an HTML page): malformed', async () => {
    const page: Reply = { kind: 'stream', events: ['<!doctype html><html><body>proxy login</body></html>'], contentType: 'text/html' };
    const stub = await startStub(llamaRoutes(page));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'malformed', /proxy login/);
  });

  it('garbage NDJSON lines: malformed', async () => {
    const stub = await startStub(ollamaRoutes({ 'POST /api/generate': stream('{"response":"a","done":false}\nthis is not json\n', 'ndjson') }));
    const { backend } = makeBackend('ollama', stub.url);
    await backend.load();
    await rejectsWith(backend.complete(request()), 'malformed', /this is not json/);
  });

  it('a check answered with something else than JSON: malformed, asking whether it is that kind of server', async () => {
    const stub = await startStub(llamaRoutes(undefined, { 'GET /props': json(200, '<html>not a llama-server</html>') }));
    const { backend } = makeBackend('llama-server', stub.url);
    await rejectsWith(backend.load(), 'malformed', /is not JSON .*is this a llama-server server\?/);
  });

  it('an endpoint setting that is not a URL: a clear error naming the setting', async () => {
    const { backend } = makeBackend('llama-server', 'not a url');
    await rejectsWith(backend.load(), 'badRequest', /draftline\.server\.endpoint is "not a url", not a URL \(e\.g\. http:\/\/127\.0\.0\.1:8080\)/);
    const ftp = makeBackend('ollama', 'ftp://gpu-box:11434');
    await rejectsWith(ftp.backend.load(), 'badRequest', /must be an http or https URL, not ftp:/);
  });

  it('an endpoint without its scheme (host:port): a clear error that shows how to write it', async () => {
    const { backend } = makeBackend('ollama', 'localhost:11434');
    await rejectsWith(backend.load(), 'badRequest', /draftline\.server\.endpoint.*http:\/\/localhost:11434/);
    const gpuBox = makeBackend('openai-compatible', 'gpu-box:8000');
    await rejectsWith(gpuBox.backend.load(), 'badRequest', /http:\/\/gpu-box:8000/);
    const address = makeBackend('llama-server', '127.0.0.1:8080');
    await rejectsWith(address.backend.load(), 'badRequest', /e\.g\. http:\/\/127\.0\.0\.1:8080/);
  });

  it('complete() before load(): unreachable, not connected yet', async () => {
    const { backend } = makeBackend('llama-server', 'http://127.0.0.1:9');
    await rejectsWith(backend.complete(request()), 'unreachable', /not connected yet/);
  });
});

// ---------------------------------------------------------------------------------------------
// Cancellation

describe('cancellation', () => {
  it('abort in the middle of the stream: resolves promptly with stopReason abort, and the server sees its client go', async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-stream.sse`, { delayMs: 40 })));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const controller = new AbortController();
    const pending = backend.complete(request(), controller.signal);
    await waitFor(() => (infillCalls(stub)[0]?.eventsSent ?? 0) >= 3, 3000, 'three streamed events');
    const abortedAt = Date.now();
    controller.abort();
    const result = await pending;
    assert.ok(Date.now() - abortedAt < 100, `resolved ${Date.now() - abortedAt} ms after the abort`);
    assert.equal(result.text, '');
    assert.equal(result.stats.stopReason, 'abort');
    const [call] = infillCalls(stub);
    assert.equal(await call!.ended, true, 'the client closed the connection');
    assert.ok(call!.clientGoneAt! - abortedAt < 100);
    assert.ok(call!.eventsSent < INFILL_EVENTS, `the server stopped after ${call!.eventsSent} events`);
    assert.equal(backend.outage(), null, 'a cancel is not an outage');
  });

  it('abort while the server has not answered yet: abort, connection closed', async () => {
    const stub = await startStub(llamaRoutes(hang()));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const controller = new AbortController();
    const pending = backend.complete(request(), controller.signal);
    await waitFor(() => infillCalls(stub).length === 1, 3000, 'the request');
    const abortedAt = Date.now();
    controller.abort();
    const result = await pending;
    assert.ok(Date.now() - abortedAt < 100, `resolved ${Date.now() - abortedAt} ms after the abort (timeoutMs is 2000)`);
    assert.equal(result.stats.stopReason, 'abort');
    assert.equal(await infillCalls(stub)[0]!.ended, true);
  });

  it('a signal aborted before the call: no request at all', async () => {
    const stub = await startStub(llamaRoutes());
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const result = await backend.complete(request(), AbortSignal.abort());
    assert.equal(result.stats.stopReason, 'abort');
    assert.equal(infillCalls(stub).length, 0);
  });
});

// ---------------------------------------------------------------------------------------------
// Through the engine

describe('CompletionEngine over a ServerBackend', () => {
  const piece = (content: string, n: number, timings?: Record<string, number>) => ({
    index: 0,
    content,
    tokens: [n],
    stop: false,
    id_slot: -1,
    tokens_predicted: n,
    tokens_evaluated: 22,
    ...(timings ? { timings } : {}),
  });
  const doc = (text: string, offset: number): EngineDocument => ({
    uri: 'file:///src/add.ts',
    languageId: 'typescript',
    offset,
    length: text.length,
    slice: (a, b) => text.slice(a, b),
    tabSize: 2,
    insertSpaces: true,
  });

  it("post-processed text, and the server's speed and draft acceptance in the stats", async () => {
    const final = { ...DRAFT_FINAL, stop_type: 'eos', tokens_predicted: 4 };
    const body = sse([piece('a', 1), piece(' +', 2), piece(' b', 3), piece(';', 4), final]);
    const stub = await startStub(llamaRoutes(stream(body, 'sse')));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    const completion = await engine.complete(doc(PREFIX + SUFFIX, PREFIX.length));
    assert.ok(!('reason' in completion), 'not skipped');
    assert.equal(completion.result?.text, 'a + b;');
    // The ";" the document already has after the cursor is not shown twice.
    assert.equal(completion.text, 'a + b');
    assert.equal(completion.fromCache, false);
    const sent = infillCalls(stub)[0]!.json;
    assert.equal(sent.input_prefix, SENT_PREFIX);
    assert.equal(sent.input_suffix, SUFFIX);

    const summary = engine.stats.summary();
    assert.equal(summary.tokensPerSecond, DRAFT_FINAL.timings.predicted_per_second);
    assert.equal(summary.acceptance, 13 / 75);
    assert.equal(summary.mode, null, 'no in-process speculation record');
    assert.deepEqual(engine.stats.aggregate().serverDraft, { proposedTokens: 75, acceptedTokens: 13 });

    // The same place again: from the cache, no second request.
    const again = await engine.complete(doc(PREFIX + SUFFIX, PREFIX.length));
    assert.ok(!('reason' in again));
    assert.equal(again.fromCache, true);
    assert.equal(infillCalls(stub).length, 1);
  });

  it('a completion the stop rules end early keeps the figures of the last chunk read (timings_per_token)', async () => {
    const t = (n: number, proposed: number, accepted: number) => ({ ...DRAFT_FINAL.timings, predicted_n: n, predicted_per_second: 400 + n, draft_n: proposed, draft_n_accepted: accepted });
    // The cursor's block ends at "}": the rest is never read.
    const body = sse([piece('a', 1, t(1, 0, 0)), piece(' + b;\n', 2, t(2, 8, 6)), piece('}\n', 3, t(3, 16, 10)), piece('export function', 4, t(4, 24, 12)), { ...DRAFT_FINAL }]);
    const stub = await startStub(llamaRoutes(stream(body, 'sse', { delayMs: 30 })));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    const completion = await engine.complete(doc(PREFIX + SUFFIX, PREFIX.length));
    assert.ok(!('reason' in completion));
    assert.equal(infillCalls(stub)[0]!.json.timings_per_token, true);
    assert.equal(completion.result?.stats.stopReason, 'blockEnd');
    assert.equal(completion.text, 'a + b');
    const summary = engine.stats.summary();
    assert.equal(summary.acceptance, 10 / 16);
    assert.equal(summary.tokensPerSecond, 403);
    assert.equal(await infillCalls(stub)[0]!.ended, true, 'the connection was closed at the block end');
  });

  it('prefetch (issue 29): one extra request, served without another; a keystroke closes its connection at once', async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-stream.sse`, { delayMs: 20 })));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    engine.prefetchWhileShown = () => 'none';
    const after = doc(PREFIX + SUFFIX, PREFIX.length);
    assert.equal(await engine.prefetch(after), 'ready');
    assert.equal(infillCalls(stub).length, 1, 'one extra request');
    const served = await engine.complete(after);
    assert.ok(!('reason' in served));
    assert.equal(served.prefetched, true);
    assert.equal(infillCalls(stub).length, 1, "the editor's request needed none");
    // A prefetch elsewhere, stopped by a keystroke while it streams.
    const elsewhere = doc(`${PREFIX}x`, PREFIX.length + 1);
    const pending = engine.prefetch(elsewhere);
    await waitFor(() => (infillCalls(stub)[1]?.eventsSent ?? 0) >= 1, 3000, 'the prefetch streaming');
    const typedAt = Date.now();
    engine.documentEdited(elsewhere.uri, [{ offset: elsewhere.offset, deleteCount: 0, text: 'y' }]);
    assert.equal(await pending, 'cancelled');
    const call = infillCalls(stub)[1]!;
    assert.equal(await call.ended, true, 'the client closed the connection');
    assert.ok(call.clientGoneAt! - typedAt < 100, `connection closed ${call.clientGoneAt! - typedAt} ms after the keystroke`);
    assert.equal(backend.outage(), null);
  });

  it('an aborted engine request is skipped as cancelled and records nothing', async () => {
    const stub = await startStub(llamaRoutes(replay(`${LLAMA}/infill-stream.sse`, { delayMs: 40 })));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    const controller = new AbortController();
    const pending = engine.complete(doc(PREFIX + SUFFIX, PREFIX.length), controller.signal);
    await waitFor(() => (infillCalls(stub)[0]?.eventsSent ?? 0) >= 2);
    controller.abort();
    const completion = await pending;
    assert.ok('reason' in completion && completion.reason === 'cancelled');
    assert.equal(engine.stats.all.length, 0);
  });
});

/** A private CA and a certificate it signed for 127.0.0.1, made with openssl for this run. */
function privateCa(dir: string): { caFile: string; key: string; cert: string } | null {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
  } catch {
    return null;
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=Draftline test CA');
  run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'san.ext');
  return { caFile: path.join(dir, 'ca.pem'), key: fs.readFileSync(path.join(dir, 'server.key'), 'utf8'), cert: fs.readFileSync(path.join(dir, 'server.pem'), 'utf8') };
}

describe('https with a private CA (draftline.server.caFile)', () => {
  const ca = privateCa(path.resolve(__dirname, '../../test-output/remote-tls'));
  const skip = ca ? false : 'openssl is not installed';

  it('refuses a certificate it cannot verify, saying to set caFile; with the CA it connects and completes', { skip }, async () => {
    const stub = await StubServer.start(llamaRoutes(), 0, { key: ca!.key, cert: ca!.cert });
    stubs.push(stub);
    assert.match(stub.url, /^https:/);
    const untrusted = makeBackend('llama-server', stub.url);
    await rejectsWith(untrusted.backend.load(), 'tls', /not trusted.*draftline\.server\.caFile/);
    assert.equal(untrusted.backend.outage(), null, 'an untrusted certificate is no outage to wait out');
    const trusted = makeBackend('llama-server', stub.url, { settings: { caFile: ca!.caFile } });
    await trusted.backend.load();
    assert.equal((await trusted.backend.complete(request())).text, INFILL_TEXT);
  });

  it('a caFile that cannot be read is a clear error', async () => {
    const { backend } = makeBackend('llama-server', 'https://127.0.0.1:1', { settings: { caFile: '/nonexistent/ca.pem' } });
    await rejectsWith(backend.load(), 'tls', /cannot read draftline\.server\.caFile \/nonexistent\/ca\.pem/);
  });
});

// ---------------------------------------------------------------------------------------------
// Alternatives (issue #32): the greedy completion with the most likely tokens at each token, the
// least certain one, then a greedy request per next likely token there with the tokens before it forced.

/** The events of a recorded SSE fixture, parsed. */
const sseEvents = <T>(name: string): T[] =>
  fixture(name)
    .split('\n\n')
    .filter((e) => e.startsWith('data: ') && e !== 'data: [DONE]')
    .map((e) => JSON.parse(e.slice(6)) as T);

interface ProbChunk {
  content: string;
  completion_probabilities?: { id: number; token: string; top_logprobs: { id: number; token: string; logprob: number }[] }[];
}

/** A llama-server /completion stream with n_probs 3 (the v3 model, captured) and the two continuations it branches to. */
const N_PROBS = `${LLAMA}/completion-n_probs-stream.sse`;
const CONTINUED = {
  44: `${LLAMA}/completion-continued-44-stream.sse`,
  41: `${LLAMA}/completion-continued-41-stream.sse`,
  731: `${LLAMA}/completion-continued-731-stream.sse`,
  46: `${LLAMA}/completion-continued-46-stream.sse`,
} as const;
/** The captured greedy tokens before the least certain one (":" after "(a", the margin 0.05 in logits). */
const BEFORE_BRANCH = [289, 265, 539, 427, 490, 1122, 2635];
const textOf = (name: string) =>
  sseEvents<{ content: string }>(name)
    .map((e) => e.content)
    .join('');

/** llama-server with the v3 vocabulary: the greedy request (n_probs) and its continuations (a mixed prompt ending in a token id) answered from captures. */
function alternativesRoutes(continued: (id: number) => Reply = (id) => replay(CONTINUED[id as keyof typeof CONTINUED])): Record<string, Route> {
  return vocabularyRoutes(V3_SPECIALS, V3_CHECK, (r) => (Array.isArray(r.json?.prompt) ? continued(r.json.prompt.at(-1) as number) : replay(N_PROBS)));
}

describe('alternatives from a server', () => {
  it('llama-server: branches where the top two tokens were closest, forces the tokens before it by id (the prompt cache keeps them), one greedy request per next likely token', async () => {
    const stub = await startStub(alternativesRoutes());
    const { backend } = makeBackend('llama-server', stub.url);
    // The captured stream is least certain in its second line: branching anywhere (the default scope,
    // the first line only, is serverBranchPoint.test.ts's and the contract test's).
    backend.alternativesScope = 'completion';
    await backend.load();
    const greedy = await backend.complete(request());
    const result = await backend.alternatives(request(), 2);
    // The captured stream: token 7 (":" after "(a") is the least certain: ":" -0.698, "," -0.747,
    // ")" -4.423 (the margin 0.05 in logits); every token before it has a wider one.
    const chunks = sseEvents<ProbChunk>(N_PROBS).filter((c) => c.completion_probabilities);
    const top = chunks[7]!.completion_probabilities![0]!.top_logprobs;
    assert.equal(result.branch?.tokenIndex, 7);
    assert.equal(result.branch?.margin, top[0]!.logprob - top[1]!.logprob);
    assert.equal(result.limitedBy, undefined);
    // Each alternative: the greedy text before the branch, the other token, then the server's own
    // continuation (the model wrote the blank the user typed: the ghost text starts after it).
    assert.ok(greedy.text.startsWith('a;\n}\n\nexport function add(a:'), JSON.stringify(greedy.text));
    assert.deepEqual(
      result.completions.map((c) => c.text),
      [`a;\n}\n\nexport function add(a,${textOf(CONTINUED[44])}`, `a;\n}\n\nexport function add(a)${textOf(CONTINUED[41])}`],
    );
    const calls = stub.to('/completion');
    assert.equal(calls.length, 4, 'the completion, the greedy request with probabilities, two continuations');
    const [, first, ...continued] = calls;
    assert.equal(first!.json.n_probs, 3, 'the two asked and the greedy one');
    assert.equal(first!.json.prompt, V3_ANCHORED, "the completion's own prompt");
    assert.equal(first!.json.temperature, 0);
    assert.equal(first!.json.stream, true);
    assert.deepEqual(continued.map((c) => c.json.prompt).sort(), [
      [V3_ANCHORED, ...BEFORE_BRANCH, 41],
      [V3_ANCHORED, ...BEFORE_BRANCH, 44],
    ]);
    for (const c of continued) {
      assert.equal(c.json.n_predict, 24 - 8, 'the forced tokens count against the budget');
      assert.equal(c.json.n_probs, undefined);
      assert.equal(c.json.cache_prompt, true);
    }
  });

  it('llama-server: the forced text goes through the stop rules too (single line: an alternative that is a newline ends there)', async () => {
    const stub = await startStub(alternativesRoutes());
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const result = await backend.alternatives(request({ singleLine: true }), 2);
    // Kept: "a;" (the newline ends the line). The least certain token among those that start in it
    // is ";\n" (-1.921, " <" -2.132, "." -2.546): the alternatives end at their own first newline.
    assert.equal(result.branch?.tokenIndex, 1);
    assert.deepEqual(
      result.completions.map((c) => c.text),
      [`a <${textOf(CONTINUED[731]).split('\n')[0]}`, `a.${textOf(CONTINUED[46]).split('\n')[0]}`],
    );
  });

  it('llama-server without a readable vocabulary (/infill): one suggestion, said why, nothing asked', async () => {
    const stub = await startStub(llamaRoutes());
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const before = stub.requests.length;
    const result = await backend.alternatives(request(), 2);
    assert.deepEqual(result.completions, []);
    assert.match(result.limitedBy ?? '', /\/infill/);
    assert.equal(stub.requests.length, before);
  });

  it('a server that reports no probabilities (a draft model on llama-server leaves them out): one suggestion, said why', async () => {
    const bare = fixture(N_PROBS).replace(/,"completion_probabilities":\[.*?\]\}\]\}/g, '}');
    assert.doesNotMatch(bare, /completion_probabilities/);
    const stub = await startStub(vocabularyRoutes(V3_SPECIALS, V3_CHECK, stream(bare, 'sse')));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const result = await backend.alternatives(request(), 2);
    assert.deepEqual(result.completions, []);
    assert.match(result.limitedBy ?? '', /no token probabilities/);
    assert.equal(stub.to('/completion').length, 1, 'no continuation asked');
  });

  it("llama-server's OpenAI endpoint: `logprobs` asked, its `content` shape read, the continuations as text after the prompt", async () => {
    const stub = await startStub({
      ...vocabularyRoutes(V3_SPECIALS, V3_CHECK),
      'GET /v1/models': jsonFixture(200, `${LLAMA}/v1-models.json`),
      'POST /v1/completions': (r) => {
        if (r.json?.logprobs) return replay(`${LLAMA}/v1-completions-logprobs-stream.sse`);
        return stream(sse([{ choices: [{ text: ' 0;', index: 0, finish_reason: 'stop' }] }], true), 'sse');
      },
    });
    const { backend } = makeBackend('openai-compatible', `${stub.url}/v1`);
    backend.alternativesScope = 'completion'; // as above: the captured stream's least certain token is in its second line
    await backend.load();
    const result = await backend.alternatives(request(), 2);
    assert.equal(result.branch?.tokenIndex, 7);
    const before = 'a;\n}\n\nexport function add(a';
    assert.deepEqual(
      result.completions.map((c) => c.text),
      [`${before}, 0;`, `${before}) 0;`],
    );
    const [first, ...continued] = stub.to('/v1/completions');
    assert.equal(first!.json.logprobs, 3);
    assert.deepEqual(continued.map((c) => c.json.prompt).sort(), [`${V3_ANCHORED} ${before})`, `${V3_ANCHORED} ${before},`]);
    for (const c of continued) {
      assert.equal(c.json.max_tokens, 16);
      assert.equal(c.json.logprobs, undefined);
    }
  });

  it('vLLM: the legacy completions `logprobs` (tokens, top_logprobs maps) read; the continuation as text', async () => {
    // vLLM's CompletionLogProbs (protocol.py): text_offset, token_logprobs, tokens, top_logprobs (token -> logprob).
    const chunk = (text: string, top: Record<string, number>, finish: string | null = null) => ({
      id: 'cmpl-1',
      object: 'text_completion',
      created: 1767225600,
      model: VLLM_MODEL,
      choices: [{ index: 0, text, logprobs: { text_offset: [0], token_logprobs: [top[text]], tokens: [text], top_logprobs: [top] }, finish_reason: finish, stop_reason: null }],
    });
    const greedy = sse([chunk('a', { a: -0.1, b: -2.5, x: -3 }), chunk(' +', { ' +': -0.5, ' -': -0.9, ' *': -3.1 }), chunk(' b', { ' b': -0.01, ' c': -6 }, 'stop')], true);
    const stub = await startStub(vllmRoutes((r) => (r.json?.logprobs ? stream(greedy, 'sse') : stream(sse([{ choices: [{ index: 0, text: ' b', finish_reason: 'stop' }] }], true), 'sse'))));
    const { backend } = makeBackend('openai-compatible', stub.url);
    await backend.load();
    const result = await backend.alternatives(request(), 2);
    assert.equal(result.branch?.tokenIndex, 1);
    assert.ok(Math.abs(result.branch!.margin - 0.4) < 1e-12, `${result.branch?.margin}`);
    assert.deepEqual(
      result.completions.map((c) => c.text),
      ['a - b', 'a * b'],
    );
    const [first, ...continued] = stub.to('/v1/completions');
    assert.equal(first!.json.logprobs, 3);
    assert.equal(first!.json.temperature, 0);
    for (const c of continued) assert.ok(String(c.json.prompt).endsWith('a -') || String(c.json.prompt).endsWith('a *'), String(c.json.prompt));
  });

  it('Ollama 0.12.11 and later: `logprobs` and `top_logprobs` asked, read from the NDJSON chunks', async () => {
    // api/types.go: GenerateRequest.Logprobs, TopLogprobs; GenerateResponse.Logprobs []Logprob{token, logprob, bytes, top_logprobs}.
    const line = (response: string, top: [string, number][], done = false) =>
      JSON.stringify({
        model: OLLAMA_MODEL,
        created_at: '2026-01-01T00:00:00Z',
        response,
        done,
        ...(done ? { done_reason: 'stop' } : {}),
        logprobs: [{ token: response, logprob: top[0]![1], top_logprobs: top.map(([token, logprob]) => ({ token, logprob })) }],
      });
    const greedy = `${[
      line('a', [
        ['a', -0.2],
        ['b', -0.3],
        ['x', -4],
      ]),
      line(' + b', [
        [' + b', -0.1],
        [' - b', -3],
      ]),
    ].join('\n')}\n${JSON.stringify({ model: OLLAMA_MODEL, response: '', done: true, done_reason: 'stop', eval_count: 2 })}\n`;
    const continuation = `${JSON.stringify({ model: OLLAMA_MODEL, response: ' + a', done: false })}\n${JSON.stringify({ model: OLLAMA_MODEL, response: '', done: true, done_reason: 'stop' })}\n`;
    const stub = await startStub(
      ollamaRoutes({
        'GET /api/version': json(200, { version: '0.12.11' }),
        'POST /api/generate': (r) => stream(r.json?.logprobs ? greedy : continuation, 'ndjson'),
      }),
    );
    const { backend } = makeBackend('ollama', stub.url);
    await backend.load();
    const result = await backend.alternatives(request(), 2);
    assert.equal(result.branch?.tokenIndex, 0);
    assert.deepEqual(
      result.completions.map((c) => c.text),
      ['b + a', 'x + a'],
    );
    const [first, ...continued] = stub.to('/api/generate');
    assert.equal(first!.json.logprobs, true);
    assert.equal(first!.json.top_logprobs, 3);
    assert.deepEqual(continued.map((c) => [c.json.prompt, c.json.suffix, c.json.options.num_predict]).sort(), [
      [`${SENT_PREFIX}b`, SUFFIX, 23],
      [`${SENT_PREFIX}x`, SUFFIX, 23],
    ]);
  });

  it('Ollama before 0.12.11 (no token probabilities): one suggestion, said why, nothing asked', async () => {
    const stub = await startStub(ollamaRoutes());
    const { backend } = makeBackend('ollama', stub.url);
    await backend.load();
    const result = await backend.alternatives(request(), 2);
    assert.deepEqual(result.completions, []);
    assert.match(result.limitedBy ?? '', /Ollama 0\.12\.3 .*0\.12\.11/);
    assert.equal(stub.to('/api/generate').length, 0);
  });

  it('a keystroke (the signal) closes the requests under way: no alternatives, no outage', async () => {
    const stub = await startStub(alternativesRoutes(() => hang()));
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const controller = new AbortController();
    const pending = backend.alternatives(request(), 2, controller.signal);
    await waitFor(() => stub.to('/completion').filter((c) => Array.isArray(c.json?.prompt)).length === 2, 3000, 'the two continuations');
    const abortedAt = Date.now();
    controller.abort();
    const result = await pending;
    assert.ok(Date.now() - abortedAt < 100, `resolved ${Date.now() - abortedAt} ms after the abort`);
    assert.ok(result.completions.every((c) => c.stats.stopReason === 'abort'));
    for (const c of stub.to('/completion').filter((c) => Array.isArray(c.json?.prompt))) assert.equal(await c.ended, true, 'the client closed the connection');
    assert.equal(backend.outage(), null);
  });

  it('through the engine: the greedy ghost text first, then the distinct alternatives as the user reads them', async () => {
    const stub = await startStub(alternativesRoutes());
    const { backend } = makeBackend('llama-server', stub.url);
    await backend.load();
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS });
    const text = `${PREFIX}${SUFFIX}`;
    const doc: EngineDocument = { uri: 'file:///add.ts', languageId: 'typescript', offset: PREFIX.length, length: text.length, slice: (s, e) => text.slice(s, e) };
    const shown = await engine.complete(doc);
    const answer = await engine.alternatives(doc, 2);
    assert.ok(!('reason' in answer) && !('reason' in shown));
    assert.equal(answer.items[0]!.text, shown.text);
    assert.ok(answer.items.length >= 2, JSON.stringify(answer.items));
    assert.equal(new Set(answer.items.map((i) => i.text)).size, answer.items.length);
    assert.deepEqual(answer.branch?.tokenIndex, 1);
  });
});
