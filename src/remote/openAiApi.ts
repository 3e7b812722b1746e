// OpenAI-compatible /v1/completions (vLLM, llama-server's OpenAI endpoint, LM Studio, hosted APIs).
// The `suffix` field is the API's fill-in-the-middle, but vLLM refuses it (400) and llama-server
// ignores it silently (test/fixtures/remote/): for those, and after any refusal, the prompt is the
// model family's FIM template as plain text (prompt/templates.ts), which the server tokenizes.
import type { CompletionRequest, StopReason } from '../shared/types';
import { guessTemplateFamily, type TemplateFamily } from '../prompt/templates';
import { ServerError } from './http';
import { type CompletionCall, errorMessageOf, type ServerApi, type ServerDescription, type StreamEvent, stopStrings, templatePrompt, templatePromptFormat } from './serverApi';

interface ModelList {
  data?: { id?: string; owned_by?: string; max_model_len?: number; meta?: { n_ctx?: number } }[];
}

interface CompletionChunk {
  choices?: { text?: string; finish_reason?: string | null }[];
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
    // vLLM refuses `suffix`, llama-server ignores it: the template as text for both.
    const family = owner === 'vllm' || owner === 'llamacpp' ? guessTemplateFamily(model.id!) : undefined;
    return {
      model: model.id!,
      endpoint: settings.endpoint.href,
      server,
      contextSize: model.max_model_len ?? model.meta?.n_ctx,
      speculation: null,
      promptFormat: family ? textPromptFormat(family) : 'the `suffix` field (fill-in-the-middle by the server)',
      ...(family ? { templateFamily: family } : {}),
    };
  },

  completion(request, description, settings): CompletionCall {
    const family = description.templateFamily;
    return { path: v1(settings.endpoint, '/completions'), body: completionBody(request, description.model, family) };
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
    // The stream ends with [DONE] after the usage chunk: the end of the body says done.
    return { text: choice?.text ?? '', done: false, figures };
  },

  retryWithout(response, request, description, settings): CompletionCall | null {
    const said = errorMessageOf(response.body) ?? response.body;
    const family = description.templateFamily;
    if (family || response.status !== 400 || !/suffix/i.test(said)) return null;
    // This server refuses `suffix`: from now on the model's template as text.
    const guessed = guessTemplateFamily(description.model);
    description.templateFamily = guessed;
    description.promptFormat = textPromptFormat(guessed);
    return { path: v1(settings.endpoint, '/completions'), body: completionBody(request, description.model, guessed) };
  },
};

/** The server refuses or ignores `suffix`. */
const textPromptFormat = (family: TemplateFamily) => templatePromptFormat(family, 'the server does not take `suffix`');

function completionBody(request: CompletionRequest, model: string, family: TemplateFamily | undefined) {
  const { prompt, stop } = family ? templatePrompt(request, family) : { prompt: request.prefix, stop: stopStrings(request) };
  return {
    model,
    prompt,
    ...(family ? {} : { suffix: request.suffix }),
    max_tokens: request.maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    ...(stop.length ? { stop } : {}),
  };
}
