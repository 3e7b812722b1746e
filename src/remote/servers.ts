// The server backends by kind, and where each endpoint's API key is kept.
import type { BackendEvents } from '../backend/backend';
import { llamaServerApi } from './llamaServerApi';
import { ollamaApi } from './ollamaApi';
import { openAiApi } from './openAiApi';
import type { ServerApi, ServerKind } from './serverApi';
import { ServerBackend, type BackendSettings, type ServerBackendDeps } from './serverBackend';

export const SERVER_APIS: Record<ServerKind, ServerApi> = {
  'llama-server': llamaServerApi,
  'openai-compatible': openAiApi,
  ollama: ollamaApi,
};

export function createServerBackend(settings: BackendSettings, deps: ServerBackendDeps, events: BackendEvents): ServerBackend {
  if (settings.kind === 'local') throw new Error('the local backend is not a server');
  return new ServerBackend(SERVER_APIS[settings.kind], settings, deps, events);
}

/**
 * The SecretStorage key of an endpoint's API key: one per origin, so a key set for one server is
 * never sent to another one the settings point at later.
 */
export function serverApiKeyName(endpoint: URL): string {
  return `draftline.server.apiKey:${endpoint.origin}`;
}
