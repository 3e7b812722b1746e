// Before node-llama-cpp's downloader starts: is the server there at all? Its downloader (ipull)
// retries a failed connection 150 times, a few seconds apart, with no way to cancel it while it
// reads the file's size; with no route to the hub a download then waits for many minutes, says
// nothing, and goes on asking DNS after a cancel. So each host is asked here first, with timeouts,
// a few bounded retries and a cancel that stops at once; only a host that answers is handed on.
// Worker side (src/inference/modelDownloader.ts); the proxy is src/inference/downloadProxy.ts's.
import { promises as dns } from 'node:dns';
import { DownloadError } from '../models/downloadIndex';
import { activeProxy, freshDispatcher } from './downloadProxy';

export interface ReachOptions {
  signal?: AbortSignal;
  /** How long one attempt waits for an answer (DNS, connect and the response's head together). */
  answerTimeoutMs?: number;
  /** The waits before the 2nd, 3rd… attempt: their count bounds the retries. */
  retryDelaysMs?: number[];
  /** What is going on, in words, for the progress notification and the log. */
  onNote?: (note: string) => void;
}

export const ANSWER_TIMEOUT_MS = 15_000;
export const RETRY_DELAYS_MS = [1_000, 4_000];

/** Why one attempt failed, in words, and whether another attempt could help. */
interface Failure {
  reason: string;
  retry: boolean;
}

/**
 * Resolves once `url`'s server answers (any HTTP status: the downloader reports a 404 itself);
 * rejects with a DownloadError naming the host and the cause after the bounded retries, or
 * 'cancelled' as soon as the signal fires (no further attempt is made).
 */
export async function waitForServer(url: string, options: ReachOptions = {}): Promise<void> {
  const host = hostOf(url);
  const timeoutMs = options.answerTimeoutMs ?? ANSWER_TIMEOUT_MS;
  const delays = options.retryDelaysMs ?? RETRY_DELAYS_MS;
  const attempts = delays.length + 1;
  let last: Failure | undefined;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    throwIfCancelled(options.signal);
    const proxy = activeProxy(url);
    options.onNote?.(`waiting for ${host}${proxy ? ` through the proxy ${proxy}` : ''}…${attempt > 1 ? ` (attempt ${attempt} of ${attempts})` : ''}`);
    last = await tryOnce(url, host, proxy, timeoutMs, options.signal);
    if (!last) return;
    throwIfCancelled(options.signal);
    if (!last.retry || attempt === attempts) break;
    const wait = delays[attempt - 1];
    options.onNote?.(`${last.reason}; retrying in ${seconds(wait)} (attempt ${attempt + 1} of ${attempts})`);
    await sleep(wait, options.signal);
  }
  throw new DownloadError(`Cannot download from ${host}: ${last?.reason ?? 'no answer'}.`, 'failed');
}

async function tryOnce(url: string, host: string, proxy: string | undefined, timeoutMs: number, signal: AbortSignal | undefined): Promise<Failure | undefined> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const hostname = new URL(url).hostname.replace(/^\[|\]$/g, '');
  // Through a proxy the name is the proxy's to resolve; without one, a name that does not resolve
  // is said as such (fetch would report a bare "fetch failed").
  if (!proxy) {
    const failure = await raceAbort(
      dns.lookup(hostname).then(
        () => undefined,
        (error: NodeJS.ErrnoException): Failure => ({ reason: `cannot resolve ${hostname} (${error.code ?? error.message})`, retry: true }),
      ),
      both,
    ).catch((): Failure => ({ reason: `cannot resolve ${hostname}: no answer from DNS in ${seconds(timeoutMs)}`, retry: true }));
    if (failure || signal?.aborted) return failure;
  }
  const dispatcher = freshDispatcher(url);
  try {
    // `dispatcher` is undici's option, which Node's fetch takes but its types do not name.
    const init = { method: 'HEAD', redirect: 'manual', signal: both, headers: { 'Accept-Encoding': 'identity' }, dispatcher } as unknown as RequestInit;
    const response = await fetch(url, init);
    // The head is enough: nothing of the body is wanted.
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  } catch (error) {
    if (signal?.aborted) return { reason: 'cancelled', retry: false };
    if (timeout.aborted) return { reason: `no answer from ${host} in ${seconds(timeoutMs)}`, retry: true };
    return describeFetchError(error as Error, host, proxy);
  } finally {
    void dispatcher.destroy().catch(() => undefined);
  }
}

/** A fetch error (undici's: a TypeError whose `cause` holds the system error) in words. */
export function describeFetchError(error: Error, host: string, proxy: string | undefined): Failure {
  const causes: { code?: string; message?: string }[] = [];
  for (let e = error as { code?: string; message?: string; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) causes.push(e);
  const code = causes.find((c) => c.code && c.code !== 'UND_ERR')?.code;
  const messages = causes.map((c) => c.message ?? '').join(' ');
  const proxyAnswer = /Proxy response \((\d+)\)/i.exec(messages);
  if (proxy && proxyAnswer) return { reason: `proxy refused: ${proxy} answered HTTP ${proxyAnswer[1]} when asked to connect to ${host}`, retry: false };
  if (proxy && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')) return { reason: `proxy refused: cannot connect to the proxy ${proxy} (${code})`, retry: true };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { reason: `cannot resolve ${host} (${code})`, retry: true };
  if (code === 'ECONNREFUSED') return { reason: `${host} refused the connection`, retry: true };
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return { reason: `no answer from ${host} (connect timeout)`, retry: true };
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return { reason: `${host} closed the connection`, retry: true };
  if (code && /^(CERT_|ERR_TLS|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(code)) return { reason: `the TLS certificate of ${host} was refused (${code})`, retry: false };
  return { reason: `${host}: ${causes.at(-1)?.message ?? error.message}${code ? ` (${code})` : ''}`, retry: true };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(ms < 1000 ? 2 : 1))} s`;
}

function throwIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new DownloadError('Download cancelled', 'cancelled');
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** `promise`, or a rejection as soon as `signal` fires (the promise itself goes on, unobserved). */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
