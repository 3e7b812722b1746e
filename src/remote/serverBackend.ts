// Completions from an inference server (llama-server, an OpenAI-compatible server such as vLLM, or
// Ollama), behind the same InferenceBackend seam as the in-process worker: the engine's cache,
// post-processing, cancellation, status bar and stats work the same. What each server's API looks
// like is in its ServerApi (llamaServerApi.ts, openAiApi.ts, ollamaApi.ts).
import type { BackendEvents, InferenceBackend, OutageStatus } from '../backend/backend';
import { splitTrailingBlank } from '../prompt/fimPrompt';
import type { NextEditRequest, NextEditResult, TextReplacement } from '../nextEdit/types';
import type { AlternativesResult, CompletionRequest, CompletionResult } from '../shared/completion';
import type { BackendInfo } from '../shared/backendInfo';
import type { BackendKind, BackendSettings } from '../shared/settings';
import { readText, request as httpRequest, ServerError, snippet, type HttpResponse } from './http';
import { errorMessageOf, type CompletionCall, type NamedToken, type ReportedToken, type ServerApi, type ServerDescription, type ServerHttp, type ServerSettings } from './serverApi';
import { branchableLength, branchPoint } from './serverBranchPoint';
import { type NextEditServer, serverNextEdit } from './serverNextEdit';
import { asServerError, httpError, type RequestTarget } from './serverErrors';
import { joinUrl, readCaFile, resolveServerSettings } from './serverSettings';
import { cancelled, type CompletionExtra, readServerCompletion } from './serverStream';

export type { BackendSettings };

export interface ServerBackendDeps {
  /** The API key for this endpoint (VS Code's SecretStorage), if one is set. */
  apiKey(endpoint: URL): Promise<string | undefined>;
  now?(): number;
  /** Waits between attempts (tests make it instant). */
  sleep?(ms: number): Promise<void>;
  /** First wait after the server went away; doubles up to maxOutageMs. */
  firstOutageMs?: number;
  maxOutageMs?: number;
}

const LOAD_ATTEMPTS = 3;

