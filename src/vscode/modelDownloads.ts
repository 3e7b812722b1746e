import * as vscode from 'vscode';
import { catalogModelByUri } from '../models/catalog';
import { downloadedPath, isModelUri } from '../models/downloadIndex';
import { downloadInWorker } from '../models/downloadInWorker';
import { offerRecommendedPair as offerPair } from '../models/onboarding';
import type { WorkerClient } from '../worker/workerClient';
import { modelsDir } from './modelPicker';
import { type NextEditSettings, readNextEditSettings, SECTION, type ResolvedModelSettings, type SettingProblemReport, writeSetting } from './settings';

/** Hugging Face endpoint: a setting (mirrors, tests) or HF_ENDPOINT, else the library's default. */
export function huggingFaceEndpoint(): string | undefined {
  const configured = vscode.workspace.getConfiguration(SECTION).inspect<string>('huggingFaceEndpoint')?.globalValue;
  return configured || process.env.HF_ENDPOINT || undefined;
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 1e8 ? 1 : 0)} MB`;

function formatEta(seconds: number): string {
  if (!Number.isFinite(seconds)) return '…';
  if (seconds < 60) return `${Math.ceil(seconds)} s`;
  return `${Math.floor(seconds / 60)} min ${Math.ceil(seconds % 60)} s`;
}

/**
 * Downloads with a cancellable progress notification (size, speed, ETA). Resolves to local paths.
 * The download runs in the inference worker (node-llama-cpp never loads in the extension host).
 */
export async function downloadWithProgress(context: vscode.ExtensionContext, worker: WorkerClient, uris: string[], title: string): Promise<string[]> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, async (progress, token) => {
    const controller = new AbortController();
    token.onCancellationRequested(() => controller.abort());
    let reported = 0;
    return downloadInWorker(worker, uris, {
      dirPath: modelsDir(context),
      signal: controller.signal,
      huggingFaceEndpoint: huggingFaceEndpoint(),
      onProgress: (p) => {
        const percent = p.totalBytes ? (100 * p.downloadedBytes) / p.totalBytes : 0;
        progress.report({
          increment: Math.max(0, percent - reported),
          message:
            p.verifiedBytes === undefined
              ? `${mb(p.downloadedBytes)} of ${mb(p.totalBytes)} · ${mb(p.bytesPerSecond)}/s · ${formatEta(p.etaSeconds)} left`
              : `verifying sha256: ${mb(p.verifiedBytes)} of ${mb(p.totalBytes)} · ${formatEta(p.etaSeconds)} left`,
        });
        reported = Math.max(reported, percent);
      },
    });
  });
}

/**
 * Turns model URIs in the settings into local files: already downloaded ones resolve offline,
 * others are downloaded after the user agrees (never silently).
 */
export async function resolveModelFiles(context: vscode.ExtensionContext, models: ResolvedModelSettings, worker: WorkerClient): Promise<ResolvedModelSettings> {
  const dir = modelsDir(context);
  const missing = [models.targetModel, models.draftModel].filter((m) => m && isModelUri(m) && !downloadedPath(dir, m));
  if (missing.length > 0) {
    const names = missing.map((uri) => {
      const known = catalogModelByUri(uri);
      return known ? `${known.name} (${mb(known.sizeBytes)})` : uri;
    });
    const choice = await vscode.window.showInformationMessage(`Draftline: ${names.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not downloaded yet.`, 'Download', 'Cancel');
    if (choice !== 'Download') throw new Error(`Model not downloaded: ${missing.join(', ')}`);
    await downloadWithProgress(context, worker, missing, 'Draftline: downloading models');
  }
  const local = (m: string) => (m && isModelUri(m) ? downloadedPath(dir, m)! : m);
  return { ...models, targetModel: local(models.targetModel), draftModel: local(models.draftModel) };
}

/**
 * The next-edit model as a local file, for its first use: a path as it is, a URI already downloaded
 * offline, any other URI downloaded after the user agrees, with the same progress, pin and sha256
 * check as the completion pair (the download runs in the worker). Resolves to '' when none is
 * configured; rejects when the user declines or the download fails (the caller shows no next edits).
 */
export async function resolveNextEditModelFile(context: vscode.ExtensionContext, settings: NextEditSettings, worker: WorkerClient): Promise<string> {
  const uri = settings.model;
  if (!uri || !isModelUri(uri)) return uri;
  const dir = modelsDir(context);
  const have = downloadedPath(dir, uri);
  if (have) return have;
  const known = catalogModelByUri(uri);
  const name = known ? `${known.name} (${mb(known.sizeBytes)}${known.licence ? `, ${known.licence}` : ''})` : uri;
  const choice = await vscode.window.showInformationMessage(`Draftline: the next-edit model ${name} is not downloaded yet.`, 'Download', 'Cancel');
  if (choice !== 'Download') throw new Error(`Next-edit model not downloaded: ${uri}`);
  const [file] = await downloadWithProgress(context, worker, [uri], `Draftline: downloading ${known?.name ?? 'the next-edit model'}`);
  return file;
}

/**
 * The local backend's next-edit model (LocalBackendOptions.nextEditModel): resolved on the first
 * next-edit request, which only comes while next edits are on. The seam: once
 * draftline.nextEdit.enabled is on main, call it when that turns on (a download then asks before the
 * first suggestion, not at it). Kept per setting value, so a declined or failed download is not
 * asked again at every keystroke, only after the setting changes.
 */
export function nextEditModelResolver(context: vscode.ExtensionContext, report?: SettingProblemReport): (worker: WorkerClient) => Promise<{ file: string; format: NextEditSettings['format'] }> {
  let last: { model: string; file: Promise<string> } | null = null;
  return async (worker) => {
    const settings = readNextEditSettings(report);
    if (last?.model !== settings.model) last = { model: settings.model, file: resolveNextEditModelFile(context, settings, worker) };
    return { file: await last.file, format: settings.format };
  };
}

/** The first-run offer (src/models/onboarding.ts) with VS Code's notification, progress and settings. */
export function offerRecommendedPair(context: vscode.ExtensionContext, worker: WorkerClient, log: vscode.LogOutputChannel, options: { again?: boolean } = {}): Promise<void> {
  return offerPair(
    {
      state: context.globalState,
      machine: () => worker.request('systemInfo', {}),
      ask: (message, ...choices) => vscode.window.showInformationMessage(message, ...choices),
      download: (uris, title) => downloadWithProgress(context, worker, uris, title),
      useModels: async (targetUri, draftUri) => {
        await writeSetting('targetModel', targetUri);
        await writeSetting('draftModel', draftUri);
      },
      showError: (message) => void vscode.window.showErrorMessage(`Draftline: ${message}`),
      log: (message) => log.info(message),
    },
    options,
  );
}
