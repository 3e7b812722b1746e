// llama.cpp's llama-server. Completions go to /completion as the template the model's vocabulary
// calls for (llamaServerModel.ts), in text the server tokenizes with its special tokens: the same
// prompt the local path evaluates, line-anchored (prompt/fimPrompt.ts), so the same ghost text
// (llamaServerContract.test.ts). Not /infill: in this version it appends its `prompt` field to the
// prefix (server-common.cpp format_prompt_infill), so its middle always starts empty at the cursor
// (the standard layout: the line-anchored one cannot be sent through it), from which the embedded
// v3 pair (trained on random character splits) starts inside a word (`ndencies: ...` at each
// cursor the contract test tries; the local path in the standard layout writes the same). /infill
// stays for a server whose vocabulary cannot be read (no /tokenize). The server reuses the prompt's KV cache (`cache_prompt`) and,
// started with a draft model (-md), speculates on its side: its timings say how many drafted tokens
// it kept (draft_n, draft_n_accepted). Fixtures: test/fixtures/remote/llama-server/.
import * as path from 'node:path';
import type { CompletionRequest } from '../shared/completion';
import type { StopReason } from '../shared/decoding';
import { ServerError } from './http';
import { llamaServerTemplate } from './llamaServerModel';
import { type CompletionCall, errorMessageOf, type ReportedToken, type ServerApi, type ServerDescription, type StreamEvent, stopStrings, templatePrompt, templatePromptFormat } from './serverApi';

interface Props {
  model_path?: string;
  model_alias?: string;
  build_info?: string;
  default_generation_settings?: { n_ctx?: number };
}

interface InfillChunk {
  content?: string;
  stop?: boolean;
  stop_type?: string;
  tokens_evaluated?: number;
  tokens_predicted?: number;
  timings?: { cache_n?: number; prompt_n?: number; predicted_n?: number; predicted_per_second?: number; draft_n?: number; draft_n_accepted?: number };
  /** An error after the stream has started: `data: {"error":{...}}` (the status stays 200). */
  error?: unknown;
  /**
   * With n_probs: the chunk's token (`token` is the text sent with it, which a stop word held back
   * may leave empty) and the most likely tokens at its place (`token` there is the token's own piece).
   */
  completion_probabilities?: { id?: number; token?: string; logprob?: number; top_logprobs?: { id?: number; token?: string; logprob?: number }[] }[];
}

/** The tokens of a chunk with their alternatives, each token by its own piece (the text a held-back stop word delays is not its). */
function reportedTokens(probabilities: InfillChunk['completion_probabilities']): ReportedToken[] | undefined {
  if (!Array.isArray(probabilities)) return undefined;
  return probabilities.map((p) => {
    const top = (p.top_logprobs ?? [])
      .filter((t) => typeof t.token === 'string' && typeof t.logprob === 'number')
      .map((t) => ({ id: t.id, text: t.token!, logprob: t.logprob! }))
      .sort((a, b) => b.logprob - a.logprob);
    return { id: p.id, text: top.find((t) => t.id === p.id)?.text ?? p.token ?? '', top };
  });
}

const STOP_TYPES: Record<string, StopReason> = { eos: 'eos', limit: 'maxTokens', word: 'stopSequence' };

