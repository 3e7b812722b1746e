// What differs between inference servers: how to check one, how to ask it for a completion, and how
// to read its streamed answer. Everything else (timeouts, cancellation, outages, stop rules, stats)
// is serverBackend.ts's, the same for all.
import type { BackendKind, CompletionRequest, RemoteServerInfo, StopReason } from '../shared/types';
import { anchoredSplit } from '../prompt/fimPrompt';
import { renderTextPrompt, templateSpec, type TemplateFamily } from '../prompt/templates';
import type { HttpResponse } from './http';

export type ServerKind = Exclude<BackendKind, 'local'>;

/** What the backend needs to talk to the server (settings, resolved). */
export interface ServerSettings {
  endpoint: URL;
  /** The model asked for ('' : the server's only or first one). */
  model: string;
  sendExtraContext: boolean;
}

/** The HTTP calls an API makes, with the endpoint, the key, the CA and the timeout applied. */
export interface ServerHttp {
  get(path: string, what: string): Promise<unknown>;
  post(path: string, body: unknown, what: string): Promise<unknown>;
}

export interface ServerDescription extends RemoteServerInfo {
  /** The model completions will be asked of. */
  model: string;
  /** Set when the prompt goes as the family's FIM template in text (a server without its own FIM). */
  templateFamily?: TemplateFamily;
}

/** The server's own figures, from the end of its answer (any may be missing). */
export interface ServerFigures {
  promptTokens?: number;
  reusedPromptTokens?: number;
  generatedTokens?: number;
  /** Decode speed as the server measured it. */
  tokensPerSecond?: number;
  draftProposed?: number;
  draftAccepted?: number;
  stopReason?: StopReason;
}

/** One event of the streamed answer. */
export interface StreamEvent {
  text: string;
  done: boolean;
  figures?: ServerFigures;
}

export interface CompletionCall {
  path: string;
  body: unknown;
  /** The request as this call sends it, when it differs (a window cut to fit): the next retry starts from it. */
  request?: CompletionRequest;
}

export interface ServerApi {
  readonly kind: ServerKind;
  /** The server's usual address on this machine, for an empty endpoint setting. */
  readonly defaultEndpoint: string;
  /** SSE (llama-server, OpenAI) or one JSON object a line (Ollama). */
  readonly framing: 'sse' | 'ndjson';
  /** Checks that the server answers and has the model; throws a ServerError that says what is wrong. */
  describe(http: ServerHttp, settings: ServerSettings): Promise<ServerDescription>;
  /** The streaming completion request. */
  completion(request: CompletionRequest, description: ServerDescription, settings: ServerSettings): CompletionCall;
  /** Reads one event's data (SSE `data:` or an NDJSON line), already parsed; null for events to skip. */
  readEvent(data: unknown): StreamEvent | null;
  /** A refused completion request the API can answer differently (e.g. without `suffix`): the call to try instead. */
  retryWithout?(response: { status: number; body: string }, request: CompletionRequest, description: ServerDescription, settings: ServerSettings): CompletionCall | null;
}

/** Turns a non-2xx answer into the error message of the API's own error body. */
export function errorMessageOf(body: string): string | undefined {
  try {
    const json = JSON.parse(body) as { error?: unknown; message?: unknown; detail?: unknown };
    const error = json.error;
    if (typeof error === 'string') return error;
    if (error && typeof error === 'object' && typeof (error as { message?: unknown }).message === 'string') return (error as { message: string }).message;
    if (typeof json.message === 'string') return json.message;
    if (typeof json.detail === 'string') return json.detail;
  } catch {
    // not JSON: the caller quotes the text
  }
  return undefined;
}

export type { HttpResponse };

/** The request's stop strings, and a newline for a single-line completion (the server stops there itself). */
export function stopStrings(request: CompletionRequest): string[] {
  return [...(request.stop ?? []), ...(request.singleLine ? ['\n'] : [])];
}

/**
 * The request as one text prompt in a model family's FIM template (for servers that take no
 * suffix), extra context included, with the stop strings that template needs on top of the
 * request's. Prefix-suffix-middle templates are line-anchored as on the local path
 * (prompt/fimPrompt.ts): the middle starts at the cursor's line group, so the server evaluates the
 * prompt the local path would, and typing within the group only appends to it (the server's prompt
 * cache keeps the rest). The caller has already taken the prefix's trailing blank off (serverBackend.ts).
 */
export function templatePrompt(request: CompletionRequest, family: TemplateFamily): { prompt: string; stop: string[] } {
  const spec = templateSpec(family);
  const extra = request.extraContext;
  const { head, middle } = spec.order === 'psm' ? anchoredSplit(request.prefix) : { head: request.prefix, middle: '' };
  const prompt = renderTextPrompt(spec, { prefix: head, middle, suffix: request.suffix, files: extra?.files, path: extra?.path, repoName: extra?.repoName });
  return { prompt, stop: [...stopStrings(request), ...spec.stop] };
}

/** What Show Stats says of a template-as-text prompt, and why the server gets one. */
export function templatePromptFormat(family: TemplateFamily, why: string): string {
  return `the ${templateSpec(family).label} fill-in-the-middle template as text (${why})`;
}
