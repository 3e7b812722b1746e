// What differs between inference servers: how to check one, how to ask it for a completion, and how
// to read its streamed answer. Everything else (timeouts, cancellation, outages, stop rules, stats)
// is serverBackend.ts's, the same for all.
import type { BackendKind } from '../shared/settings';
import type { CompletionRequest } from '../shared/completion';
import type { RemoteServerInfo } from '../shared/backendInfo';
import type { StopReason } from '../shared/decoding';
import { ANCHOR_LINE_GROUP, anchoredSplit } from '../prompt/fimPrompt';
import { guessTemplateFamily, renderTextPrompt, type TemplateSpec, templateSpec } from '../prompt/templates';
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
  /** `path` is joined to the endpoint; a URL is taken as it is (llama-server's own routes next to its /v1). */
  get(path: string | URL, what: string): Promise<unknown>;
  post(path: string | URL, body: unknown, what: string): Promise<unknown>;
}

/** The prompt template a server's text prompts use, and why it was chosen (Show Stats says both). */
export interface TemplateChoice {
  spec: TemplateSpec;
  /** E.g. "chosen from the model's vocabulary, as llama-server reports it". */
  why: string;
}

export interface ServerDescription extends RemoteServerInfo {
  /** The model completions will be asked of. */
  model: string;
  /** Set when the prompt goes as a FIM template in text (a server without its own FIM, or whose FIM layout is not the local one). */
  template?: TemplateChoice;
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

/** A token the server names: by id where its API gives ids (llama-server), and by its text. */
export interface NamedToken {
  id?: number;
  text: string;
}

/** A generated token with the most likely tokens at its place, as the server reports them (log probabilities). */
export interface ReportedToken extends NamedToken {
  /** Most likely first; log probabilities of the softmax over the logits, so differences are logit margins. */
  top: (NamedToken & { logprob: number })[];
}

/** One event of the streamed answer. */
export interface StreamEvent {
  text: string;
  done: boolean;
  figures?: ServerFigures;
  /** The tokens this event's text is made of, with their alternatives (asked for with ServerApi.withTopTokens). */
  tokens?: ReportedToken[];
}

export interface CompletionCall {
  path: string;
  body: Record<string, unknown>;
  /** The request as this call sends it, when it differs (a window cut to fit): the next retry starts from it. */
  request?: CompletionRequest;
}

/** What a raw completion asks besides its prompt. */
export interface RawCompletionOptions {
  maxTokens: number;
  /** Texts that end the output (cut before them). */
  stop: string[];
}

export interface ServerApi {
  readonly kind: ServerKind;
  /** The server's usual address on this machine, for an empty endpoint setting. */
  readonly defaultEndpoint: string;
  /** SSE (llama-server, OpenAI) or one JSON object a line (Ollama). */
  readonly framing: 'sse' | 'ndjson';
  /** Checks that the server answers and has the model; throws a ServerError that says what is wrong. */
  describe(http: ServerHttp, settings: ServerSettings): Promise<ServerDescription>;
  completion(request: CompletionRequest, description: ServerDescription, settings: ServerSettings): CompletionCall;
  /** Reads one event's data (SSE `data:` or an NDJSON line), already parsed; null for events to skip. */
  readEvent(data: unknown): StreamEvent | null;
  /**
   * Alternatives: the completion call that also reports the `n` most likely tokens at
   * each generated token. Left out by an API without token probabilities; `unavailable` says why
   * this call cannot.
   */
  withTopTokens?(call: CompletionCall, n: number, description: ServerDescription): CompletionCall | { unavailable: string };
  /** The completion call continued after `forced` tokens: by id where the API takes ids in a prompt, else as text. */
  continuedAfter?(call: CompletionCall, forced: NamedToken[]): CompletionCall;
  /** Why an answer may carry no token probabilities although they were asked for (an older server version). */
  readonly topTokensSince?: string;
  /**
   * A greedy, streamed completion of a prompt given whole as text (a next-edit prompt):
   * the server tokenizes it with its control tokens and adds BOS where its model wants one, and
   * nothing is laid out around it (no template, no suffix).
   */
  rawCompletion(prompt: string, options: RawCompletionOptions, description: ServerDescription, settings: ServerSettings): CompletionCall;
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
 * The request as one text prompt in a FIM template (for servers that tokenize the template's special
 * tokens themselves), extra context included, with the stop strings that template needs on top of
 * the request's. Prefix-suffix-middle templates are line-anchored as on the local path
 * (prompt/fimPrompt.ts): the middle starts at the cursor's line group, so the server evaluates the
 * prompt the local path would, and typing within the group only appends to it (the server's prompt
 * cache keeps the rest). The caller has already taken the prefix's trailing blank off (serverBackend.ts).
 */
export function templatePrompt(request: CompletionRequest, spec: TemplateSpec): { prompt: string; stop: string[] } {
  const extra = request.extraContext;
  const { head, middle } = spec.order === 'psm' ? anchoredSplit(request.prefix, ANCHOR_LINE_GROUP, request.prefixLine) : { head: request.prefix, middle: '' };
  const prompt = renderTextPrompt(spec, { prefix: head, middle, suffix: request.suffix, files: extra?.files, path: extra?.path, repoName: extra?.repoName });
  return { prompt, stop: [...stopStrings(request), ...spec.stop] };
}

/** The template guessed from a model's name, when the server says nothing better. */
export function guessedTemplate(model: string, why: string): TemplateChoice {
  const family = guessTemplateFamily(model);
  const guess = family === 'prefix-only' ? `the model's name "${model}" names no known family` : `guessed from the model's name "${model}"`;
  return { spec: templateSpec(family), why: `${guess}; ${why}` };
}

/**
 * What Show Stats says of a template-as-text prompt: the template's label as the local path shows it
 * (Target: name (size, label)), how it is laid out, and why it was chosen.
 */
export function templatePromptFormat(template: TemplateChoice, route: string): string {
  const { spec, why } = template;
  const layout = spec.order === 'psm' ? ', line-anchored as on the local path' : '';
  return `the ${spec.label} template as text to ${route}${layout} (${why})`;
}
