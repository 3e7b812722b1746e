// Contract tests against a real llama-server (built from the llama.cpp source node-llama-cpp ships,
// scripts/build-llama-server.sh; `npm test` builds it once) serving the embedded v3 pair: what the
// llama-server and OpenAI-compatible backends assume of /health, /props, /slots, /infill, /tokenize,
// /completion and /v1/completions, checked against the server itself rather than recordings, and
// that the remote paths give the local path's ghost text for the same model and cursor. Without the
// binary (DRAFTLINE_SKIP_LLAMA_SERVER=1) they are skipped, saying so.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LlamaServer, LLAMA_SERVER } from '../../testbed/llamaServer';
import type { BackendEvents } from '../../src/backend/backend';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS } from '../../src/engine/completionEngine';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import { splitTrailingBlank } from '../../src/prompt/fimPrompt';
import { templateSpec } from '../../src/prompt/templates';
import type { ServerError } from '../../src/remote/http';
import { llamaServerApi } from '../../src/remote/llamaServerApi';
import { openAiApi } from '../../src/remote/openAiApi';
import { templatePrompt } from '../../src/remote/serverApi';
import { ServerBackend, type BackendSettings } from '../../src/remote/serverBackend';
import type { CompletionRequest } from '../../src/shared/completion';

const MODELS = path.resolve(__dirname, '../../models');
const TARGET = path.join(MODELS, 'draftline-code-target.gguf');
const DRAFT = path.join(MODELS, 'draftline-code-draft.gguf');
// npm test builds the server and requires it: a failed build must not pass as a skip.
const required = process.env.DRAFTLINE_REQUIRE_LLAMA_SERVER === '1';
if (required && !LlamaServer.available()) throw new Error(`no llama-server at ${LLAMA_SERVER}: scripts/build-llama-server.sh did not build it`);
const skip = LlamaServer.available() ? false : `no llama-server at ${LLAMA_SERVER} (scripts/build-llama-server.sh builds it)`;
const SERVER_OPTIONS = { threads: 1, contextSize: 1024, maxProposal: 8, minConfidence: 0.35 };

const quietEvents = (): BackendEvents & { outages: number; recoveries: number } => {
  const events = { outages: 0, recoveries: 0, log: () => undefined, onOutage: () => void events.outages++, onRecovered: () => void events.recoveries++, onResync: () => undefined };
  return events;
};

function backendFor(server: LlamaServer, overrides: Partial<BackendSettings> = {}, key?: string) {
  const settings: BackendSettings = { kind: 'llama-server', endpoint: server.url, model: '', caFile: '', timeoutMs: 20_000, sendExtraContext: false, sharedWorker: false, ...overrides };
  return new ServerBackend(settings.kind === 'openai-compatible' ? openAiApi : llamaServerApi, settings, { apiKey: async () => key }, quietEvents());
}

/** Draftline pointed at llama-server's OpenAI endpoint, as a team that runs one for several tools would. */
const openAiBackendFor = (server: LlamaServer, overrides: Partial<BackendSettings> = {}) => backendFor(server, { kind: 'openai-compatible', endpoint: `${server.url}/v1`, ...overrides });

/** The cursor on an empty line indented by two spaces (issue #30: `nst m = value;` from the OpenAI endpoint). */
const PREFIX = 'export function clamp(value: number, min: number, max: number): number {\n  if (value < min) {\n    return min;\n  }\n  ';
const SUFFIX = '\n}\n';
/** The v3 pair's FIM tokens are Qwen's texts without its repo-level tokens: the generic template, spelled as the server writes them. */
const V3_TEMPLATE = templateSpec('generic-fim');

function request(overrides: Partial<CompletionRequest> = {}): CompletionRequest {
  return { prefix: PREFIX, suffix: SUFFIX, maxTokens: 24, mode: 'plain', languageId: 'typescript', ...overrides };
}

/** The text prompt the backends send for a request (the trailing blank left out, the v3 template, line-anchored). */
const promptOf = (req: CompletionRequest) => templatePrompt({ ...req, prefix: splitTrailingBlank(req.prefix).prefix }, V3_TEMPLATE).prompt;

