// HTTP for the server backends, on Node's own http/https: a custom CA per request (a team's private
// TLS), the first-byte timeout and the abort that closes the connection (llama-server, vLLM and
// Ollama stop generating when their client goes away), and one error type whose message a user can act on.
import * as http from 'node:http';
import * as https from 'node:https';
import * as tls from 'node:tls';

export type ServerErrorCode = 'unreachable' | 'tls' | 'timeout' | 'unauthorized' | 'notFound' | 'modelNotFound' | 'badRequest' | 'busy' | 'server' | 'malformed' | 'cancelled';

export class ServerError extends Error {
  constructor(
    message: string,
    readonly code: ServerErrorCode,
    readonly status?: number,
  ) {
    super(message);
  }

  /** Worth another try soon: the server may be starting, restarting or briefly overloaded. */
  get transient(): boolean {
    return this.code === 'unreachable' || this.code === 'timeout' || this.code === 'busy' || this.code === 'server';
  }
}

export interface HttpOptions {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: unknown;
  /** PEM text of extra certificate authorities. */
  ca?: string;
  signal?: AbortSignal;
  /** Until the response's headers (the server's first byte). */
  timeoutMs: number;
}

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as it arrives (closed when the request is aborted). */
  body: AsyncIterable<Buffer>;
  /** Stops reading and closes the connection (the server sees its client go). */
  close(): void;
}

/** One request; rejects with a ServerError (never a bare socket error). */
export function request(url: URL, options: HttpOptions): Promise<HttpResponse> {
  const client = url.protocol === 'https:' ? https : http;
  const payload = options.body === undefined ? undefined : Buffer.from(JSON.stringify(options.body));
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) return reject(new ServerError('cancelled', 'cancelled'));
    const req = client.request(url, {
      method: options.method ?? (payload ? 'POST' : 'GET'),
      headers: {
        accept: 'application/json, text/event-stream, application/x-ndjson',
        ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
        ...options.headers,
      },
      // `ca` replaces Node's roots: keep them, so a private CA adds to the public ones.
      ...(options.ca && url.protocol === 'https:' ? { ca: [...tls.rootCertificates, options.ca] } : {}),
    });
    const where = url.origin;
    const timer = setTimeout(() => {
      req.destroy(new ServerError(`${where} did not answer within ${(options.timeoutMs / 1000).toFixed(1)} s`, 'timeout'));
    }, options.timeoutMs);
    const onAbort = () => req.destroy(new ServerError('cancelled', 'cancelled'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    };
    req.on('error', (error) => {
      done();
      reject(error instanceof ServerError ? error : networkError(where, error as NodeJS.ErrnoException));
    });
    req.on('response', (res) => {
      clearTimeout(timer);
      // The abort now ends the body (the stream's reader sees it end early).
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: bodyOf(res, where, options.signal, done),
        close: () => {
          done();
          res.destroy();
          req.destroy();
        },
      });
    });
    req.end(payload);
  });
}

async function* bodyOf(res: http.IncomingMessage, where: string, signal: AbortSignal | undefined, done: () => void): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of res) yield chunk as Buffer;
    if (!res.complete && !signal?.aborted) throw new ServerError(`${where} closed the connection in the middle of its answer`, 'unreachable');
  } catch (error) {
    if (signal?.aborted) throw new ServerError('cancelled', 'cancelled');
    if (error instanceof ServerError) throw error;
    throw new ServerError(`${where} closed the connection in the middle of its answer (${(error as Error).message})`, 'unreachable');
  } finally {
    done();
    res.destroy();
  }
}

/**
 * The whole body as text (bounded: a misdirected endpoint may stream anything). With `idleMs`, a body
 * that stops coming for that long is given up (the request's own timeout ends at the headers).
 */
export async function readText(response: HttpResponse, maxBytes = 4 * 1024 * 1024, idleMs?: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  let idle = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    if (idleMs === undefined) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      idle = true;
      response.close();
    }, idleMs);
  };
  const stalled = () => new ServerError(`the server sent its headers, then nothing for ${(idleMs! / 1000).toFixed(1)} s in the middle of its answer`, 'timeout', response.status);
  arm();
  try {
    for await (const chunk of response.body) {
      arm();
      size += chunk.length;
      if (size > maxBytes) {
        response.close();
        throw new ServerError(`the server's answer is larger than ${maxBytes >> 20} MB: is the endpoint right?`, 'malformed');
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (idle) throw stalled();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  if (idle) throw stalled();
  return Buffer.concat(chunks).toString('utf8');
}

export async function readJson<T>(response: HttpResponse, what: string): Promise<T> {
  const text = await readText(response);
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ServerError(`${what}: the server's answer is not JSON (${snippet(text)}): is the endpoint right?`, 'malformed', response.status);
  }
}

export function snippet(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat || 'empty';
}

function networkError(where: string, error: NodeJS.ErrnoException): ServerError {
  const code = error.code ?? '';
  if (code === 'ECONNREFUSED') return new ServerError(`nothing is listening at ${where} (connection refused): is the server running?`, 'unreachable');
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new ServerError(`cannot resolve the host of ${where} (${code})`, 'unreachable');
  if (code === 'ECONNRESET' || code === 'EPIPE') return new ServerError(`${where} closed the connection (${code})`, 'unreachable');
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'ETIMEDOUT') return new ServerError(`${where} is unreachable (${code})`, 'unreachable');
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY/i.test(code) || /certificate|ssl|tls/i.test(error.message)) {
    return new ServerError(`the TLS certificate of ${where} is not trusted (${code || error.message}): set draftline.server.caFile to your CA's PEM file`, 'tls');
  }
  return new ServerError(`cannot reach ${where}: ${error.message}`, 'unreachable');
}
