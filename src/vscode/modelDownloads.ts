import * as vscode from 'vscode';
import { catalogModelByUri } from '../models/catalog';
import { DownloadError, type DownloadProxySettings, downloadedPath, isModelUri, LOCAL_FILE, progressMessage, recordDownload } from '../models/downloadIndex';
import type { ModelRole } from '../models/modelRole';
import type { NextEditFormatId } from '../nextEdit/types';
import { downloadInWorker } from '../backend/downloadInWorker';
import { NextEditModelDeclined, NextEditModelMemo } from '../models/nextEditModelMemo';
import { offerRecommendedPair as offerPair } from '../models/onboarding';
import type { WorkerClient } from '../worker/workerClient';
import { checkChosenFile, chooseModelFile, modelsDir, provenanceOf } from './localModelFile';
import { type NextEditSettings, readNextEditSettings, SECTION, type ResolvedModelSettings, type SettingProblemReport, writeSetting } from './settings';

/** Hugging Face endpoint: a setting (mirrors, tests) or HF_ENDPOINT, else the library's default. */
export function huggingFaceEndpoint(): string | undefined {
  const configured = vscode.workspace.getConfiguration(SECTION).inspect<string>('huggingFaceEndpoint')?.globalValue;
  return configured || process.env.HF_ENDPOINT || undefined;
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 1e8 ? 1 : 0)} MB`;

/** VS Code's proxy settings, for the worker's downloads (it also honours HTTPS_PROXY and the like). */
function proxySettings(): DownloadProxySettings {
  const http = vscode.workspace.getConfiguration('http');
  return { url: http.get<string>('proxy') || undefined, noProxy: http.get<string[]>('noProxy') ?? [] };
}

/** The buttons of a failed download's message. */
export const DOWNLOAD_FAILED_CHOICES = { retry: 'Retry', local: 'Use a Local File…', log: 'Open Log' } as const;

/** Marks an error whose message the user has already seen (the caller shows no second one). */
export function markShown(error: Error): Error {
  return Object.assign(error, { shown: true });
}

export function wasShown(error: unknown): boolean {
  return (error as { shown?: unknown } | undefined)?.shown === true;
}

/**
 * Downloads with a cancellable progress notification (waiting, then size, percent, speed, ETA).
 * Resolves to local paths. The download runs in the inference worker (node-llama-cpp never loads
 * in the extension host). Its start, each wait and retry, its end, failure or cancel go to the log.
 * A failure is shown with Retry, Use a Local File… (the file then stands for the URI, once checked
 * for its role: `roles`, one per URI) and Open Log; the error the caller then gets is marked shown.
 */
export async function downloadWithProgress(
  context: vscode.ExtensionContext,
  worker: WorkerClient,
  uris: string[],
  title: string,
  log: vscode.LogOutputChannel | undefined,
  roles: ModelRole[],
): Promise<string[]> {
  for (;;) {
    try {
      return await downloadOnce(context, worker, uris, title, log);
    } catch (error) {
      if (!(error instanceof DownloadError) || error.code === 'cancelled') throw error;
      const choice = await vscode.window.showErrorMessage(`Draftline: ${error.message}`, DOWNLOAD_FAILED_CHOICES.retry, DOWNLOAD_FAILED_CHOICES.local, DOWNLOAD_FAILED_CHOICES.log);
      if (choice === DOWNLOAD_FAILED_CHOICES.retry) {
        log?.info(`download: retry asked for ${uris.join(', ')}`);
        continue;
      }
      if (choice === DOWNLOAD_FAILED_CHOICES.local) {
        const files = await pickLocalFiles(context, uris, roles, log);
        if (files) return files;
      }
      if (choice === DOWNLOAD_FAILED_CHOICES.log) log?.show(true);
      throw markShown(error);
    }
  }
}

async function downloadOnce(context: vscode.ExtensionContext, worker: WorkerClient, uris: string[], title: string, log?: vscode.LogOutputChannel): Promise<string[]> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, async (progress, token) => {
    const controller = new AbortController();
    token.onCancellationRequested(() => {
      log?.info(`download: cancelled by the user (${uris.join(', ')})`);
      controller.abort();
    });
    let reported = 0;
    let lastNote: string | undefined;
    let firstByte = false;
    const started = Date.now();
    log?.info(`download: starting ${uris.join(', ')} into ${modelsDir(context)}`);
    progress.report({ message: 'starting…' });
    try {
      const files = await downloadInWorker(worker, uris, {
        dirPath: modelsDir(context),
        signal: controller.signal,
        huggingFaceEndpoint: huggingFaceEndpoint(),
        proxy: proxySettings(),
        onProgress: (p) => {
          if (p.note !== undefined && p.note !== lastNote) {
            lastNote = p.note;
            log?.info(`download: ${p.note}`);
          }
          if (!firstByte && p.downloadedBytes > 0) {
            firstByte = true;
            log?.info(`download: receiving (${mb(p.totalBytes)} in all)`);
          }
          const percent = p.totalBytes ? (100 * (p.verifiedBytes ?? p.downloadedBytes)) / p.totalBytes : 0;
          progress.report({ increment: p.verifiedBytes === undefined ? Math.max(0, percent - reported) : 0, message: progressMessage(p) });
          if (p.verifiedBytes === undefined) reported = Math.max(reported, percent);
        },
      });
      log?.info(`download: done in ${((Date.now() - started) / 1000).toFixed(1)} s: ${files.join(', ')}`);
      return files;
    } catch (error) {
      const e = error as Error & { code?: unknown };
      if (e instanceof DownloadError && e.code === 'cancelled') log?.info('download: cancelled; the partial files were removed');
      else log?.error(`download failed after ${((Date.now() - started) / 1000).toFixed(1)} s: ${e.message}`);
      throw error;
    }
  });
}

/**
 * "Use a Local File…": the user downloaded the file elsewhere. Each chosen file is checked for its
 * role at once (a GGUF; a next-edit model that names its prompt layout, or has the body and
 * vocabulary of the catalog model it stands in for; a draft that shares the target's vocabulary),
 * refused with why and the offer to choose another; then recorded for its URI, so the setting that
 * names the URI resolves to it from now on: a local file, not verified.
 */
async function pickLocalFiles(context: vscode.ExtensionContext, uris: string[], roles: ModelRole[], log?: vscode.LogOutputChannel): Promise<string[] | undefined> {
  const files: string[] = [];
  for (const [i, uri] of uris.entries()) {
    const known = catalogModelByUri(uri);
    const role = roles[i] ?? 'target';
    const targetFile = role === 'draft' ? files[roles.indexOf('target')] : undefined;
    const file = await chooseModelFile(
      context,
      role,
      { filters: { 'GGUF model': ['gguf'] }, openLabel: 'Use This File', title: `Draftline: the local file for ${known?.name ?? uri}${known ? ` (${fileNameOf(uri)})` : ''}` },
      { uri, targetFile },
      log,
    );
    if (!file) return undefined;
    recordDownload(modelsDir(context), uri, { file, verifiedBy: null, checkedAt: new Date().toISOString(), note: 'a local file chosen for this model, not downloaded by Draftline' });
    log?.info(`download: ${uri} now resolves to ${file} (${LOCAL_FILE})`);
    files.push(file);
  }
  return files;
}

function fileNameOf(uri: string): string {
  return uri.replace(/#.*$/, '').split('/').at(-1) ?? uri;
}

/**
 * Turns model URIs in the settings into local files: already downloaded ones resolve offline,
 * others are downloaded after the user agrees (never silently).
 */
export async function resolveModelFiles(context: vscode.ExtensionContext, models: ResolvedModelSettings, worker: WorkerClient, log?: vscode.LogOutputChannel): Promise<ResolvedModelSettings> {
  const dir = modelsDir(context);
  const missing = [models.targetModel, models.draftModel].filter((m) => m && isModelUri(m) && !downloadedPath(dir, m));
  if (missing.length > 0) {
    const names = missing.map((uri) => {
      const known = catalogModelByUri(uri);
      return known ? `${known.name} (${mb(known.sizeBytes)})` : uri;
    });
    const choice = await vscode.window.showInformationMessage(`Draftline: ${names.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not downloaded yet.`, 'Download', 'Cancel');
    if (choice !== 'Download') throw new Error(`Model not downloaded: ${missing.join(', ')}`);
    await downloadWithProgress(
      context,
      worker,
      missing,
      'Draftline: downloading models',
      log,
      missing.map((m) => (m === models.targetModel ? 'target' : 'draft')),
    );
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
export async function resolveNextEditModelFile(context: vscode.ExtensionContext, settings: NextEditSettings, worker: WorkerClient, log?: vscode.LogOutputChannel): Promise<string> {
  const uri = settings.model;
  if (!uri || !isModelUri(uri)) return uri;
  const dir = modelsDir(context);
  const have = downloadedPath(dir, uri);
  if (have) return have;
  const known = catalogModelByUri(uri);
  const name = known ? `${known.name} (${mb(known.sizeBytes)}${known.licence ? `, ${known.licence}` : ''})` : uri;
  const choice = await vscode.window.showInformationMessage(`Draftline: the next-edit model ${name} is not downloaded yet.`, 'Download', 'Cancel');
  if (choice !== 'Download') throw new NextEditModelDeclined(`Next-edit model not downloaded: ${uri}`);
  const [file] = await downloadWithProgress(context, worker, [uri], `Draftline: downloading ${known?.name ?? 'the next-edit model'}`, log, ['nextEdit']);
  return file;
}

/** The local backend's next-edit model (LocalBackendOptions.nextEditModel), with `reset` for when next edits are toggled. */
export interface NextEditModelResolver {
  (worker: WorkerClient): Promise<{ file: string; format: NextEditSettings['format'] }>;
  reset(): void;
  /** The next-edit model's file once resolved and accepted, for the tooltip and Show Stats. */
  file(): string | undefined;
}

/**
 * The local backend's next-edit model: resolved on the first next-edit request, which only comes
 * while next edits are on. A declined offer is not asked again at every pause (only after the
 * setting changes or next edits are toggled); a failed or interrupted download is offered again at
 * the next request (src/models/nextEditModelMemo.ts). The file is checked for the role once per
 * setting value (however it was set): a model with no next-edit layout is refused, said once, with
 * the picker a click away; a file it cannot read goes on to the worker, which says why it does not load.
 */
export function nextEditModelResolver(context: vscode.ExtensionContext, report?: SettingProblemReport, log?: vscode.LogOutputChannel, onResolved?: () => void): NextEditModelResolver {
  let worker: WorkerClient | undefined;
  let settings: NextEditSettings | undefined;
  let accepted: string | undefined;
  const memo = new NextEditModelMemo<{ file: string; format?: NextEditFormatId }>(async () => {
    const wanted = settings as NextEditSettings;
    accepted = undefined;
    let file: string;
    try {
      file = await resolveNextEditModelFile(context, wanted, worker as WorkerClient, log);
    } catch (error) {
      const e = error as Error & { code?: unknown };
      if (e instanceof DownloadError && e.code === 'cancelled') throw new NextEditModelDeclined(e.message);
      if (!(e instanceof DownloadError) && !(e instanceof NextEditModelDeclined)) {
        // The worker ended under the download: say so (the offer comes back at the next request).
        log?.warn(`next-edit model: the download stopped (${e.message}); it is offered again at the next next-edit request`);
        void vscode.window.showWarningMessage(`Draftline: the download of the next-edit model stopped: ${e.message}. It is offered again at the next pause.`);
      }
      throw error;
    }
    if (!file) return { file };
    const check = await checkChosenFile(context, file, 'nextEdit', { uri: isModelUri(wanted.model) ? wanted.model : undefined });
    if (!check.ok && !check.unreadable) {
      log?.warn(`next-edit model: ${check.problem}`);
      void vscode.window.showWarningMessage(`Draftline: ${check.problem}`, SELECT_NEXT_EDIT_MODEL).then((choice) => {
        if (choice === SELECT_NEXT_EDIT_MODEL) void vscode.commands.executeCommand('draftline.selectNextEditModel');
      });
      throw new NextEditModelDeclined(check.problem);
    }
    accepted = file;
    log?.info(`next-edit model file: ${file}, ${provenanceOf(context, file).text}${check.ok && check.format ? `; prompt layout: ${check.format}` : ''}`);
    onResolved?.();
    return { file, format: check.ok ? check.format : undefined };
  });
  const resolver = async (w: WorkerClient): Promise<{ file: string; format: NextEditSettings['format'] }> => {
    worker = w;
    settings = readNextEditSettings(report);
    const { file, format } = await memo.file(settings.model);
    // A forced layout wins; else the one the check found (a renamed file chosen for a catalog model gets that model's).
    return { file, format: settings.format !== 'auto' ? settings.format : (format ?? 'auto') };
  };
  return Object.assign(resolver, {
    reset: () => {
      memo.reset();
      accepted = undefined;
    },
    file: () => accepted,
  });
}

/** The button that opens the next-edit model picker. */
export const SELECT_NEXT_EDIT_MODEL = 'Select Next-Edit Model';

/**
 * Next edits were turned on: with no next-edit model set (and no format forced), the completion
 * model would have to name a next-edit format itself, which a plain code model does not. Said at
 * once, with the picker a click away, rather than a log line at every pause.
 */
export function adviseNextEditModel(report?: SettingProblemReport, log?: vscode.LogOutputChannel): boolean {
  const settings = readNextEditSettings(report);
  if (settings.model.trim() || settings.format !== 'auto') return false;
  const message =
    'Next-edit suggestions are on, but no next-edit model is set: the completion model serves them only if it names a next-edit format. Choose one (Sweep Next-Edit 1.5B, Zeta…) with Select Next-Edit Model.';
  log?.warn(`next edits: ${message}`);
  void vscode.window.showWarningMessage(`Draftline: ${message}`, SELECT_NEXT_EDIT_MODEL).then((choice) => {
    if (choice === SELECT_NEXT_EDIT_MODEL) void vscode.commands.executeCommand('draftline.selectNextEditModel');
  });
  return true;
}

/** The first-run offer (src/models/onboarding.ts) with VS Code's notification, progress and settings. */
export function offerRecommendedPair(context: vscode.ExtensionContext, worker: WorkerClient, log: vscode.LogOutputChannel, options: { again?: boolean } = {}): Promise<void> {
  return offerPair(
    {
      state: context.globalState,
      machine: () => worker.request('systemInfo', {}),
      ask: (message, ...choices) => vscode.window.showInformationMessage(message, ...choices),
      // The pair's URIs, target first.
      download: (uris, title) => downloadWithProgress(context, worker, uris, title, log, ['target', 'draft']),
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