/** The server's own answer to the same /completion, not streamed: what the streamed one must add up to. */
async function completionOnce(server: LlamaServer, req: CompletionRequest): Promise<{ content: string; predicted: number; evaluated: number }> {
  const response = await fetch(`${server.url}/completion`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: promptOf(req), n_predict: req.maxTokens, temperature: 0, top_k: 1, cache_prompt: true }),
  });
  const body = (await response.json()) as { content: string; tokens_evaluated: number; timings: { predicted_n: number } };
  return { content: body.content, predicted: body.timings.predicted_n, evaluated: body.tokens_evaluated };
}

/**
 * `backend`'s streamed completion of `req` beside the server's own non-streamed answer to the same
 * prompt: the same text (the model writes the indentation the prompt left out; the ghost text starts
 * after it), as many generated tokens, and the server's decode speed.
 */
async function streamedBesideOnce(backend: ServerBackend, server: LlamaServer, req: CompletionRequest) {
  await backend.load();
  const expected = await completionOnce(server, req);
  const result = await backend.complete(req);
  assert.equal(result.text, expected.content.startsWith('  ') ? expected.content.slice(2) : expected.content);
  assert.equal(result.stats.generatedTokens, expected.predicted);
  assert.ok((result.stats.serverTokensPerSecond ?? 0) > 0, 'the server says its decode speed');
  return { result, expected };
}

/** Our stop rules cut a server's stream: a single-line completion is the whole completion's first line. */
async function singleLineEndsAtTheNewline(backend: ServerBackend): Promise<void> {
  await backend.load();
  const full = await backend.complete(request({ maxTokens: 48 }));
  const line = await backend.complete(request({ maxTokens: 48, singleLine: true }));
  assert.equal(line.text, full.text.split('\n')[0]);
  assert.ok(!line.text.includes('\n'));
}

/** A long completion cancelled 150 ms in: answered at once, the server's slot idle (the connection closed), the next request served. */
async function cancelledMidStream(backend: ServerBackend, server: LlamaServer): Promise<void> {
  await backend.load();
  const controller = new AbortController();
  const started = performance.now();
  // 1000 tokens take the server seconds; the abort comes after 150 ms.
  const pending = backend.complete(request({ maxTokens: 1000, stop: ['\u0000never'] }), controller.signal);
  setTimeout(() => controller.abort(), 150);
  const result = await pending;
  assert.equal(result.stats.stopReason, 'abort');
  const abortedAfter = performance.now() - started;
  assert.ok(abortedAfter < 2000, `complete() returned ${Math.round(abortedAfter)} ms after the start`);
  assert.ok(await slotsIdle(server), 'the server stopped generating when the connection closed');
  assert.ok((await backend.complete(request())).text.length > 0);
}

const server = (s: LlamaServer, route: string) => `${s.url}${route}`;
/** Notes what the real server offered, in the test output (node:test prints console lines beside the results). */
const t_diag = (line: string) => console.log(line);

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return (await response.json()) as T;
}

