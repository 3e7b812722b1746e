// The server backend's settings as a request needs them: the endpoint checked and parsed, the
// CA file read. Kept apart so that each mistake in the settings gets its own message.
import * as fs from 'node:fs';
import type { BackendSettings } from '../shared/settings';
import { ServerError } from './http';
import type { ServerSettings } from './serverApi';

/** The settings with the endpoint (or the API's `defaultEndpoint` for an empty one) parsed as an http(s) URL. */
export function resolveServerSettings(settings: BackendSettings, defaultEndpoint: string): ServerSettings {
  const raw = settings.endpoint || defaultEndpoint;
  const endpoint = parseUrl(raw);
  if (!endpoint || (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:')) {
    // "gpu-box:8080" parses as a URL whose scheme is "gpu-box:": say what was meant.
    if (!raw.includes('://') && parseUrl(`http://${raw}`)) throw new ServerError(`draftline.server.endpoint is "${raw}": write it with its scheme, e.g. http://${raw}`, 'badRequest');
    if (!endpoint) throw new ServerError(`draftline.server.endpoint is "${raw}", not a URL (e.g. ${defaultEndpoint})`, 'badRequest');
    throw new ServerError(`draftline.server.endpoint must be an http or https URL, not ${endpoint.protocol}`, 'badRequest');
  }
  return { endpoint, model: settings.model, sendExtraContext: settings.sendExtraContext };
}

/** The CA certificates of draftline.server.caFile, if set. */
export function readCaFile(caFile: string | undefined): string | undefined {
  if (!caFile) return undefined;
  try {
    return fs.readFileSync(caFile, 'utf8');
  } catch (error) {
    throw new ServerError(`cannot read draftline.server.caFile ${caFile}: ${(error as Error).message}`, 'tls');
  }
}

/** `path` under the endpoint's own path (a base URL such as http://host/v1 keeps its /v1). */
export function joinUrl(endpoint: URL, path: string): URL {
  const url = new URL(endpoint.href);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}${path}`;
  return url;
}

function parseUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}
