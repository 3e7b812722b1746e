import * as path from 'node:path';
import type * as vscode from 'vscode';
import type { BackendEvents, InferenceBackend } from '../backend/backend';
import { LocalBackend } from '../backend/localBackend';
import type { ModelQuarantine } from '../backend/modelQuarantine';
import { createServerBackend, serverApiKeyName } from '../remote/servers';
import type { BackendSettings } from '../shared/settings';
import { ensurePrivateDirectory, type SharedWorkerAddress, sharedWorkerAddress, sharedWorkerSupported } from '../worker/sharedWorker';
import { type NextEditModelResolver, resolveModelFiles } from './modelDownloads';
import { readModelSettings, readSpeculationSettings, type SettingProblemReport, sharedWorkerIdleMs } from './settings';

/** What making a backend needs of the editor. */
export interface BackendFactoryDeps {
  context: vscode.ExtensionContext;
  log: vscode.LogOutputChannel;
  reportSettingProblem: SettingProblemReport;
  quarantine: ModelQuarantine;
  nextEditModel: NextEditModelResolver;
}

/**
 * The backend `settings` ask for: a server's client (its API key from SecretStorage), or the local
 * worker, its settings read when it loads (models resolved, downloads included).
 */
export function createBackend(settings: BackendSettings, deps: BackendFactoryDeps, events: BackendEvents): InferenceBackend {
  const { context, log, reportSettingProblem } = deps;
  if (settings.kind !== 'local') {
    return createServerBackend(settings, { apiKey: (endpoint) => Promise.resolve(context.secrets.get(serverApiKeyName(endpoint))) }, events);
  }
  const workerPath = path.join(context.extensionPath, 'dist', 'worker.js');
  return new LocalBackend(
    {
      workerPath,
      shared: settings.sharedWorker ? sharedWorkerAddressFor(workerPath, log) : undefined,
      // DRAFTLINE_SHARED_IDLE_MS in the editor's environment (the e2e harness's) reaches the worker as is.
      sharedIdleMs: process.env.DRAFTLINE_SHARED_IDLE_MS === undefined ? sharedWorkerIdleMs(reportSettingProblem) : undefined,
      quarantine: deps.quarantine,
      // The worker starts loading the llama.cpp binding for this GPU choice as soon as it runs.
      preloadGpu: readModelSettings(context.extensionPath).gpu,
      settings: async (worker) => ({
        models: {
          ...(await resolveModelFiles(context, readModelSettings(context.extensionPath, reportSettingProblem), worker, log)),
          // Measured flash-attention choices outlive the window: the measurement runs once per model.
          attentionMemoFile: path.join(context.globalStorageUri.fsPath, 'flash-attention.json'),
        },
        speculation: readSpeculationSettings(reportSettingProblem),
      }),
      nextEditModel: deps.nextEditModel,
    },
    events,
  );
}

/** Where the shared worker listens, or undefined (a private worker) where it cannot be shared safely. */
function sharedWorkerAddressFor(workerPath: string, log: vscode.LogOutputChannel): SharedWorkerAddress | undefined {
  if (!sharedWorkerSupported()) return undefined;
  try {
    const address = sharedWorkerAddress(workerPath);
    ensurePrivateDirectory(address.dir);
    return address;
  } catch (error) {
    log.warn(`a worker of this window's own: the shared worker's directory cannot be used (${(error as Error).message})`);
    return undefined;
  }
}