/** Waits until the server's slots are idle (it stopped generating), up to `ms`. */
async function slotsIdle(server: LlamaServer, ms = 1500): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    const slots = (await (await fetch(`${server.url}/slots`)).json()) as { is_processing: boolean }[];
    if (slots.every((s) => !s.is_processing)) return true;
    if (performance.now() > until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('llama-server contract (a real server with the embedded pair)', { skip }, () => {
  let plain: LlamaServer;
  let withDraft: LlamaServer;

  before(async () => {
    plain = await LlamaServer.start(TARGET, null, SERVER_OPTIONS);
    withDraft = await LlamaServer.start(TARGET, DRAFT, SERVER_OPTIONS);
  });

  after(async () => {
    await plain?.stop();
    await withDraft?.stop();
  });

  it("load() describes the server: model, context, build, no draft model, and the template its model's vocabulary calls for", async () => {
    const info = await backendFor(plain).load();
    assert.equal(info.kind, 'llama-server');
    assert.equal(info.model, 'draftline-code-target.gguf');
    assert.equal(info.remote?.contextSize, 1024);
    assert.match(info.remote?.server ?? '', /^llama-server b\d+-[0-9a-f]+/);
    assert.equal(info.remote?.speculation, null);
    // What the local path says of the same model (its template's label), and why.
    assert.match(info.remote?.promptFormat ?? '', /^the fill-in-the-middle \(the model's FIM tokens\) template as text to \/completion, line-anchored .*chosen from the model's vocabulary/);
  });

  it("a streamed completion adds up to the server's own non-streamed answer, with its figures", async () => {
    const backend = backendFor(plain);
    const req = request();
    const { result, expected } = await streamedBesideOnce(backend, plain, req);
    assert.ok(result.stats.promptTokens === expected.evaluated || result.stats.promptTokens > 10, `prompt tokens ${result.stats.promptTokens}`);
    assert.ok(result.stats.promptTokens > 10, `prompt tokens ${result.stats.promptTokens}`);
    assert.ok(result.stats.timeToFirstTokenMs <= result.stats.totalMs);
    assert.equal(result.stats.serverDraft, undefined, 'no draft model, no draft figures');
    // Asked again, the server reuses the prompt's cache.
    const again = await backend.complete(req);
    assert.ok(again.stats.reusedPromptTokens > 0, `reused ${again.stats.reusedPromptTokens}`);
  });

  it('our stop rules cut the stream and close it: a single-line completion ends at the newline', () => singleLineEndsAtTheNewline(backendFor(plain)));

  it('cancelling mid-stream stops the server generating (its slot goes idle at once), and the next request is served', () => cancelledMidStream(backendFor(plain), plain));

  it('with a draft model (-md) the server speculates and its acceptance reaches the stats and the status bar summary', async () => {
    const backend = backendFor(withDraft);
    const info = await backend.load();
    assert.match(info.remote?.speculation ?? '', /draft model/);
    // No time budget: the local path and the server must give the whole ghost text, however long each takes.
    const engine = new CompletionEngine(backend, { ...DEFAULT_ENGINE_SETTINGS, maxTokens: 48, timeBudgetMs: 0 });
    const doc = { uri: 'file:///clamp.ts', languageId: 'typescript', offset: PREFIX.length, length: PREFIX.length + SUFFIX.length, slice: (a: number, b: number) => (PREFIX + SUFFIX).slice(a, b) };
    const completion = await engine.complete(doc);
    assert.ok(!('reason' in completion), 'a completion, not a skip');
    const draft = completion.result?.stats.serverDraft;
    assert.ok(draft && draft.proposedTokens > 0, `draft figures: ${JSON.stringify(draft)}`);
    const summary = engine.stats.summary();
    assert.equal(summary.acceptance, draft.acceptedTokens / draft.proposedTokens);
    assert.ok((summary.tokensPerSecond ?? 0) > 0);
    // Speculation on the server is lossless too: the same text as the plain server.
    const plainBackend = backendFor(plain);
    await plainBackend.load();
    const req = request({ maxTokens: 32 });
    assert.equal((await backend.complete(req)).text, (await plainBackend.complete(req)).text);
  });

  it("alternatives (issue #32): the branch where the server's top two tokens were closest; each alternative is the server's own greedy continuation after the forced tokens", async () => {
    const backend = backendFor(plain);
    await backend.load();
    const req = request({ maxTokens: 16 });
    const greedy = await backend.complete(req);
    const result = await backend.alternatives(req, 2);
    assert.equal(result.limitedBy, undefined, result.limitedBy);
    const branch = result.branch;
    assert.ok(branch, 'a branch');
    // The same greedy completion asked whole, with its probabilities (not streamed): read independently.
    const prompt = promptOf(req);
    const whole = await postJson<{ content: string; completion_probabilities: { id: number; token: string; top_logprobs: { id: number; token: string; logprob: number }[] }[] }>(
      server(plain, '/completion'),
      { prompt, n_predict: 16, temperature: 0, top_k: 1, n_probs: 3 },
    );
    const tokens = whole.completion_probabilities;
    const margin = (i: number) => tokens[i]!.top_logprobs[0]!.logprob - tokens[i]!.top_logprobs[1]!.logprob;
    assert.ok(Math.abs(branch.margin - margin(branch.tokenIndex)) < 1e-6, `margin ${branch.margin} vs ${margin(branch.tokenIndex)}`);
    for (let i = 0; i < branch.tokenIndex; i++) assert.ok(margin(i) >= branch.margin, `token ${i} was less certain (${margin(i)})`);
    // The model writes the indentation the prompt left out; the ghost text (and each alternative) starts after it.
    const blank = splitTrailingBlank(req.prefix).blank;
    const shown = (text: string) => (text.startsWith(blank) ? text.slice(blank.length) : text);
    const before = tokens.slice(0, branch.tokenIndex);
    const others = tokens[branch.tokenIndex]!.top_logprobs.filter((t) => t.id !== tokens[branch.tokenIndex]!.id);
    assert.equal(result.completions.length, 2);
    for (const [k, completion] of result.completions.entries()) {
      const forced = [...before.map((t) => t.id), others[k]!.id];
      const own = await postJson<{ content: string }>(server(plain, '/completion'), { prompt: [prompt, ...forced], n_predict: 16 - forced.length, temperature: 0, top_k: 1 });
      const expected = shown(before.map((t) => t.token).join('') + others[k]!.token + own.content);
      t_diag(`alternative ${k + 1}: ${JSON.stringify(completion.text)} (greedy ${JSON.stringify(greedy.text)})`);
      assert.ok(expected.startsWith(completion.text) && completion.text.length > 0, `${JSON.stringify(completion.text)} vs the server's ${JSON.stringify(expected)}`);
      assert.notEqual(completion.text, greedy.text);
    }
    // Through the OpenAI endpoint (the forced tokens as text): the same branch.
    const openAi = openAiBackendFor(plain);
    await openAi.load();
    const viaOpenAi = await openAi.alternatives(req, 2);
    assert.equal(viaOpenAi.branch?.tokenIndex, branch.tokenIndex);
    assert.ok(Math.abs((viaOpenAi.branch?.margin ?? Number.NaN) - branch.margin) < 1e-6);
    for (const [k, completion] of viaOpenAi.completions.entries())
      assert.ok(completion.text.startsWith(shown(before.map((t) => t.token).join('') + others[k]!.token)), JSON.stringify(completion.text));
  });

  it('an API key: refused without it (a clear message), served with it', async () => {
    const keyed = await LlamaServer.start(TARGET, null, { ...SERVER_OPTIONS, apiKey: 'team-secret' });
    try {
      await assert.rejects(backendFor(keyed).load(), (e: ServerError) => e.code === 'unauthorized' && /Set Server API Key/.test(e.message));
      await assert.rejects(backendFor(keyed, {}, 'wrong').load(), (e: ServerError) => e.code === 'unauthorized');
      const backend = backendFor(keyed, {}, 'team-secret');
      await backend.load();
      assert.ok((await backend.complete(request())).text.length > 0);
    } finally {
      await keyed.stop();
    }
  });

  it("a window larger than the server's context is cut to fit, not refused", async () => {
    const small = await LlamaServer.start(TARGET, null, { ...SERVER_OPTIONS, contextSize: 256 });
    try {
      const backend = backendFor(small);
      await backend.load();
      const long = `${Array.from({ length: 120 }, (_, i) => `const value${i} = clamp(${i}, 0, 10);`).join('\n')}\n`;
      const result = await backend.complete(request({ prefix: long + PREFIX }));
      assert.equal(result.stats.stopReason === 'abort', false);
      assert.ok(result.stats.promptTokens < 256, `prompt ${result.stats.promptTokens} tokens`);
    } finally {
      await small.stop();
    }
  });
});

describe("llama-server's OpenAI endpoint (/v1/completions) with the embedded pair", { skip }, () => {
  let server: LlamaServer;

  before(async () => {
    server = await LlamaServer.start(TARGET, null, SERVER_OPTIONS);
  });

  after(async () => {
    await server?.stop();
  });

  it("load(): the model's vocabulary read through /props, /infill and /tokenize beside /v1, not the family guessed from its file path", async () => {
    const info = await openAiBackendFor(server).load();
    assert.equal(info.kind, 'openai-compatible');
    assert.equal(info.remote?.server, "llama-server's OpenAI endpoint");
    assert.equal(info.remote?.contextSize, 1024);
    assert.match(info.remote?.promptFormat ?? '', /^the fill-in-the-middle \(the model's FIM tokens\) template as text to \/completions, line-anchored .*chosen from the model's vocabulary/);
  });

  it("a streamed completion: the server's own non-streamed answer to the same prompt, its usage figures, and the llama-server backend's text", async () => {
    const req = request();
    const { result, expected } = await streamedBesideOnce(openAiBackendFor(server), server, req);
    assert.equal(result.stats.promptTokens, expected.evaluated);
    const native = backendFor(server);
    await native.load();
    assert.equal((await native.complete(req)).text, result.text);
  });

  it('the trailing blank of the prefix (issue #30): not in the prompt, and the ghost text does not start inside a word', async () => {
    const backend = openAiBackendFor(server);
    await backend.load();
    const result = await backend.complete(request());
    // The answer to a prompt ending in two spaces was `nst m = value;`.
    assert.match(result.text, /^(\S|\n)/, JSON.stringify(result.text));
    assert.doesNotMatch(result.text, /^nst\b/);
    // The same request with the prompt ending in the blank, as it was sent before: what the rule avoids.
    const raw = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: templatePrompt(request(), V3_TEMPLATE).prompt, max_tokens: 24, temperature: 0 }),
    });
    const withBlank = ((await raw.json()) as { choices: { text: string }[] }).choices[0]!.text;
    assert.notEqual(withBlank, result.text);
  });

  it('our stop rules cut the stream and close it: a single-line completion ends at the newline', () => singleLineEndsAtTheNewline(openAiBackendFor(server)));

  it('cancelling mid-stream stops the server generating (its slot goes idle at once), and the next request is served', () => cancelledMidStream(openAiBackendFor(server), server));
});