export class ServerBackend implements InferenceBackend {
  readonly kind: BackendKind;
  /**
   * Where alternatives may branch off the greedy completion, as InferenceSession.alternativesScope:
   * only before its first line with content is complete (the default: each alternative shows another
   * first line), or anywhere in it.
   */
  alternativesScope: 'completion' | 'firstLine' = 'firstLine';
  private description: ServerDescription | null = null;
  private settingsResolved: ServerSettings | null = null;
  private ca: string | undefined;
  private down: { description: string; at: number; failures: number; timer: NodeJS.Timeout } | null = null;
  private disposed = false;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(
    private readonly api: ServerApi,
    private readonly settings: BackendSettings,
    private readonly deps: ServerBackendDeps,
    private readonly events: BackendEvents,
  ) {
    this.kind = api.kind;
    this.now = deps.now ?? (() => Date.now());
    this.sleep = deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** Checks the server and its model (retrying a server that is starting up), and says what it found. */
  async load(): Promise<BackendInfo> {
    const settings = resolveServerSettings(this.settings, this.api.defaultEndpoint);
    this.ca = readCaFile(this.settings.caFile);
    let attempt = 0;
    for (;;) {
      try {
        const description = await this.api.describe(this.http(settings), settings);
        this.description = description;
        this.settingsResolved = settings;
        this.events.log('info', `${this.kind} at ${settings.endpoint.origin}: ${description.server}, model ${description.model}; ${description.promptFormat}`);
        const { model, template: _template, ...remote } = description;
        return { kind: this.kind, model, remote };
      } catch (error) {
        const e = asServerError(error);
        if (!e.transient || ++attempt >= LOAD_ATTEMPTS || this.disposed) {
          // Not there yet (or gone): keep checking with growing waits, and connect when it answers.
          if (e.transient && !this.disposed) {
            this.settingsResolved = settings;
            this.startOutage(e.message);
          }
          throw this.explain(e, settings);
        }
        const wait = 500 * 2 ** (attempt - 1);
        this.events.log('warn', `${this.kind}: ${e.message}; trying again in ${wait} ms`);
        await this.sleep(wait);
      }
    }
  }

  async complete(request: CompletionRequest, signal?: AbortSignal): Promise<CompletionResult> {
    const { description, settings, sent, blank } = this.prepare(request);
    const started = this.now();
    try {
      let call = this.api.completion(sent, description, settings);
      let response = await this.post(settings, call, signal, true);
      // A refused request the API can put differently (no `suffix`, a window cut to fit), at most twice.
      for (let retries = 0; response.status >= 300; retries++) {
        const body = await readText(response, undefined, this.settings.timeoutMs).catch(() => '');
        const retry = retries < 2 ? (this.api.retryWithout?.({ status: response.status, body }, call.request ?? sent, description, settings) ?? null) : null;
        if (!retry) throw httpError(this.target, response.status, body, 'completion');
        this.events.log('info', `${this.kind}: ${errorMessageOf(body) ?? snippet(body)}: asking again (${retry.path})`);
        call = retry;
        response = await this.post(settings, call, signal, true);
      }
      const result = await this.readCompletion(response, sent, started, signal);
      // The model wrote the blank the user had typed: the ghost text starts after it.
      if (blank && result.text.startsWith(blank)) result.text = result.text.slice(blank.length);
      return result;
    } catch (error) {
      const e = this.failure(error, signal);
      if (!e) return cancelled(this.now() - started);
      throw e;
    }
  }

  /**
   * Alternatives as the in-process path computes them, where the API reports token
   * probabilities: the greedy completion with the most likely tokens at each of its tokens, the
   * token where the top two were closest (the smallest logit margin), then one greedy request per
   * next most likely token there, with the greedy tokens before it and that token forced after the
   * prompt (by id on llama-server, whose prompt cache keeps all of it; as text elsewhere). The same
   * stop rules, timeouts and cancellation as a completion; the requests run side by side.
   */
  async alternatives(request: CompletionRequest, count: number, signal?: AbortSignal): Promise<AlternativesResult> {
    const { description, settings, sent, blank } = this.prepare(request);
    const started = this.now();
    const none = (limitedBy: string): AlternativesResult => ({ completions: [], limitedBy, totalMs: this.now() - started });
    if (!this.api.withTopTokens || !this.api.continuedAfter) return none(`the ${this.kind} API reports no token probabilities: one suggestion only`);
    const plain = this.api.completion(sent, description, settings);
    const asked = this.api.withTopTokens(plain, count + 1, description);
    if ('unavailable' in asked) return none(asked.unavailable);
    const continuedAfter = this.api.continuedAfter.bind(this.api);
    try {
      const tokens: ReportedToken[] = [];
      const greedy = await this.completionOf(asked, sent, signal, { tokens });
      if (greedy.stats.stopReason === 'abort') return { completions: [], totalMs: this.now() - started };
      // Where the greedy completion writes the blank the user typed (the prompt left it out; the ghost
      // text starts after it), an alternative must too: one that does not would rewrite text left of the cursor.
      const writesBlank = (text: string) => text.startsWith(blank) || blank.startsWith(text);
      const scope = this.alternativesScope === 'firstLine' ? branchableLength(greedy.text) : greedy.text.length;
      const branch = branchPoint(tokens, scope, (forced, greedyText) => !blank || !writesBlank(greedyText) || writesBlank(forced));
      if (!branch) {
        const why =
          tokens.length === 0
            ? `the ${description.server} answer had no token probabilities${this.api.topTokensSince ? ` (${this.api.topTokensSince})` : ''}`
            : 'no token of the greedy completion came with another usable likely token';
        return none(why);
      }
      const others = branch.others.slice(0, count);
      const completions = await Promise.all(
        others.map(async (first) => {
          const forced: NamedToken[] = [...branch.before, first];
          const call = continuedAfter(plain, forced);
          return this.completionOf(call, sent, signal, { forced: forced.map((t) => t.text) });
        }),
      );
      for (const c of completions) if (blank && c.text.startsWith(blank)) c.text = c.text.slice(blank.length);
      const limitedBy = others.length < count ? `the server reported ${others.length} other likely token${others.length === 1 ? '' : 's'} where the greedy completion was least certain` : undefined;
      return {
        completions,
        branch: { tokenIndex: branch.tokenIndex, margin: branch.margin },
        ...(limitedBy ? { limitedBy } : {}),
        totalMs: this.now() - started,
      };
    } catch (error) {
      const e = this.failure(error, signal);
      if (!e) return { completions: [], totalMs: this.now() - started };
      throw e;
    }
  }

  /** A next-edit suggestion: serverNextEdit.ts, over this backend's connection and stream reading. */
  nextEdit(request: NextEditRequest, signal?: AbortSignal, onEdit?: (edit: TextReplacement, ms: number) => void): Promise<NextEditResult> {
    const server: NextEditServer = {
      api: this.api,
      now: this.now,
      connection: () => this.connection(),
      stream: (call, sent, started, signal, onText) => this.completionOf(call, sent, signal, { onText }, 'next-edit suggestion', started),
      failure: (error, signal) => this.failure(error, signal),
    };
    return serverNextEdit(server, request, signal, onEdit);
  }

  /** One streamed completion of `call` (no retries: an alternative's call was already accepted as a completion; a next edit's is not retried). */
  private async completionOf(
    call: CompletionCall,
    sent: CompletionRequest,
    signal: AbortSignal | undefined,
    extra: CompletionExtra,
    what = 'alternatives',
    started = this.now(),
  ): Promise<CompletionResult> {
    const settings = this.settingsResolved!;
    const response = await this.post(settings, call, signal, true);
    if (response.status >= 300) {
      const body = await readText(response, undefined, this.settings.timeoutMs).catch(() => '');
      throw httpError(this.target, response.status, body, what);
    }
    return this.readCompletion(response, sent, started, signal, extra);
  }

  /** The connection, and the request as every API sends it. */
  private prepare(request: CompletionRequest): { description: ServerDescription; settings: ServerSettings; sent: CompletionRequest; blank: string } {
    const { description, settings } = this.connection();
    // The prefix's trailing spaces and tabs stay out of the prompt, for every API, as on the local
    // path (prompt/fimPrompt.ts splitTrailingBlank: a prompt that ends in a lone whitespace token
    // derails the model: `  ` after a line gets `nst m = value;`); the ghost text loses them again
    // below. Only the window around the cursor leaves the machine unless the user opted in to more.
    const { prefix, blank } = splitTrailingBlank(request.prefix);
    const sent: CompletionRequest = { ...request, prefix, ...(settings.sendExtraContext ? {} : { extraContext: undefined }) };
    return { description, settings, sent, blank };
  }

  /** What every request needs: the server's description and settings; fails fast while it is not connected, or down. */
  private connection(): { description: ServerDescription; settings: ServerSettings } {
    const description = this.description;
    const settings = this.settingsResolved;
    if (!description || !settings) throw new ServerError(`the ${this.kind} backend is not connected yet`, 'unreachable');
    if (this.down) throw new ServerError(`${this.down.description}; trying again in ${Math.ceil(this.outage()!.remainingMs / 1000)} s`, 'unreachable');
    return { description, settings };
  }

  /** A request's error as a ServerError (a lost server's outage started), or null where it was cancelled. */
  private failure(error: unknown, signal: AbortSignal | undefined): ServerError | null {
    const e = asServerError(error);
    if (e.code === 'cancelled' || signal?.aborted) return null;
    if (e.code === 'unreachable') this.startOutage(e.message);
    return e;
  }

  /** A server decodes its own way: Draftline's speculation settings do not apply. */
  async configure(): Promise<void> {}
  // A server gets only each request's window: no document mirrors, no accepted-completion memory.
  openDocument(): void {}
  editDocument(): void {}
  closeDocument(): void {}
  accepted(): void {}

  outage(): OutageStatus | null {
    if (!this.down) return null;
    return { description: this.down.description, remainingMs: Math.max(0, this.down.at - this.now()), failuresInARow: this.down.failures };
  }

  dispose(): void {
    this.disposed = true;
    if (this.down) clearTimeout(this.down.timer);
    this.down = null;
  }

  private async headers(endpoint: URL): Promise<Record<string, string>> {
    const key = await this.deps.apiKey(endpoint);
    return key ? { authorization: `Bearer ${key}` } : {};
  }

  /** One request to the server: its key, its CA and the timeout applied. */
  private async send(settings: ServerSettings, method: 'GET' | 'POST', path: string | URL, body: unknown, signal?: AbortSignal): Promise<HttpResponse> {
    return httpRequest(typeof path === 'string' ? joinUrl(settings.endpoint, path) : path, {
      method,
      body,
      headers: await this.headers(settings.endpoint),
      ca: this.ca,
      signal,
      timeoutMs: this.settings.timeoutMs,
    });
  }

  private http(settings: ServerSettings): ServerHttp {
    const call = async (method: 'GET' | 'POST', path: string | URL, body: unknown, what: string) => {
      const response = await this.send(settings, method, path, body);
      const text = await readText(response, undefined, this.settings.timeoutMs);
      if (response.status >= 300) throw httpError(this.target, response.status, text, what);
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new ServerError(
          `${what}: the answer of ${typeof path === 'string' ? `${settings.endpoint.origin}${path}` : path.href} is not JSON (${snippet(text)}): is this a ${this.kind} server?`,
          'malformed',
          response.status,
        );
      }
    };
    return { get: (path, what) => call('GET', path, undefined, what), post: (path, body, what) => call('POST', path, body, what) };
  }

