// The host-safe half of model downloads: URIs, the index of finished downloads, progress and errors.
// It never imports node-llama-cpp: the extension host reads the index and shows progress, while the
// download itself (src/inference/modelDownloader.ts, node-llama-cpp's downloader) runs in the
// inference worker.
import * as fs from 'node:fs';
import * as path from 'node:path';

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

export type DownloadErrorCode = 'cancelled' | 'failed' | 'invalid';

export class DownloadError extends Error {
  constructor(
    message: string,
    readonly code: DownloadErrorCode,
  ) {
    super(message);
  }
}

export function isDownloadErrorCode(code: unknown): code is DownloadErrorCode {
  return code === 'cancelled' || code === 'failed' || code === 'invalid';
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

/** Records a download that passed its checks (called by the downloader only). */
export function recordDownload(dirPath: string, uri: string, file: string): void {
  const index = readDownloadIndex(dirPath);
  index[uri.trim()] = file;
  fs.writeFileSync(path.join(dirPath, INDEX_FILE), JSON.stringify(index, null, 2));
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
