// Ollama's /api/generate: `suffix` makes it fill in the middle through the model's own template
// (models whose template takes a suffix say so with the "insert" capability in /api/show); others
// get the family's FIM template as text with `raw`. Answers stream as one JSON object a line.
import type { CompletionRequest, StopReason } from '../shared/types';
import { ServerError } from './http';
import {
  type CompletionCall,
  errorMessageOf,
  guessedTemplate,
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
}

const DONE: Record<string, StopReason> = { stop: 'eos', length: 'maxTokens' };

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
    return {
      text: typeof chunk.response === 'string' ? chunk.response : '',
      done,
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
