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
  /** Set once the bytes are in: the sha256 check of the finished files, bytes hashed so far of `totalBytes`. */
  verifiedBytes?: number;
  /** Before any byte: what the download is waiting for or retrying, in words (shown, and logged by the extension host). */
  note?: string;
}

/** The proxy downloads go through: VS Code's `http.proxy` and `http.noProxy` (else HTTPS_PROXY and the like). */
export interface DownloadProxySettings {
  url?: string;
  noProxy?: string[];
}

export interface DownloadOptions {
  /** Where models are stored (the extension's global storage). */
  dirPath: string;
  signal?: AbortSignal;
  onProgress?: (progress: DownloadProgress) => void;
  /** Overrides the Hugging Face endpoint (tests point it at a local server). */
  huggingFaceEndpoint?: string;
  proxy?: DownloadProxySettings;
  /** How long one attempt to reach a server waits for its answer (tests shorten it). */
  answerTimeoutMs?: number;
  /** The waits between attempts to reach a server; their count bounds the retries (tests shorten them). */
  retryDelaysMs?: number[];
  /** A download that receives no byte for this long is given up (tests shorten it). */
  stallTimeoutMs?: number;
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

/**
 * What the index keeps of one finished download: the file, and what its bytes were checked against.
 * `sha256`/`size` are what this download computed; for a catalog entry they are also its pin (a
 * later re-download of the same URI must give the same bytes).
 */
export interface DownloadRecord {
  file: string;
  /** sha256 of the whole file, hex; absent in records written before Draftline hashed downloads. */
  sha256?: string;
  size?: number;
  /** When the hash was computed (ISO 8601). */
  checkedAt?: string;
  /** What the hash matched: the hub's announced sha256, the catalog pin, or nothing (`note` says why). */
  verifiedBy?: 'hub' | 'pin' | null;
  /** Why the file could not be verified (e.g. the server announced no sha256). */
  note?: string;
  /** The repository commit the hub served the file from (X-Repo-Commit), when it says. */
  commit?: string;
}

/** uri -> record, written after a download passed its checks: URIs resolve offline afterwards. */
export function readDownloadIndex(dirPath: string): Record<string, DownloadRecord> {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(fs.readFileSync(path.join(dirPath, INDEX_FILE), 'utf8'));
  } catch {
    return {};
  }
  const index: Record<string, DownloadRecord> = {};
  for (const [uri, value] of Object.entries(raw ?? {})) {
    // Before hashes were kept the index mapped a URI straight to its file.
    if (typeof value === 'string') index[uri] = { file: value };
    else if (value && typeof (value as DownloadRecord).file === 'string') index[uri] = value as DownloadRecord;
  }
  return index;
}

/** The local file of an already downloaded URI, if it is still there. */
export function downloadedPath(dirPath: string, uri: string): string | undefined {
  const file = readDownloadIndex(dirPath)[uri.trim()]?.file;
  return file && fs.existsSync(file) ? file : undefined;
}

/** Records a download that passed its checks (called by the downloader only). */
export function recordDownload(dirPath: string, uri: string, record: DownloadRecord): void {
  const index = readDownloadIndex(dirPath);
  index[uri.trim()] = record;
  fs.writeFileSync(path.join(dirPath, INDEX_FILE), JSON.stringify(index, null, 2));
}

/** The index's record of a local file (the newest, if several URIs name it), for Show Stats and the picker. */
export function recordOfFile(dirPath: string, file: string): DownloadRecord | undefined {
  const wanted = path.resolve(file);
  const matches = Object.values(readDownloadIndex(dirPath)).filter((r) => path.resolve(r.file) === wanted);
  return matches.sort((a, b) => (b.checkedAt ?? '').localeCompare(a.checkedAt ?? ''))[0];
}

/** Where a model file's bytes come from: `text` for Show Stats and the log, `short` for the model picker. */
export interface Provenance {
  verified: boolean;
  text: string;
  short: string;
}

/** What every place that names a model says of a file the user chose from disk. */
export const LOCAL_FILE = 'local file, not verified';

/**
 * Where a model file's bytes come from, in a few words and without alarm: verified downloads say
 * against what and when; a file the user chose from disk (picked or typed, or chosen in place of a
 * download: its record points outside the models folder) is a "local file, not verified".
 */
export function describeProvenance(dirPath: string, file: string, embeddedFiles: string[] = []): Provenance {
  if (embeddedFiles.some((f) => path.resolve(f) === path.resolve(file))) return { verified: true, text: 'embedded (ships with Draftline)', short: 'embedded' };
  const record = recordOfFile(dirPath, file);
  if (!record) return { verified: false, text: `${LOCAL_FILE} (not downloaded by Draftline)`, short: LOCAL_FILE };
  const inModelsFolder = !path.relative(path.resolve(dirPath), path.resolve(record.file)).startsWith('..');
  if (!inModelsFolder) return { verified: false, text: `${LOCAL_FILE} (chosen in place of a download, not downloaded by Draftline)`, short: LOCAL_FILE };
  if (!record.sha256) return { verified: false, text: `not verified (${record.note ?? 'downloaded before Draftline checked hashes'})`, short: 'not verified' };
  const when = record.checkedAt ? ` on ${record.checkedAt.slice(0, 16).replace('T', ' ')} UTC` : '';
  const digest = `sha256 ${record.sha256.slice(0, 12)}…`;
  const short = `verified${record.checkedAt ? ` ${record.checkedAt.slice(0, 10)}` : ''}`;
  if (record.verifiedBy === 'hub') return { verified: true, text: `verified: ${digest} matched the hub's${when}`, short };
  if (record.verifiedBy === 'pin') return { verified: true, text: `verified: ${digest} matched the pinned hash${when}`, short };
  return { verified: false, text: `not verified: ${record.note ?? 'no hash to check against'} (${digest} recorded${when})`, short: 'not verified' };
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 1e8 ? 1 : 0)} MB`;

function formatEta(seconds: number): string {
  if (!Number.isFinite(seconds)) return '…';
  if (seconds < 60) return `${Math.ceil(seconds)} s`;
  return `${Math.floor(seconds / 60)} min ${Math.ceil(seconds % 60)} s`;
}

/**
 * A download's progress as its notification says it: what it waits for before the first byte
 * ("waiting for huggingface.co…", a retry), then bytes, percent, speed and time left; then the
 * sha256 check.
 */
export function progressMessage(p: DownloadProgress): string {
  if (p.note !== undefined && p.downloadedBytes === 0) return p.note;
  if (p.verifiedBytes !== undefined) return `verifying sha256: ${mb(p.verifiedBytes)} of ${mb(p.totalBytes)} · ${formatEta(p.etaSeconds)} left`;
  if (p.totalBytes <= 0) return `${mb(p.downloadedBytes)} · ${mb(p.bytesPerSecond)}/s`;
  const percent = Math.floor((100 * p.downloadedBytes) / p.totalBytes);
  return `${mb(p.downloadedBytes)} of ${mb(p.totalBytes)} (${percent}%) · ${mb(p.bytesPerSecond)}/s · ${formatEta(p.etaSeconds)} left`;
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