/**
 * Cursor positions in one function, each a CompletionRequest's prefix and suffix. Ghost texts at
 * temperature 0 are compared between the local path (InferenceSession, in process) and the two
 * remote paths to a llama-server with the same model.
 */
const SOURCE = 'export function clamp(value: number, min: number, max: number): number {\n  if (value < min) {\n    return min;\n  }\n  if (value > max) {\n    return max;\n  }\n  return value;\n}\n';
const cut = (at: number) => ({ prefix: SOURCE.slice(0, at), suffix: SOURCE.slice(at) });
const endOf = (text: string) => SOURCE.indexOf(text) + text.length;
const POSITIONS: Record<string, { prefix: string; suffix: string }> = {
  'mid-line': cut(endOf('  if (value > m')),
  'end of line': cut(endOf('  if (value > max) {')),
  'empty indented line': { prefix: `${SOURCE.slice(0, endOf('    return min;\n  }\n'))}  `, suffix: '\n}\n' },
  'line start': cut(endOf('    return min;\n  }\n')),
};

describe('the same ghost text from the local path and from llama-server (same model and cursor, temperature 0)', { skip }, () => {
  let server: LlamaServer;
  let session: InferenceSession;

  before(async () => {
    // Flash attention off on both sides: the local path's 'auto' measures and may choose otherwise,
    // and the two kernels can part greedy outputs at a near-tie.
    server = await LlamaServer.start(TARGET, null, { ...SERVER_OPTIONS, flashAttention: false });
    session = await InferenceSession.load(
      { targetModel: TARGET, draftModel: '', gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 1024, flashAttention: 'off' },
      DEFAULT_SPECULATION,
      () => undefined,
    );
  });

  after(async () => {
    await server?.stop();
    await session?.dispose();
  });

  for (const [name, position] of Object.entries(POSITIONS)) {
    it(`${name}: llama-server (/completion) and its OpenAI endpoint write what the local path writes`, async (t) => {
      const req: CompletionRequest = { ...position, maxTokens: 24, mode: 'plain', languageId: 'typescript' };
      const local = (await session.complete(req)).text;
      const native = backendFor(server);
      await native.load();
      const openAi = openAiBackendFor(server);
      await openAi.load();
      const remote = (await native.complete(req)).text;
      const viaOpenAi = (await openAi.complete(req)).text;
      // For the record: /infill, which lays the prompt out with the middle starting at the cursor
      // (the standard layout), from which this model starts inside a word.
      const infill = (await (
        await fetch(`${server.url}/infill`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ input_prefix: splitTrailingBlank(req.prefix).prefix, input_suffix: req.suffix, n_predict: 24, temperature: 0, top_k: 1 }),
        })
      ).json()) as { content: string };
      t.diagnostic(`local ${JSON.stringify(local)} | /completion ${JSON.stringify(remote)} | /v1/completions ${JSON.stringify(viaOpenAi)} | /infill ${JSON.stringify(infill.content)}`);
      assert.ok(local.length > 0, 'the local path writes something');
      assert.equal(remote, local);
      assert.equal(viaOpenAi, local);
    });
  }
});
