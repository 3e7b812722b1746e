// A server's refusals as ServerErrors whose code says what to do and whose message says what the
// server said, for every API alike.
import type { BackendKind } from '../shared/settings';
import { ServerError, snippet } from './http';
import { errorMessageOf } from './serverApi';

/** Who a request was addressed to, as its error message names them. */
export interface RequestTarget {
  kind: BackendKind;
  /** The server's origin (or the endpoint setting, before it was resolved). */
  where: string;
  /** The model the settings ask for. */
  model: string;
}

/** A non-2xx answer to `what` (e.g. "completion") as a ServerError, with the body's own message. */
export function httpError(target: RequestTarget, status: number, body: string, what: string): ServerError {
  const said = errorMessageOf(body) ?? snippet(body);
  const { where } = target;
  if (status === 401 || status === 403) {
    return new ServerError(`${what}: ${where} refused the request (${status}: ${said}): set its API key with "Draftline: Set Server API Key"`, 'unauthorized', status);
  }
  if (status === 404) {
    if (/model/i.test(said)) return new ServerError(`${what}: ${where} has no model "${target.model}" (${said}): check draftline.server.model`, 'modelNotFound', status);
    return new ServerError(`${what}: ${where} has no such endpoint (404: ${said}): is it a ${target.kind} server, and the endpoint its base URL?`, 'notFound', status);
  }
  if (status === 501) return new ServerError(`${what}: ${where} does not support this (501: ${said})`, 'badRequest', status);
  if (status === 429 || status === 503) return new ServerError(`${what}: ${where} is busy or still loading (${status}: ${said})`, 'busy', status);
  if (status >= 500) return new ServerError(`${what}: ${where} failed (${status}: ${said})`, 'server', status);
  return new ServerError(`${what}: ${where} refused the request (${status}: ${said})`, 'badRequest', status);
}

/** Any error as a ServerError (an unexpected one as `malformed`). */
export function asServerError(error: unknown): ServerError {
  return error instanceof ServerError ? error : new ServerError((error as Error)?.message ?? String(error), 'malformed');
}
