// OpenAI-compatible /v1/completions (vLLM, llama-server's OpenAI endpoint, LM Studio, hosted APIs).
// The `suffix` field is the API's fill-in-the-middle, but vLLM refuses it (400) and llama-server
// ignores it silently (test/fixtures/remote/): for those, and after any refusal, the prompt is a FIM
// template as plain text (prompt/templates.ts), which the server tokenizes. Which template: the one
// the model's vocabulary calls for where the server says (llama-server, llamaServerModel.ts), else
// the family guessed from the model's name.
import type { CompletionRequest } from '../shared/completion';
import type { StopReason } from '../shared/decoding';
import { ServerError } from './http';
import { llamaServerTemplate } from './llamaServerModel';
import {
  type CompletionCall,
  errorMessageOf,
  guessedTemplate,
  type ReportedToken,
  type ServerApi,
  type ServerDescription,
  type ServerHttp,
  type StreamEvent,
  stopStrings,
  type TemplateChoice,
  templatePrompt,
  templatePromptFormat,
} from './serverApi';

interface ModelList {
  data?: { id?: string; owned_by?: string; max_model_len?: number; meta?: { n_ctx?: number } }[];
}

/**
 * `logprobs` of a choice: the legacy completions shape (OpenAI, vLLM: `tokens`, `top_logprobs` as
 * token-to-logprob maps) or llama-server's (`content`, as its /completion's completion_probabilities).
 */
interface ChoiceLogprobs {
  tokens?: string[];
  top_logprobs?: (Record<string, number> | null)[] | null;
  content?: { id?: number; token?: string; top_logprobs?: { id?: number; token?: string; logprob?: number }[] }[];
}

function reportedTokens(logprobs: ChoiceLogprobs | null | undefined): ReportedToken[] | undefined {
  if (!logprobs || typeof logprobs !== 'object') return undefined;
  const byLogprob = (a: { logprob: number }, b: { logprob: number }) => b.logprob - a.logprob;
  if (Array.isArray(logprobs.content)) {
    return logprobs.content.map((p) => {
      const top = (p.top_logprobs ?? [])
        .filter((t) => typeof t.token === 'string' && typeof t.logprob === 'number')
        .map((t) => ({ id: t.id, text: t.token!, logprob: t.logprob! }))
        .sort(byLogprob);
      return { id: p.id, text: top.find((t) => t.id === p.id)?.text ?? p.token ?? '', top };
    });
  }
  if (!Array.isArray(logprobs.tokens)) return undefined;
  return logprobs.tokens.map((text, k) => ({
    text,
    top: Object.entries(logprobs.top_logprobs?.[k] ?? {})
      .map(([token, logprob]) => ({ text: token, logprob }))
      .sort(byLogprob),
  }));
}

interface CompletionChunk {
  choices?: { text?: string; finish_reason?: string | null; logprobs?: ChoiceLogprobs | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null } | null;
  /** llama-server adds its own timings. */
  timings?: { predicted_per_second?: number; draft_n?: number; draft_n_accepted?: number };
  error?: unknown;
}

const FINISH: Record<string, StopReason> = { stop: 'eos', length: 'maxTokens' };

/** `/v1` once, whether the endpoint setting ends with it or not. */
function v1(endpoint: URL, route: string): string {
  return endpoint.pathname.replace(/\/+$/, '').endsWith('/v1') ? route : `/v1${route}`;
}

/** A route of the server itself, beside its /v1 (llama-server serves /props, /infill and /tokenize at its root). */
function beside(endpoint: URL, route: string): URL {
  const url = new URL(endpoint.href);
  url.pathname = `${url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '')}${route}`;
  return url;
}

