// Next-edit requests through the server backends (issue #39) against the scripted server
// (test/support/stubServer.ts): the Sweep prompt built here goes whole as text to llama-server's
// /completion, the OpenAI-compatible /v1/completions and Ollama's raw /api/generate (greedy, the
// format's stop texts and token budget); a canned model output parses into the edit, which is
// streamed as soon as the output re-synchronised after it; the format comes from the server's model
// name or the request; cancellation answers 'cancelled'.
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { BackendEvents } from '../../src/backend/backend';
import { sweepFormat } from '../../src/nextEdit/formats/sweep';
import { applyReplacements } from '../../src/nextEdit/outputToEdit';
import type { NextEditRequest, TextReplacement } from '../../src/nextEdit/types';
import type { ServerKind } from '../../src/remote/serverApi';
import type { ServerBackend } from '../../src/remote/serverBackend';
import { createServerBackend } from '../../src/remote/servers';
import { AREA, areaRequest } from '../support/nextEditRequests';
import { hang, json, jsonFixture, type RecordedRequest, type Route, stream, StubServer } from '../support/stubServer';

const TEXT = `${AREA}\nexport const UNIT = 'square metres';\n`;
const REQUEST: NextEditRequest = areaRequest({}, TEXT);
const PROMPT = sweepFormat.buildPrompt(REQUEST);
/** The model's window: `width` replaced by `w` on the line after the user's edit. */
const UPDATED = TEXT.slice(PROMPT.region.start, PROMPT.region.end).replace('return width * height', 'return w * height');
/** The smallest edit (outputToEdit.ts trims what both sides share): `idth` of `width` deleted. */
const EDIT: TextReplacement = { start: TEXT.indexOf('width * height') + 1, end: TEXT.indexOf('width * height') + 'width'.length, text: '' };
/** The output in pieces as a server streams it: line by line, the newline the prompt puts before each <|file_sep|>, then Sweep's end. */
const PIECES = [...UPDATED.split(/(?<=\n)/), '\n', '<|file_sep|>'];

const stubs: StubServer[] = [];
const backends: ServerBackend[] = [];
afterEach(async () => {
  for (const b of backends.splice(0)) b.dispose();
  await Promise.all(stubs.splice(0).map((s) => s.close()));
});

const events: BackendEvents = { log: () => undefined, onOutage: () => undefined, onRecovered: () => undefined, onResync: () => undefined };

async function connect(kind: ServerKind, routes: Record<string, Route>, model = ''): Promise<{ backend: ServerBackend; stub: StubServer }> {
  const stub = await StubServer.start(routes);
  stubs.push(stub);
  const backend = createServerBackend(
    { kind, endpoint: stub.url, model, caFile: '', timeoutMs: 2000, sendExtraContext: false, sharedWorker: false },
    { apiKey: async () => undefined, sleep: async () => undefined },
    events,
  );
  backends.push(backend);
  await backend.load();
  return { backend, stub };
}

const sse = (objects: unknown[], done = false) => objects.map((o) => `data: ${JSON.stringify(o)}\n\n`).join('') + (done ? 'data: [DONE]\n\n' : '');
const ndjson = (objects: unknown[]) => objects.map((o) => `${JSON.stringify(o)}\n`).join('');

const llamaRoutes = (completion: Route): Record<string, Route> => ({
  'GET /health': jsonFixture(200, 'llama-server/health.json'),
  'GET /props': jsonFixture(200, 'llama-server/props.json'),
  'POST /infill': jsonFixture(200, 'llama-server/infill.json'),
  'POST /completion': completion,
});
/** llama-server's stream of the canned output (the stop word held back: it ends the answer). */
const llamaStream = () =>
  stream(
    sse([
      ...PIECES.slice(0, -1).map((content) => ({ content, stop: false })),
      { content: '', stop: true, stop_type: 'word', tokens_evaluated: 180, tokens_predicted: 40, timings: { cache_n: 150, predicted_n: 40, predicted_per_second: 90 } },
    ]),
    'sse',
    { delayMs: 5 },
  );

/** Checks what the server was asked: the prompt whole, greedy, the format's stops and budget. */
function assertRaw(call: RecordedRequest, promptField: 'prompt', budgetField: string, budget: unknown) {
  assert.equal(call.json[promptField], PROMPT.prompt, 'the Sweep prompt as text, built here');
  assert.equal(budget, PROMPT.maxTokens, budgetField);
}

