import * as fs from 'node:fs';
import * as path from 'node:path';
import { inspectModelFile } from '../gguf/modelFileCheck';
import { loadLibrary } from '../inference/llamaRuntime';

export interface DownloadProgress {
  downloadedBytes: number;
  totalBytes: number;
  /** Bytes per second over the last few seconds. */
  bytesPerSecond: number;
  /** Seconds left at that speed (Infinity while unknown). */
  etaSeconds: number;
}

export interface DownloadOptions {
  /** Where models are stored (the extension's global storage). */
  dirPath: string;
  signal?: AbortSignal;
  onProgress?: (progress: DownloadProgress) => void;
  /** Overrides the Hugging Face endpoint (tests point it at a local server). */
  huggingFaceEndpoint?: string;
}

export class DownloadError extends Error {
  constructor(
    message: string,
    readonly code: 'cancelled' | 'failed' | 'invalid',
  ) {
    super(message);
  }
}

/** Model URIs (downloadable) as opposed to local paths. */
export function isModelUri(value: string): boolean {
  return /^(hf:|https?:\/\/)/i.test(value.trim());
}

const INDEX_FILE = 'downloads.json';

/** uri -> file, recorded after a download passed its checks: URIs resolve offline afterwards. */
export function readDownloadIndex(dirPath: string): Record<string, string> {
  try {
    return JSON.parse(fs.readFileSync(path.join(dirPath, INDEX_FILE), 'utf8'));
  } catch {
    return {};
  }
}

/** The local file of an already downloaded URI, if it is still there. */
export function downloadedPath(dirPath: string, uri: string): string | undefined {
  const file = readDownloadIndex(dirPath)[uri.trim()];
  return file && fs.existsSync(file) ? file : undefined;
}

function recordDownload(dirPath: string, uri: string, file: string): void {
  const index = readDownloadIndex(dirPath);
  index[uri.trim()] = file;
  fs.writeFileSync(path.join(dirPath, INDEX_FILE), JSON.stringify(index, null, 2));
}

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

/** Download speed over a sliding window of a few seconds, and the ETA it implies. */
export class SpeedMeter {
  private samples: { at: number; bytes: number }[] = [];
  constructor(
    private readonly windowMs = 5000,
    private readonly now: () => number = () => Date.now(),
  ) {}

  sample(downloadedBytes: number, totalBytes: number): DownloadProgress {
    const at = this.now();
    this.samples.push({ at, bytes: downloadedBytes });
    while (this.samples.length > 2 && at - this.samples[0].at > this.windowMs) this.samples.shift();
    const first = this.samples[0];
    const seconds = (at - first.at) / 1000;
    const bytesPerSecond = seconds > 0 ? Math.max(0, downloadedBytes - first.bytes) / seconds : 0;
    const left = Math.max(0, totalBytes - downloadedBytes);
    return { downloadedBytes, totalBytes, bytesPerSecond, etaSeconds: left === 0 ? 0 : bytesPerSecond > 0 ? left / bytesPerSecond : Infinity };
  }
}