export const llamaServerApi: ServerApi = {
  kind: 'llama-server',
  defaultEndpoint: 'http://127.0.0.1:8080',
  framing: 'sse',

  async describe(http, settings): Promise<ServerDescription> {
    await http.get('/health', 'health check');
    const props = (await http.get('/props', 'server properties')) as Props;
    const modelPath = props.model_alias || props.model_path || 'the loaded model';
    // Whether it drafts with a second model (-md); /slots may be turned off (--no-slots).
    const slots = (await http.get('/slots', 'slots').catch(() => null)) as { speculative?: boolean }[] | null;
    const speculative = Array.isArray(slots) && slots.some((s) => s?.speculative === true);
    // The template from the model's vocabulary (its /infill check says whether it has FIM tokens at all).
    const template = await llamaServerTemplate(http, (route) => route);
    if (!template) {
      // The vocabulary could not be read: /infill then, if the model has the tokens for it (501: say so now, not at every keystroke).
      await http.post('/infill', { input_prefix: '', input_suffix: '', n_predict: 0, cache_prompt: false }, 'fill-in-the-middle check');
    }
    return {
      model: path.basename(modelPath),
      endpoint: settings.endpoint.href,
      server: `llama-server${props.build_info ? ` ${props.build_info}` : ''}`,
      contextSize: props.default_generation_settings?.n_ctx,
      speculation: speculative ? 'a draft model on the server (-md): its acceptance shows per completion' : null,
      promptFormat: template
        ? templatePromptFormat(template, '/completion')
        : `/infill (the model's fill-in-the-middle template, the middle starting at the cursor; its vocabulary could not be read through /tokenize${settings.sendExtraContext ? '; extra context as input_extra' : ''})`,
      ...(template ? { template } : {}),
    };
  },

  completion(request, description): CompletionCall {
    return completionCall(request, description);
  },

  readEvent(data): StreamEvent | null {
    const chunk = data as InfillChunk;
    if (typeof chunk !== 'object' || chunk === null) return null;
    if (chunk.error) throw new ServerError(`llama-server failed mid-completion: ${errorMessageOf(JSON.stringify(chunk)) ?? 'unknown error'}`, 'server');
    const t = chunk.timings;
    const done = chunk.stop === true;
    // Timings come with every chunk (timings_per_token): a completion our stop rules cut short keeps them.
    const tokens = reportedTokens(chunk.completion_probabilities);
    return {
      text: typeof chunk.content === 'string' ? chunk.content : '',
      done,
      ...(tokens ? { tokens } : {}),
      figures: {
        ...(chunk.tokens_evaluated !== undefined ? { promptTokens: chunk.tokens_evaluated } : {}),
        ...(t?.cache_n !== undefined ? { reusedPromptTokens: t.cache_n } : {}),
        ...(done ? { generatedTokens: t?.predicted_n ?? chunk.tokens_predicted } : {}),
        // The first token's speed is 0 (nothing measured yet): leave it out.
        ...(t?.predicted_per_second ? { tokensPerSecond: t.predicted_per_second } : {}),
        ...(t?.draft_n !== undefined ? { draftProposed: t.draft_n, draftAccepted: t.draft_n_accepted ?? 0 } : {}),
        ...(done && chunk.stop_type ? { stopReason: STOP_TYPES[chunk.stop_type] } : {}),
      },
    };
  },

  rawCompletion(prompt, { maxTokens, stop }, description): CompletionCall {
    // /completion tokenizes a text prompt with its control tokens (`<|file_sep|>` as one token) and
    // adds BOS when the model wants one; its prompt cache keeps what the last request shared.
    return { path: '/completion', body: { prompt, ...generation({ maxTokens }, description.contextSize, stop) } };
  },

  withTopTokens(call, n) {
    // /infill puts its `prompt` after the prefix, not after the middle: nothing can be forced there.
    if (call.path !== '/completion') return { unavailable: "llama-server's /infill (its model's vocabulary could not be read) cannot continue after a chosen token" };
    // Probabilities of the logits before sampling (post_sampling_probs off): the greedy choice's margin.
    return { ...call, body: { ...call.body, n_probs: n } };
  },

  continuedAfter(call, forced) {
    // The prompt as text, then the tokens by id (a mixed prompt): exactly the greedy path's tokens,
    // so the server's prompt cache keeps all of it and nothing is tokenized differently.
    const prompt = call.body.prompt as string;
    const byId = forced.every((t) => typeof t.id === 'number');
    return {
      ...call,
      body: {
        ...call.body,
        prompt: byId ? [prompt, ...forced.map((t) => t.id!)] : prompt + forced.map((t) => t.text).join(''),
        n_predict: Math.max(1, (call.body.n_predict as number) - forced.length),
      },
    };
  },

  retryWithout(response, request, description): CompletionCall | null {
    // The window did not fit the server's context: once more with the text cut to fit, at the measured ratio.
    let error: { type?: string; n_prompt_tokens?: number; n_ctx?: number } | undefined;
    try {
      error = (JSON.parse(response.body) as { error?: typeof error }).error;
    } catch {
      return null;
    }
    if (response.status !== 400 || error?.type !== 'exceed_context_size_error' || !error.n_prompt_tokens || !error.n_ctx) return null;
    const room = Math.max(16, error.n_ctx - request.maxTokens - 8);
    // Tokens per character differ across the text: aim well under, and the backend may ask once more.
    const keep = Math.max(0.02, (0.75 * room) / error.n_prompt_tokens);
    const shrunk: CompletionRequest = {
      ...request,
      prefix: request.prefix.slice(request.prefix.length - Math.floor(request.prefix.length * keep)),
      suffix: request.suffix.slice(0, Math.floor(request.suffix.length * keep)),
      extraContext: undefined,
    };
    return { ...completionCall(shrunk, description), request: shrunk };
  },
};

function completionCall(request: CompletionRequest, description: ServerDescription): CompletionCall {
  if (!description.template) return { path: '/infill', body: infillBody(request, description.contextSize) };
  const { prompt } = templatePrompt(request, description.template.spec);
  // The server adds the BOS token itself when the model wants one, as the local path does. The
  // template's stop texts are not sent: llama-server writes no text for control tokens (its
  // end-of-generation ones end the completion), so they could never match, and a stop word the text
  // might be starting ("<") holds the stream back until it cannot.
  return { path: '/completion', body: { prompt, ...generation(request, description.contextSize, stopStrings(request)) } };
}

function infillBody(request: CompletionRequest, contextSize: number | undefined) {
  const extra = request.extraContext?.files ?? [];
  return {
    input_prefix: request.prefix,
    input_suffix: request.suffix,
    ...(extra.length ? { input_extra: extra.map((f) => ({ filename: f.path, text: f.text })) } : {}),
    ...generation(request, contextSize, stopStrings(request)),
  };
}

/** The fields of a greedy, cached, streamed generation (/completion and /infill take the same). */
function generation(request: Pick<CompletionRequest, 'maxTokens'>, contextSize: number | undefined, stops: string[]) {
  return {
    // Never more than the context leaves (a server started with a small -c refuses the request).
    n_predict: contextSize ? Math.min(request.maxTokens, Math.max(1, contextSize >> 1)) : request.maxTokens,
    // Greedy, as local decoding: the server's defaults sample at temperature 0.8.
    temperature: 0,
    top_k: 1,
    cache_prompt: true,
    stream: true,
    timings_per_token: true,
    ...(stops.length ? { stop: stops } : {}),
  };
}