export const openAiApi: ServerApi = {
  kind: 'openai-compatible',
  defaultEndpoint: 'http://127.0.0.1:8000',
  framing: 'sse',

  async describe(http, settings): Promise<ServerDescription> {
    const list = (await http.get(v1(settings.endpoint, '/models'), 'model list')) as ModelList;
    const models = (list.data ?? []).filter((m) => typeof m.id === 'string');
    if (models.length === 0) throw new ServerError(`the server at ${settings.endpoint.origin} lists no models (GET ${v1(settings.endpoint, '/models')})`, 'modelNotFound');
    const model = settings.model ? models.find((m) => m.id === settings.model) : models[0];
    if (!model) throw new ServerError(`the server has no model "${settings.model}"; it serves ${models.map((m) => `"${m.id}"`).join(', ')}: check draftline.server.model`, 'modelNotFound');
    const owner = model.owned_by ?? '';
    const server = owner === 'vllm' ? 'vLLM' : owner === 'llamacpp' ? "llama-server's OpenAI endpoint" : 'an OpenAI-compatible server';
    // vLLM refuses `suffix`, llama-server ignores it: the template as text for both. llama-server
    // says which one its model's vocabulary calls for (its id is a file path, which names no family).
    const told = owner === 'llamacpp' ? await llamaServerTold(http, settings.endpoint) : null;
    const template = told ?? (owner === 'vllm' || owner === 'llamacpp' ? guessedTemplate(model.id!, NO_VOCABULARY[owner]) : undefined);
    return {
      model: model.id!,
      endpoint: settings.endpoint.href,
      server,
      contextSize: model.max_model_len ?? model.meta?.n_ctx,
      speculation: null,
      promptFormat: template ? templatePromptFormat(template, v1(settings.endpoint, '/completions')) : 'the `suffix` field (fill-in-the-middle by the server)',
      ...(template ? { template } : {}),
    };
  },

  completion(request, description, settings): CompletionCall {
    return { path: v1(settings.endpoint, '/completions'), body: completionBody(request, description.model, description.template) };
  },

  readEvent(data): StreamEvent | null {
    const chunk = data as CompletionChunk;
    if (typeof chunk !== 'object' || chunk === null) return null;
    if (chunk.error) throw new ServerError(`the server failed mid-completion: ${errorMessageOf(JSON.stringify(chunk)) ?? 'unknown error'}`, 'server');
    const choice = chunk.choices?.[0];
    const usage = chunk.usage;
    const finish = choice?.finish_reason ? FINISH[choice.finish_reason] : undefined;
    const t = chunk.timings;
    const figures =
      usage || finish || t
        ? {
            ...(usage ? { promptTokens: usage.prompt_tokens, generatedTokens: usage.completion_tokens, reusedPromptTokens: usage.prompt_tokens_details?.cached_tokens } : {}),
            ...(finish ? { stopReason: finish } : {}),
            ...(t ? { tokensPerSecond: t.predicted_per_second, draftProposed: t.draft_n, draftAccepted: t.draft_n_accepted } : {}),
          }
        : undefined;
    const tokens = reportedTokens(choice?.logprobs);
    // The stream ends with [DONE] after the usage chunk: the end of the body says done.
    return { text: choice?.text ?? '', done: false, figures, ...(tokens ? { tokens } : {}) };
  },

  rawCompletion(prompt, { maxTokens, stop }, description, settings): CompletionCall {
    return {
      path: v1(settings.endpoint, '/completions'),
      body: { model: description.model, prompt, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true }, ...(stop.length ? { stop } : {}) },
    };
  },

  withTopTokens(call, n) {
    // The completions API's `logprobs` is the number of most likely tokens reported at each
    // generated one (OpenAI allows up to 5; vLLM its --max-logprobs; llama-server reads it as n_probs).
    return { ...call, body: { ...call.body, logprobs: n } };
  },

  continuedAfter(call, forced) {
    // As text after the prompt (or the prefix, before a `suffix`): the API takes no mixed prompts.
    return {
      ...call,
      body: { ...call.body, prompt: (call.body.prompt as string) + forced.map((t) => t.text).join(''), max_tokens: Math.max(1, (call.body.max_tokens as number) - forced.length) },
    };
  },

  retryWithout(response, request, description, settings): CompletionCall | null {
    const said = errorMessageOf(response.body) ?? response.body;
    if (description.template || response.status !== 400 || !/suffix/i.test(said)) return null;
    // This server refuses `suffix`: from now on the model's template as text.
    const template = guessedTemplate(description.model, 'the server refused `suffix` and does not report its vocabulary');
    description.template = template;
    description.promptFormat = templatePromptFormat(template, v1(settings.endpoint, '/completions'));
    return { path: v1(settings.endpoint, '/completions'), body: completionBody(request, description.model, template) };
  },
};

/**
 * The template llama-server says its model's vocabulary calls for (llamaServerModel.ts), when its
 * own routes answer beside /v1: GET /props first (a proxy that forwards only /v1, or another server
 * that calls itself llamacpp, answers 404: then the guess, without more requests).
 */
async function llamaServerTold(http: ServerHttp, endpoint: URL): Promise<TemplateChoice | null> {
  try {
    const props = (await http.get(beside(endpoint, '/props'), 'server properties')) as { build_info?: unknown };
    if (typeof props?.build_info !== 'string') return null;
  } catch (error) {
    if (!(error instanceof ServerError) || error.transient) throw error;
    return null;
  }
  return llamaServerTemplate(http, (route) => beside(endpoint, route));
}

/** Why a server's template is guessed: it takes no `suffix`, and says nothing of its model's vocabulary. */
const NO_VOCABULARY = {
  vllm: 'vLLM refuses `suffix` and does not report the vocabulary',
  llamacpp: "llama-server ignores `suffix`, and its /props, /infill and /tokenize did not say what the model's vocabulary has",
} as const;

function completionBody(request: CompletionRequest, model: string, template: TemplateChoice | undefined) {
  const { prompt, stop } = template ? templatePrompt(request, template.spec) : { prompt: request.prefix, stop: stopStrings(request) };
  return {
    model,
    prompt,
    ...(template ? {} : { suffix: request.suffix }),
    max_tokens: request.maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    ...(stop.length ? { stop } : {}),
  };
}
