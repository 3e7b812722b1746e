// Reading a server's streamed completion (SSE, NDJSON or one JSON object) through the same stop
// rules as local decoding, so that a server's completion ends where a local one would.
import { createParser } from 'eventsource-parser';
import type { CompletionRequest, CompletionResult } from '../shared/completion';
import type { GenerationStats } from '../shared/generationStats';
import { requestStops, StopRules } from '../stopping/stopRules';
import { ServerError, snippet, type HttpResponse } from './http';
import type { ReportedToken, ServerApi, ServerFigures, StreamEvent } from './serverApi';

/** What a completion read for alternatives carries besides its text. */
export interface CompletionExtra {
  /** Texts forced after the prompt: the completion starts with them. */
  forced?: string[];
  /** Filled with the tokens the server reports, while they match its text. */
  tokens?: ReportedToken[];
  /** The output so far (the stop rules' text), after each piece of it (a next-edit's streamed edits). */
  onText?(text: string): void;
}

/** What reading a stream needs of its backend. */
export interface StreamReading {
  api: ServerApi;
  /** The template's stop tokens the server writes as text (they end the completion as they do locally). */
  writtenStops: readonly string[];
  /** How long the server may send nothing before the read gives up. */
  timeoutMs: number;
  now(): number;
}

/** Reads the stream through the same stop rules as local decoding; stops the server once they say stop. */
export async function readServerCompletion(
  reading: StreamReading,
  response: HttpResponse,
  request: CompletionRequest,
  started: number,
  signal: AbortSignal | undefined,
  extra: CompletionExtra = {},
): Promise<CompletionResult> {
  const { api, timeoutMs } = reading;
  const completion = new StreamedCompletion(request, reading.writtenStops, extra, reading.now, started);
  const framing = new EventFraming(framingOf(String(response.headers['content-type'] ?? ''), api.framing));
  const idle = setIdleTimer(timeoutMs, () => response.close());
  try {
    // Text forced after the prompt (an alternative's first tokens) goes through the stop rules first.
    let over = completion.force(extra.forced ?? []);
    const decoder = new TextDecoder();
    for await (const chunk of over ? [] : response.body) {
      idle.reset();
      framing.feed(decoder.decode(chunk, { stream: true }));
      if (framing.malformed !== undefined || (over = completion.consume(framing.events, api))) break;
    }
    if (!over && framing.malformed === undefined) {
      framing.finish();
      completion.consume(framing.events, api);
      // The body ended as it should (OpenAI's ends after its usage chunk and [DONE]).
      completion.serverDone = true;
    }
  } catch (error) {
    if (idle.fired && !signal?.aborted) throw new ServerError(`the ${api.kind} server sent nothing for ${(timeoutMs / 1000).toFixed(1)} s in the middle of a completion`, 'timeout');
    throw error;
  } finally {
    idle.clear();
    // Stopped early (our stop rules): closing the connection stops the server's work.
    if (!completion.serverDone) response.close();
  }
  if (signal?.aborted) return cancelled(reading.now() - started);
  if (framing.malformed !== undefined) throw new ServerError(`the ${api.kind} server's answer is not what its API sends (${snippet(framing.malformed)})`, 'malformed');
  return { text: completion.text, stats: completion.stats(started) };
}

/** A completion's result when it was cancelled: no text, nothing generated. */
export function cancelled(totalMs: number): CompletionResult {
  return {
    text: '',
    stats: { promptTokens: 0, reusedPromptTokens: 0, generatedTokens: 0, promptMs: 0, timeToFirstTokenMs: 0, totalMs, stopReason: 'abort' },
  };
}

type Framing = 'sse' | 'ndjson' | 'json';

/** A server that answers one JSON object (no stream) is read the same way. */
function framingOf(contentType: string, apiFraming: ServerApi['framing']): Framing {
  return contentType.includes('text/event-stream') ? 'sse' : contentType.includes('ndjson') || apiFraming === 'ndjson' ? 'ndjson' : 'json';
}

/** Cuts the body's text into parsed events; keeps the first data that is not JSON in `malformed`. */
class EventFraming {
  readonly events: unknown[] = [];
  malformed: string | undefined;
  private readonly parser = createParser({ onEvent: (event) => this.take(event.data) });
  private lineBuffer = '';
  private whole = '';

  constructor(private readonly framing: Framing) {}

  feed(text: string): void {
    if (this.framing === 'sse') this.parser.feed(text);
    else if (this.framing === 'ndjson') {
      this.lineBuffer += text;
      const lines = this.lineBuffer.split('\n');
      this.lineBuffer = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) this.take(line);
    } else this.whole += text;
  }

  /** The body ended: what is left unframed is the last event. */
  finish(): void {
    if (this.framing === 'ndjson' && this.lineBuffer.trim()) this.take(this.lineBuffer);
    if (this.framing === 'json' && this.whole.trim()) this.take(this.whole);
  }

  private take(data: string): void {
    if (data === '[DONE]') return;
    try {
      this.events.push(JSON.parse(data));
    } catch {
      this.malformed ??= data;
    }
  }
}