describe('next-edit requests through a server', () => {
  it('llama-server: the prompt whole to /completion, the canned output parses into the edit, streamed before the end', async () => {
    const { backend, stub } = await connect('llama-server', llamaRoutes(llamaStream()));
    const streamed: { edit: TextReplacement; ms: number }[] = [];
    const result = await backend.nextEdit({ ...REQUEST, format: 'sweep' }, undefined, (edit, ms) => streamed.push({ edit, ms }));
    assert.equal(result.noSuggestion, undefined, JSON.stringify(result.noSuggestion));
    assert.equal(result.format, 'sweep');
    assert.deepEqual(result.region, PROMPT.region);
    assert.equal(result.regionText, UPDATED);
    assert.deepEqual(result.edits, [EDIT]);
    assert.equal(applyReplacements(TEXT, result.edits), TEXT.replace('return width', 'return w'));
    assert.deepEqual(
      streamed.map((s) => s.edit),
      [EDIT],
      'streamed once, as soon as final',
    );
    assert.equal(result.timeToFirstEditMs, streamed[0]!.ms);
    assert.ok(result.timeToFirstEditMs! < result.stats.totalMs, 'before the output ended');
    assert.equal(result.stats.promptTokens, 180);
    assert.equal(result.stats.reusedPromptTokens, 150);
    const call = stub.to('/completion', 'POST')[0]!;
    assertRaw(call, 'prompt', 'n_predict', call.json.n_predict);
    assert.deepEqual(call.json.stop, PROMPT.stop);
    assert.equal(call.json.temperature, 0);
    assert.equal(call.json.cache_prompt, true);
    assert.equal(call.json.stream, true);
  });

  it('llama-server: a model whose name says no format, none forced: noFormat, nothing asked', async () => {
    const { backend, stub } = await connect('llama-server', llamaRoutes(llamaStream()));
    const result = await backend.nextEdit(REQUEST);
    assert.equal(result.noSuggestion?.reason, 'noFormat');
    assert.equal(stub.to('/completion', 'POST').length, 0);
  });

  it('llama-server: a cancel answers cancelled and closes the connection', async () => {
    const { backend, stub } = await connect('llama-server', llamaRoutes(hang()));
    const controller = new AbortController();
    const pending = backend.nextEdit({ ...REQUEST, format: 'sweep' }, controller.signal);
    while (stub.to('/completion', 'POST').length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    const result = await pending;
    assert.equal(result.noSuggestion?.reason, 'cancelled');
    assert.deepEqual(result.edits, []);
    assert.equal(await stub.to('/completion', 'POST')[0]!.ended, true, 'the server saw the client go');
  });

  it('OpenAI-compatible (vLLM): /v1/completions, the format from the model’s name', async () => {
    const chunks = [
      ...PIECES.slice(0, -1).map((text) => ({ choices: [{ text, finish_reason: null }] })),
      { choices: [{ text: '', finish_reason: 'stop' }] },
      { choices: [], usage: { prompt_tokens: 180, completion_tokens: 40 } },
    ];
    const { backend, stub } = await connect('openai-compatible', {
      'GET /v1/models': json(200, { data: [{ id: 'sweep-next-edit-1.5b', owned_by: 'vllm', max_model_len: 8192 }] }),
      'POST /v1/completions': stream(sse(chunks, true), 'sse'),
    });
    const result = await backend.nextEdit(REQUEST);
    assert.equal(result.noSuggestion, undefined, JSON.stringify(result.noSuggestion));
    assert.deepEqual(result.edits, [EDIT]);
    const call = stub.to('/v1/completions', 'POST')[0]!;
    assertRaw(call, 'prompt', 'max_tokens', call.json.max_tokens);
    assert.equal(call.json.model, 'sweep-next-edit-1.5b');
    assert.equal(call.json.suffix, undefined, 'no fill-in-the-middle: the prompt as it is');
    assert.deepEqual(call.json.stop, PROMPT.stop);
    assert.equal(result.stats.promptTokens, 180);
  });

  it('Ollama: raw /api/generate', async () => {
    const lines = [...PIECES.slice(0, -1).map((response) => ({ response, done: false })), { response: '', done: true, done_reason: 'stop', prompt_eval_count: 180, eval_count: 40 }];
    const { backend, stub } = await connect(
      'ollama',
      {
        'GET /api/version': json(200, { version: '0.12.11' }),
        'POST /api/show': json(200, { capabilities: ['completion'], model_info: { 'qwen2.context_length': 32768 } }),
        'POST /api/generate': stream(ndjson(lines), 'ndjson'),
      },
      'sweep-next-edit:1.5b',
    );
    const result = await backend.nextEdit(REQUEST);
    assert.deepEqual(result.edits, [EDIT], JSON.stringify(result.noSuggestion));
    const call = stub.to('/api/generate', 'POST')[0]!;
    assertRaw(call, 'prompt', 'num_predict', call.json.options.num_predict);
    assert.equal(call.json.raw, true);
    assert.equal(call.json.options.temperature, 0);
  });
});