  /** The streaming request; a connection the server had already closed (a stale keep-alive socket) is tried once more. */
  private async post(settings: ServerSettings, call: CompletionCall, signal: AbortSignal | undefined, retry: boolean): Promise<HttpResponse> {
    try {
      return await this.send(settings, 'POST', call.path, call.body, signal);
    } catch (error) {
      const e = asServerError(error);
      if (retry && e.code === 'unreachable' && /closed the connection/.test(e.message) && !signal?.aborted) return this.post(settings, call, signal, false);
      throw e;
    }
  }

  /** Reads the stream (serverStream.ts) with this backend's template stops and timeout. */
  private readCompletion(response: HttpResponse, request: CompletionRequest, started: number, signal: AbortSignal | undefined, extra: CompletionExtra = {}): Promise<CompletionResult> {
    const writtenStops = this.description?.template?.spec.writtenStops ?? [];
    return readServerCompletion({ api: this.api, writtenStops, timeoutMs: this.settings.timeoutMs, now: this.now }, response, request, started, signal, extra);
  }

  /** Who a refused request was addressed to, for its message. */
  private get target(): RequestTarget {
    return { kind: this.kind, where: this.settingsResolved?.endpoint.origin ?? this.settings.endpoint, model: this.settings.model };
  }

  private explain(error: ServerError, settings: ServerSettings): ServerError {
    if (error.code === 'unreachable' && !this.settings.endpoint) {
      return new ServerError(`${error.message} (draftline.server.endpoint is empty, so the ${this.kind} default ${settings.endpoint.origin} was tried)`, error.code, error.status);
    }
    return error;
  }

