// The download itself, through node-llama-cpp's downloader: inference worker only (its `download`
// method). The extension host reads src/models/downloadIndex.ts and asks the worker
// (src/models/downloadInWorker.ts).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inspectModelFile } from '../gguf/modelFileCheck';
import { DownloadError, downloadedPath, recordDownload, SpeedMeter, type DownloadOptions } from '../models/downloadIndex';
import { loadLibrary } from './llamaRuntime';

/**
 * Downloads several models as ONE operation (a target and its draft) through node-llama-cpp's
 * downloader: hub URIs and https URLs, resumable (a partial file is kept on failure and continued
 * next time; a cancel removes it), each file checked to exist and to be a valid GGUF before use.
 */
export async function downloadModels(uris: string[], options: DownloadOptions): Promise<string[]> {
  fs.mkdirSync(options.dirPath, { recursive: true });
  const pending = uris.filter((uri) => !downloadedPath(options.dirPath, uri));
  if (pending.length > 0) {
    const lib = await loadLibrary();
    const endpoints = options.huggingFaceEndpoint ? { huggingFace: options.huggingFaceEndpoint } : undefined;
    const speed = new SpeedMeter();
    let downloader: Awaited<ReturnType<typeof lib.combineModelDownloaders>>;
    try {
      downloader = await lib.combineModelDownloaders(
        pending.map((uri) => lib.createModelDownloader({ modelUri: uri, dirPath: options.dirPath, deleteTempFileOnCancel: true, endpoints })),
        {
          onProgress: ({ totalSize, downloadedSize }) => options.onProgress?.(speed.sample(downloadedSize, totalSize)),
        },
      );
    } catch (error) {
      throw new DownloadError(`Cannot start the download: ${(error as Error).message}`, 'failed');
    }
    if (options.signal?.aborted) throw new DownloadError('Download cancelled', 'cancelled');
    // Refuse up front rather than fill the disk and fail near the end of a multi-GB file.
    const needed = downloader.totalSize - downloader.downloadedSize;
    const free = freeBytes(options.dirPath);
    if (free !== undefined && needed > free) throw new DownloadError(notEnoughSpace(options.dirPath, needed, free), 'failed');
    const cancel = () => void downloader.cancel().catch(() => undefined);
    options.signal?.addEventListener('abort', cancel, { once: true });
    let files: string[];
    const releaseGuard = guardDiskFullRejections();
    try {
      files = await downloader.download({ signal: options.signal });
    } catch (error) {
      if (options.signal?.aborted) throw new DownloadError('Download cancelled', 'cancelled');
      if (isDiskFull(error)) {
        // Stop the other writes, and free the space a partial file that cannot grow takes.
        await downloader.cancel().catch(() => undefined);
        for (const f of downloader.entrypointFilePaths) removePartial(f);
        throw new DownloadError(notEnoughSpace(options.dirPath, downloader.totalSize - downloader.downloadedSize, freeBytes(options.dirPath) ?? 0), 'failed');
      }
      throw new DownloadError(`Download failed: ${(error as Error).message}`, 'failed');
    } finally {
      options.signal?.removeEventListener('abort', cancel);
      // The stray rejections come a little after the download itself failed.
      setTimeout(releaseGuard, 2000).unref?.();
    }
    // node-llama-cpp 3.22.1 resolves a cancelled download with a path that does not exist.
    if (options.signal?.aborted || files.some((f) => !fs.existsSync(f))) {
      for (const f of downloader.entrypointFilePaths) removePartial(f);
      throw new DownloadError('Download cancelled', 'cancelled');
    }
    for (const [i, file] of files.entries()) {
      try {
        await inspectModelFile(file);
      } catch (error) {
        fs.rmSync(file, { force: true });
        throw new DownloadError(`${pending[i]} is not a usable model: ${(error as Error).message}`, 'invalid');
      }
      recordDownload(options.dirPath, pending[i], file);
    }
  }
  return uris.map((uri) => downloadedPath(options.dirPath, uri)!);
}

function freeBytes(dir: string): number | undefined {
  try {
    const s = fs.statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}

/**
 * ipull (node-llama-cpp's downloader) leaves the ENOSPC rejections of its parallel chunk writes
 * unhandled when the disk fills mid-file: without a listener they would end a plain Node process.
 * While a download runs they are taken here (the download itself fails with a clear message).
 */
let guards = 0;
const onRejection = (reason: unknown) => {
  if (!isDiskFull(reason)) console.error('Unhandled rejection:', reason);
};
function guardDiskFullRejections(): () => void {
  if (guards++ === 0) process.on('unhandledRejection', onRejection);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--guards === 0) process.off('unhandledRejection', onRejection);
  };
}

function isDiskFull(error: unknown): boolean {
  for (let e = error as { code?: string; message?: string; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (e.code === 'ENOSPC' || /ENOSPC|no space left/i.test(e.message ?? '')) return true;
  }
  return false;
}

function notEnoughSpace(dir: string, neededBytes: number, availableBytes: number): string {
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  // Some servers announce no size: then all we know is that the disk filled up.
  return neededBytes > 0
    ? `Not enough disk space in ${dir}: the download needs ${mb(neededBytes)}, ${mb(availableBytes)} free.`
    : `Not enough disk space in ${dir}: the disk filled up during the download (${mb(availableBytes)} free).`;
}

function removePartial(file: string): void {
  const dir = path.dirname(file);
  const base = path.basename(file);
  for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) if (f.startsWith(base)) fs.rmSync(path.join(dir, f), { force: true });
}
