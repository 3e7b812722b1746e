// The extension host's way to download models: it asks the inference worker (the `download` method),
// which runs node-llama-cpp's downloader (src/inference/modelDownloader.ts). Host-safe: nothing here
// imports node-llama-cpp.
import type { WorkerClient } from '../worker/workerClient';
import { DownloadError, downloadedPath, isDownloadErrorCode, type DownloadOptions } from '../models/downloadIndex';

/**
 * downloadModels, run in the worker: same options, same result (local paths in the order of `uris`),
 * progress while it runs, `signal` cancels it there (the partial files go, as in-process). A download
 * that failed rejects with a DownloadError of the worker's code ('cancelled' | 'failed' | 'invalid');
 * a worker that could not run it (crashed, restarting, stopped, timed out) with its WorkerError, whose
 * code the controller already tells apart (a crash shows the restart countdown, not an error).
 */
export async function downloadInWorker(worker: Pick<WorkerClient, 'request'>, uris: string[], options: DownloadOptions): Promise<string[]> {
  // Already downloaded: resolved offline, as the worker would.
  const known = uris.map((uri) => downloadedPath(options.dirPath, uri));
  if (known.every((file) => file !== undefined)) return known as string[];
  if (options.signal?.aborted) throw new DownloadError('Download cancelled', 'cancelled');
  try {
    return await worker.request('download', { uris, dirPath: options.dirPath, huggingFaceEndpoint: options.huggingFaceEndpoint, proxy: options.proxy }, options.signal, options.onProgress);
  } catch (error) {
    const { message, code } = error as Error & { code?: unknown };
    throw isDownloadErrorCode(code) ? new DownloadError(message, code) : error;
  }
}
