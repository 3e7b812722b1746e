// Ollama's /api/generate: `suffix` makes it fill in the middle through the model's own template
// (models whose template takes a suffix say so with the "insert" capability in /api/show); others
// get the family's FIM template as text with `raw`. Answers stream as one JSON object a line.
import type { CompletionRequest } from '../shared/completion';
import type { StopReason } from '../shared/decoding';
import { ServerError } from './http';
import {
  type CompletionCall,
  errorMessageOf,
  guessedTemplate,
  type ReportedToken,
  type ServerApi,
  type ServerDescription,
  type StreamEvent,
  stopStrings,
  type TemplateChoice,
  templatePrompt,
  templatePromptFormat,
} from './serverApi';

interface Show {
  capabilities?: string[];
  model_info?: Record<string, unknown>;
  details?: { family?: string; parameter_size?: string; quantization_level?: string };
}

interface GenerateChunk {
  response?: string;
  done?: boolean;
  done_reason?: string;
  prompt_eval_count?: number;
  eval_count?: number;
  /** Nanoseconds. */
  eval_duration?: number;
  error?: string;
  /** With `logprobs` (Ollama 0.12.11 and later): each token of the chunk and, with `top_logprobs`, the most likely ones at its place. */
  logprobs?: { token?: string; logprob?: number; top_logprobs?: { token?: string; logprob?: number }[] }[];
}

function reportedTokens(logprobs: GenerateChunk['logprobs']): ReportedToken[] | undefined {
  if (!Array.isArray(logprobs)) return undefined;
  return logprobs.map((p) => ({
    text: p.token ?? '',
    top: (p.top_logprobs ?? [])
      .filter((t) => typeof t.token === 'string' && typeof t.logprob === 'number')
      .map((t) => ({ text: t.token!, logprob: t.logprob! }))
      .sort((a, b) => b.logprob - a.logprob),
  }));
}

const DONE: Record<string, StopReason> = { stop: 'eos', length: 'maxTokens' };

/** The first Ollama whose /api/generate takes `logprobs` and `top_logprobs` (api/types.go GenerateRequest). */
const LOGPROBS_SINCE = [0, 12, 11];

function olderThan(version: number[], than: number[]): boolean {
  for (let i = 0; i < than.length; i++) if ((version[i] ?? 0) !== than[i]) return (version[i] ?? 0) < than[i]!;
  return false;
}

export const ollamaApi: ServerApi = {
  kind: 'ollama',
  defaultEndpoint: 'http://127.0.0.1:11434',
  framing: 'ndjson',

  async describe(http, settings): Promise<ServerDescription> {
    const version = ((await http.get('/api/version', 'version check')) as { version?: string }).version;
    let model = settings.model;
    if (!model) {
      const tags = (await http.get('/api/tags', 'model list')) as { models?: { name?: string }[] };
      model = tags.models?.find((m) => typeof m.name === 'string')?.name ?? '';
      if (!model) throw new ServerError('Ollama has no models yet: pull one (e.g. `ollama pull qwen2.5-coder:1.5b-base`) and set draftline.server.model', 'modelNotFound');
    }
    const show = (await http.post('/api/show', { model }, `model "${model}"`)) as Show;
    const insert = show.capabilities?.includes('insert') ?? false;
    const contextKey = Object.keys(show.model_info ?? {}).find((k) => k.endsWith('.context_length'));
    const template = insert ? undefined : guessedTemplate(model, NO_INSERT);
    return {
      model,
      endpoint: settings.endpoint.href,
      server: `Ollama${version ? ` ${version}` : ''}`,
      contextSize: contextKey ? Number(show.model_info![contextKey]) : undefined,
      speculation: null,
      promptFormat: template ? templatePromptFormat(template, '/api/generate (raw)') : "`suffix` through the model's own template",
      ...(template ? { template } : {}),
    };
  },

  completion(request, description): CompletionCall {
    return { path: '/api/generate', body: generateBody(request, description.model, description.template) };
  },

  rawCompletion(prompt, { maxTokens, stop }, description): CompletionCall {
    // `raw`: the prompt as it is, no template of the model's around it (Ollama tokenizes its control tokens).
    const options = { temperature: 0, top_k: 1, num_predict: maxTokens, ...(stop.length ? { stop } : {}) };
    return { path: '/api/generate', body: { model: description.model, stream: true, keep_alive: '30m', prompt, raw: true, options } };
  },

  topTokensSince: `Ollama reports token probabilities from version ${LOGPROBS_SINCE.join('.')}`,

  withTopTokens(call, n, description) {
    // An older Ollama ignores the fields it does not know: asking would cost a completion for nothing.
    const version = /^Ollama (\d+)\.(\d+)\.(\d+)/.exec(description.server)?.slice(1).map(Number);
    if (version && olderThan(version, LOGPROBS_SINCE)) return { unavailable: `${description.server} reports no token probabilities (they came with Ollama ${LOGPROBS_SINCE.join('.')})` };
    return { ...call, body: { ...call.body, logprobs: true, top_logprobs: n } };
  },

  continuedAfter(call, forced) {
    // As text after the prompt (before the `suffix`, through the model's template, or in the raw FIM prompt).
    const options = call.body.options as { num_predict: number };
    return {
      ...call,
      body: { ...call.body, prompt: (call.body.prompt as string) + forced.map((t) => t.text).join(''), options: { ...options, num_predict: Math.max(1, options.num_predict - forced.length) } },
    };
  },

  retryWithout(response, request, description): CompletionCall | null {
    // "<model> does not support insert" (400): its template takes no suffix after all.
    if (description.template || response.status !== 400 || !/insert/i.test(errorMessageOf(response.body) ?? '')) return null;
    const template = guessedTemplate(description.model, NO_INSERT);
    description.template = template;
    description.promptFormat = templatePromptFormat(template, '/api/generate (raw)');
    return { path: '/api/generate', body: generateBody(request, description.model, template) };
  },

  readEvent(data): StreamEvent | null {
    const chunk = data as GenerateChunk;
    if (typeof chunk !== 'object' || chunk === null) return null;
    if (typeof chunk.error === 'string') throw new ServerError(`Ollama failed mid-completion: ${chunk.error}`, 'server');
    const done = chunk.done === true;
    const tokens = reportedTokens(chunk.logprobs);
    return {
      text: typeof chunk.response === 'string' ? chunk.response : '',
      done,
      ...(tokens ? { tokens } : {}),
      figures: done
        ? {
            promptTokens: chunk.prompt_eval_count,
            generatedTokens: chunk.eval_count,
            tokensPerSecond: chunk.eval_count && chunk.eval_duration ? (chunk.eval_count * 1e9) / chunk.eval_duration : undefined,
            stopReason: chunk.done_reason ? DONE[chunk.done_reason] : undefined,
          }
        : undefined,
    };
  },
};

/** Why an Ollama model's template is guessed. */
const NO_INSERT = "the model's Ollama template takes no suffix, and Ollama does not report the vocabulary";

function generateBody(request: CompletionRequest, model: string, template: TemplateChoice | undefined) {
  const { prompt, stop } = template ? templatePrompt(request, template.spec) : { prompt: request.prefix, stop: stopStrings(request) };
  const options = { temperature: 0, top_k: 1, num_predict: request.maxTokens, ...(stop.length ? { stop } : {}) };
  // Keep the model loaded between keystrokes (Ollama unloads idle models after 5 minutes).
  const common = { model, stream: true, keep_alive: '30m', prompt, options };
  // Ollama's template has no place for other files: with `suffix`, a server gets only the window.
  return template ? { ...common, raw: true } : { ...common, suffix: request.suffix };
}