/** The completion so far: its pieces through the stop rules, the server's figures, when it began. */
class StreamedCompletion {
  private readonly chunks: string[] = [];
  private readonly stop: StopRules;
  private readonly figures: ServerFigures = {};
  private firstTokenAt: number | undefined;
  /** Whether the server ended the completion itself (else it is stopped by closing the connection). */
  serverDone = false;
  /**
   * The reported tokens are kept while each event's text is exactly theirs (a stop word the server
   * held back breaks that): the text of the tokens kept is then the completion's text so far.
   */
  private tokensAligned: boolean;

  constructor(
    request: CompletionRequest,
    writtenStops: readonly string[],
    private readonly extra: CompletionExtra,
    private readonly now: () => number,
    /** When the request was sent: its time budget counts from then. */
    started: number,
  ) {
    const chunks = this.chunks;
    this.stop = new StopRules({
      // Each streamed piece is one "token" here: the rules only need the text so far.
      detokenize: (ids) => ids.map((i) => chunks[i]).join(''),
      isEndToken: () => false,
      maxTokens: Number.MAX_SAFE_INTEGER,
      ...requestStops(request, request.prefix, { now, startedAt: started }),
      ...(writtenStops.length ? { stopStrings: [...(request.stop ?? []), ...writtenStops] } : {}),
    });
    this.tokensAligned = extra.tokens !== undefined;
  }

  get text(): string {
    return this.stop.finalText;
  }

  /** Puts forced texts first; true when the stop rules end the completion within them. */
  force(texts: readonly string[]): boolean {
    for (const text of texts) {
      this.chunks.push(text);
      if (this.stop.push(this.chunks.length - 1)) return true;
    }
    return false;
  }

  /** Feeds parsed events (taken off `events`) through the stop rules; true once the completion is over. */
  consume(events: unknown[], api: ServerApi): boolean {
    while (events.length) {
      const event = api.readEvent(events.shift());
      if (!event) continue;
      this.keepTokens(event);
      // A figure a later event leaves out keeps the value an earlier one gave.
      if (event.figures) for (const [key, value] of Object.entries(event.figures)) if (value !== undefined) (this.figures as Record<string, unknown>)[key] = value;
      if (event.text) {
        this.firstTokenAt ??= this.now();
        this.chunks.push(event.text);
        const over = this.stop.push(this.chunks.length - 1);
        this.extra.onText?.(this.stop.finalText);
        if (over) return true;
      }
      if (event.done) return (this.serverDone = true);
    }
    return false;
  }

  private keepTokens(event: StreamEvent): void {
    if (!this.tokensAligned || !(event.text || event.tokens?.length)) return;
    this.extra.tokens!.push(...(event.tokens ?? []));
    if ((event.tokens ?? []).map((t) => t.text).join('') !== event.text) this.tokensAligned = false;
  }

  /** The completion's figures, the server's where it gave them. */
  stats(started: number): GenerationStats {
    const { figures, stop } = this;
    const totalMs = this.now() - started;
    const ttft = (this.firstTokenAt ?? this.now()) - started;
    return {
      promptTokens: figures.promptTokens ?? 0,
      reusedPromptTokens: figures.reusedPromptTokens ?? 0,
      generatedTokens: stop.decision && !this.serverDone ? stop.tokens.length : (figures.generatedTokens ?? this.chunks.length),
      promptMs: ttft,
      timeToFirstTokenMs: ttft,
      totalMs,
      stopReason: stop.decision?.reason ?? figures.stopReason ?? 'eos',
      ...(figures.tokensPerSecond !== undefined ? { serverTokensPerSecond: figures.tokensPerSecond } : {}),
      ...(figures.draftProposed !== undefined ? { serverDraft: { proposedTokens: figures.draftProposed, acceptedTokens: figures.draftAccepted ?? 0 } } : {}),
    };
  }
}

/** A timer that fires after `ms` without a reset (a server that went quiet mid-stream). */
function setIdleTimer(ms: number, onIdle: () => void) {
  const state = { fired: false, timer: undefined as NodeJS.Timeout | undefined };
  const arm = () => {
    state.timer = setTimeout(() => {
      state.fired = true;
      onIdle();
    }, ms);
  };
  arm();
  return {
    get fired() {
      return state.fired;
    },
    reset() {
      clearTimeout(state.timer);
      arm();
    },
    clear() {
      clearTimeout(state.timer);
    },
  };
}