  /** The server went away: completions fail fast until a check with growing waits finds it again. */
  private startOutage(description: string): void {
    if (this.down || this.disposed) return;
    const first = this.deps.firstOutageMs ?? 1000;
    const max = this.deps.maxOutageMs ?? 30_000;
    const schedule = (failures: number) => {
      const wait = Math.min(max, first * 2 ** (failures - 1));
      const timer = setTimeout(() => void probe(failures), wait);
      timer.unref?.();
      this.down = { description, at: this.now() + wait, failures, timer };
    };
    const probe = async (failures: number) => {
      if (this.disposed || !this.settingsResolved) return;
      try {
        this.description = await this.api.describe(this.http(this.settingsResolved), this.settingsResolved);
        this.down = null;
        this.events.log('info', `${this.kind}: the server answers again`);
        this.events.onRecovered();
      } catch (error) {
        if (this.disposed) return;
        const e = asServerError(error);
        if (!e.transient) {
          // It answers, but refuses (a changed key, a model gone): waiting will not fix that. The
          // controller's load then shows the refusal itself.
          this.down = null;
          this.events.log('warn', `${this.kind}: the server answers again but refuses: ${e.message}`);
          this.events.onRecovered();
          return;
        }
        this.events.log('debug', `${this.kind}: still unreachable: ${e.message}`);
        schedule(failures + 1);
        this.events.onOutage();
      }
    };
    this.events.log('warn', `${this.kind}: ${description}`);
    schedule(1);
    this.events.onOutage();
  }
}
