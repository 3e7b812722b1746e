// Next-edit suggestions from an inference server. Kept apart from serverBackend.ts, whose
// connection, outage handling and stream reading it uses through NextEditServer: what is particular
// to next edits (the format's prompt, its stop texts, the output parsed and streamed as edits) is here.
import { formatFor, StreamedEdits } from '../nextEdit/generation';
import { outputToEdits } from '../nextEdit/outputToEdit';
import type { NextEditRequest, NextEditResult, TextReplacement } from '../nextEdit/types';
import type { CompletionRequest, CompletionResult } from '../shared/completion';
import { emptySpeculationStats, type GenerationStats } from '../shared/generationStats';
import type { ServerError } from './http';
import type { CompletionCall, ServerApi, ServerDescription, ServerSettings } from './serverApi';

/** What a next-edit request uses of its ServerBackend. */
export interface NextEditServer {
  readonly api: ServerApi;
  now(): number;
  /** The server's description and settings; throws while it is not connected, or down. */
  connection(): { description: ServerDescription; settings: ServerSettings };
  /** One streamed completion of `call` read through the stop rules of `sent`, timed from `started`; a refused request throws. */
  stream(call: CompletionCall, sent: CompletionRequest, started: number, signal: AbortSignal | undefined, onText?: (text: string) => void): Promise<CompletionResult>;
  /** A request's error as a ServerError (a lost server's outage started), or null where it was cancelled. */
  failure(error: unknown, signal: AbortSignal | undefined): ServerError | null;
}

/**
 * A next-edit suggestion from the server: the prompt built here by the request's format (forced,
 * else the one the server's model name says), sent whole as text to the API's raw completion
 * (llama-server /completion, /v1/completions, Ollama's raw generate), greedy, with the format's stop
 * texts; the output read through the same parser as the local path's. Final edits go to `onEdit` as
 * the stream shows them (StreamedEdits, as the worker streams them).
 */
export async function serverNextEdit(server: NextEditServer, request: NextEditRequest, signal?: AbortSignal, onEdit?: (edit: TextReplacement, ms: number) => void): Promise<NextEditResult> {
  const started = server.now();
  const { description, settings } = server.connection();
  const at = Math.max(0, Math.min(request.cursorOffset, request.text.length));
  const none = (
    reason: 'noFormat' | 'cancelled' | 'error',
    detail: string,
    format = request.format && request.format !== 'auto' ? request.format : 'sweep',
    region = { start: at, end: at },
  ): NextEditResult => ({
    format,
    region,
    edits: [],
    regionText: null,
    noSuggestion: { reason, detail },
    stats: nothingGenerated(server.now() - started),
  });
  // A prompt built already goes as it is; its format reads the output.
  const format = formatFor(request.prompt ? { ...request, format: request.prompt.format } : request, { name: description.model });
  if ('none' in format) return none('noFormat', `${format.none} (the server's model is "${description.model}")`);
  const prompt = request.prompt ?? format.buildPrompt(request);
  const call = server.api.rawCompletion(prompt.prompt, { maxTokens: prompt.maxTokens, stop: prompt.stop }, description, settings);
  // The stop rules of a completion with the format's stop texts and token budget (the server stops there too).
  const sent: CompletionRequest = { prefix: '', suffix: '', maxTokens: prompt.maxTokens, mode: 'plain', stop: prompt.stop };
  const streamed = onEdit ? new StreamedEdits(format, prompt, request) : undefined;
  let firstEditMs: number | undefined;
  const onText = streamed
    ? (text: string) => {
        for (const edit of streamed.push(text)) {
          firstEditMs ??= server.now() - started;
          onEdit!(edit, server.now() - started);
        }
      }
    : undefined;
  try {
    const output = await server.stream(call, sent, started, signal, onText);
    if (output.stats.stopReason === 'abort' && signal?.aborted) return none('cancelled', 'cancelled while the server generated', format.id, prompt.region);
    const parsed = outputToEdits(request, prompt, format, output.text);
    // Edits the stream showed as final and the whole output's: the same edits, the whole output's win.
    return { format: format.id, region: prompt.region, output: output.text, ...parsed, ...(firstEditMs !== undefined ? { timeToFirstEditMs: firstEditMs } : {}), stats: serverStats(output.stats) };
  } catch (error) {
    const e = server.failure(error, signal);
    if (!e) return none('cancelled', 'cancelled while the server generated', format.id, prompt.region);
    throw e;
  }
}

/** A server's figures as a next-edit result's stats: no speculation record of ours (the server decodes its own way). */
function serverStats(stats: GenerationStats): NextEditResult['stats'] {
  return { ...stats, speculation: stats.speculation ?? emptySpeculationStats('plain') };
}

/** The stats of a request that generated nothing (no format for the model, or cancelled): a cancelled completion's. */
function nothingGenerated(totalMs: number): NextEditResult['stats'] {
  return serverStats({ promptTokens: 0, reusedPromptTokens: 0, generatedTokens: 0, promptMs: 0, timeToFirstTokenMs: 0, totalMs, stopReason: 'abort' });
}
