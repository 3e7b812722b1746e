// The download itself, through node-llama-cpp's downloader: inference worker only (its `download`
// method). The extension host reads src/models/downloadIndex.ts and asks the worker
// (src/backend/downloadInWorker.ts).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inspectModelFile } from '../gguf/modelFileCheck';
import { catalogModelByUri } from '../models/catalog';
import { DownloadError, downloadedPath, readDownloadIndex, recordDownload, SpeedMeter, type DownloadOptions, type DownloadRecord } from '../models/downloadIndex';
import { blockHosts, unblockAll, useProxy } from './downloadProxy';
import { waitForServer } from './downloadReach';
import { resolvedUrlOf } from '../llama/downloaderInternals';
import { loadLibrary } from './llamaRuntime';
import { type AnnouncedDigest, fetchAnnouncedDigest, hubEndpoint, modelFileUrl, sha256File } from './modelVerification';

/** A download that receives no byte for this long is given up, with a message naming the host. */
const STALL_TIMEOUT_MS = 60_000;

/**
 * Downloads several models as ONE operation (a target and its draft) through node-llama-cpp's
 * downloader: hub URIs and https URLs, resumable (a partial file is kept on failure and continued
 * next time; a cancel removes it). Each finished file is hashed whole (sha256, streamed) and must
 * match what the hub announced for it and, for a catalog entry, its pin (the sha256 the catalog
 * names, else the hash its first download recorded); then it must be a valid GGUF. A file that fails is deleted and nothing is recorded.
 */
export async function downloadModels(uris: string[], options: DownloadOptions): Promise<string[]> {
  fs.mkdirSync(options.dirPath, { recursive: true });
  const pending = uris.filter((uri) => !downloadedPath(options.dirPath, uri));
  if (pending.length > 0) {
    useProxy(options.proxy);
    unblockAll();
    const waiting = (note: string) => options.onProgress?.({ downloadedBytes: 0, totalBytes: 0, bytesPerSecond: 0, etaSeconds: Number.POSITIVE_INFINITY, note });
    // Each server once, before the downloader (which would retry an absent one for many minutes).
    const urls = pending.map((uri) => modelFileUrl(uri, options.huggingFaceEndpoint) ?? hubEndpoint(options.huggingFaceEndpoint));
    const byHost = new Map(urls.map((url) => [new URL(url).host, url]));
    for (const url of byHost.values()) {
      await waitForServer(url, { signal: options.signal, answerTimeoutMs: options.answerTimeoutMs, retryDelaysMs: options.retryDelaysMs, onNote: waiting });
    }
    const lib = await loadLibrary();
    const endpoints = options.huggingFaceEndpoint ? { huggingFace: options.huggingFaceEndpoint } : undefined;
    const speed = new SpeedMeter();
    let downloader: Awaited<ReturnType<typeof lib.combineModelDownloaders>>;
    // The hub's hash first (one HEAD a file): a pinned entry whose hub now announces other bytes is
    // refused before the downloader makes a single request.
    const announced: (AnnouncedDigest | null)[] = await Promise.all(
      pending.map((uri) => {
        const url = modelFileUrl(uri, options.huggingFaceEndpoint);
        return url ? fetchAnnouncedDigest(url, options.signal).catch(() => null) : null;
      }),
    );
    if (options.signal?.aborted) throw new DownloadError('Download cancelled', 'cancelled');
    const pins = pending.map((uri) => pinOf(options.dirPath, uri));
    for (const [i, pin] of pins.entries()) {
      const sha256 = announced[i]?.sha256;
      if (pin && sha256 && sha256 !== pin.sha256) throw new DownloadError(changedUpstream(pending[i], pin, sha256), 'invalid');
    }
    try {
      // Creating one reads the file's size from the server, retrying for minutes if it stops
      // answering, and takes no signal: a cancel returns at once, and a downloader created after it is cancelled.
      const creating = Promise.all(pending.map((uri) => lib.createModelDownloader({ modelUri: uri, dirPath: options.dirPath, deleteTempFileOnCancel: true, endpoints })));
      const single = await untilAborted(creating, options.signal, () => {
        // Until the downloader gives up or is made (and cancelled at once), no request leaves this worker.
        const release = blockHosts(['*']);
        creating.then((made) => Promise.all(made.map((d) => d.cancel({ deleteTempFile: true })))).then(release, release);
      });
      downloader = await lib.combineModelDownloaders(single, {
        onProgress: ({ totalSize, downloadedSize }) => options.onProgress?.(speed.sample(downloadedSize, totalSize)),
      });
      // `hf:user/repo:quant`: the file is known once the downloader has read the hub's manifest.
      for (const [i, known] of announced.entries()) {
        if (known) continue;
        const url = resolvedUrlOf(single[i]);
        announced[i] = url ? await fetchAnnouncedDigest(url, options.signal) : { sha256: null, size: null, commit: null, why: 'the hub resolved this URI through a manifest Draftline cannot read' };
      }
    } catch (error) {
      if (options.signal?.aborted) throw new DownloadError('Download cancelled', 'cancelled');
      throw new DownloadError(`Cannot start the download: ${(error as Error).message}`, 'failed');
    }
    if (options.signal?.aborted) throw new DownloadError('Download cancelled', 'cancelled');
    const hubDigests = announced as AnnouncedDigest[];
    // Refuse up front rather than fill the disk and fail near the end of a multi-GB file.
    const needed = downloader.totalSize - downloader.downloadedSize;
    const free = freeBytes(options.dirPath);
    if (free !== undefined && needed > free) throw new DownloadError(notEnoughSpace(options.dirPath, needed, free), 'failed');
    const cancel = () => void downloader.cancel().catch(() => undefined);
    options.signal?.addEventListener('abort', cancel, { once: true });
    let files: string[];
    const releaseGuard = guardDiskFullRejections();
    // The downloader retries a connection that broke mid-file for many minutes: a download that
    // receives nothing for a while is given up and said so, rather than left showing the same bytes.
    const stallMs = options.stallTimeoutMs ?? STALL_TIMEOUT_MS;
    let lastBytes = downloader.downloadedSize;
    let lastChange = Date.now();
    let stalled = false;
    const watchdog = setInterval(
      () => {
        const now = downloader.downloadedSize;
        if (now !== lastBytes) {
          lastBytes = now;
          lastChange = Date.now();
        } else if (Date.now() - lastChange >= stallMs && !stalled) {
          stalled = true;
          cancel();
        }
      },
      Math.min(1000, stallMs / 4),
    );
    watchdog.unref?.();
    try {
      files = await downloader.download({ signal: options.signal });
      if (stalled) throw new Error('stalled');
    } catch (error) {
      if (options.signal?.aborted) throw new DownloadError('Download cancelled', 'cancelled');
      if (stalled)
        throw new DownloadError(
          `Download failed: no data from ${[...byHost.keys()].join(' or ')} for ${Math.round(stallMs / 1000)} s; stopped (the partial file is kept for the next try, as after any failure).`,
          'failed',
        );
      if (isDiskFull(error)) {
        // Stop the other writes, and free the space a partial file that cannot grow takes.
        await downloader.cancel().catch(() => undefined);
        for (const f of downloader.entrypointFilePaths) removePartial(f);
        throw new DownloadError(notEnoughSpace(options.dirPath, downloader.totalSize - downloader.downloadedSize, freeBytes(options.dirPath) ?? 0), 'failed');
      }
      throw new DownloadError(`Download failed: ${(error as Error).message}`, 'failed');
    } finally {
      clearInterval(watchdog);
      options.signal?.removeEventListener('abort', cancel);
      // The stray rejections come a little after the download itself failed.
      setTimeout(releaseGuard, 2000).unref?.();
    }
    // node-llama-cpp (3.21.1 and 3.22.1 alike) resolves a cancelled download with a path that does not exist.
    if (options.signal?.aborted || files.some((f) => !fs.existsSync(f))) {
      for (const f of downloader.entrypointFilePaths) removePartial(f);
      throw new DownloadError('Download cancelled', 'cancelled');
    }
    const sizes = files.map((f) => fs.statSync(f).size);
    const total = sizes.reduce((a, b) => a + b, 0);
    const hashSpeed = new SpeedMeter();
    let hashedBefore = 0;
    // Each file on its own: a good target is kept (and recorded) when its draft fails.
    const failures: DownloadError[] = [];
    for (const [i, file] of files.entries()) {
      let sha256: string;
      try {
        // The whole file, whatever part of it an earlier attempt left: a resumed file is verified whole.
        sha256 = await sha256File(file, {
          signal: options.signal,
          onProgress: (n) => options.onProgress?.({ ...hashSpeed.sample(hashedBefore + n, total), downloadedBytes: total, verifiedBytes: hashedBefore + n }),
        });
      } catch (error) {
        // Cancelled mid-hash: as for any cancel, the files not yet recorded go.
        for (const f of files.slice(i)) removePartial(f);
        if (options.signal?.aborted) throw new DownloadError('Download cancelled', 'cancelled');
        throw new DownloadError(`Cannot read ${file} to verify it: ${(error as Error).message}`, 'failed');
      }
      hashedBefore += sizes[i];
      const pin = pins[i];
      const hub = hubDigests[i];
      const expected = pin
        ? {
            sha256: pin.sha256,
            by: pin.byCatalog ? 'the sha256 Draftline pins in its catalog is' : `the hash Draftline pinned when it first downloaded it${pin.checkedAt ? ` (${pin.checkedAt.slice(0, 10)})` : ''} is`,
          }
        : hub.sha256
          ? { sha256: hub.sha256, by: 'the hub announced' }
          : null;
      if (expected && sha256 !== expected.sha256) {
        removePartial(file);
        failures.push(
          new DownloadError(
            `${path.basename(file)} (${pending[i]}) is not the file published: its sha256 is ${sha256}, ${expected.by} ${expected.sha256}. The file was deleted and nothing was loaded; downloading again fetches it whole.`,
            'invalid',
          ),
        );
        continue;
      }
      try {
        await inspectModelFile(file);
      } catch (error) {
        fs.rmSync(file, { force: true });
        failures.push(new DownloadError(`${pending[i]} is not a usable model: ${(error as Error).message}`, 'invalid'));
        continue;
      }
      recordDownload(options.dirPath, pending[i], {
        file,
        sha256,
        size: sizes[i],
        checkedAt: new Date().toISOString(),
        verifiedBy: hub.sha256 ? 'hub' : pin ? 'pin' : null,
        ...(hub.sha256 || pin ? {} : { note: hub.why ?? 'the server announced no sha256' }),
        ...(hub.commit ? { commit: hub.commit } : {}),
      });
    }
    if (failures.length > 0) throw failures.length === 1 ? failures[0] : new DownloadError(failures.map((f) => f.message).join('\n'), 'invalid');
  }
  return uris.map((uri) => downloadedPath(options.dirPath, uri)!);
}

/** `promise`, or a 'cancelled' DownloadError as soon as `signal` fires (then `onAbort` deals with what the promise still does). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined, onAbort: () => void): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      onAbort();
      reject(new DownloadError('Download cancelled', 'cancelled'));
    };
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (error) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}

/**
 * The pin of a catalog entry: the hash and size its first successful download recorded. The
 * catalog names a revision as well as a file, so the bytes must not change; if they do (a moved
 * revision, a mirror serving something else), the new file is reported, not used.
 */
function pinOf(dirPath: string, uri: string): Pin | undefined {
  const entry = catalogModelByUri(uri, { exact: true });
  if (!entry) return undefined;
  // Pinned by the catalog itself (from the hub's LFS pointer): checked from the first download on.
  if (entry.sha256) return { sha256: entry.sha256, size: entry.sizeBytes, byCatalog: true };
  const record = readDownloadIndex(dirPath)[uri.trim()];
  return record?.sha256 ? { ...(record as DownloadRecord & { sha256: string }), byCatalog: false } : undefined;
}

type Pin = Pick<DownloadRecord, 'size' | 'checkedAt'> & { sha256: string; byCatalog: boolean };

/** Where a pin comes from, for the messages: the catalog, or the first download. */
function pinnedWhen(pin: Pin): string {
  if (pin.byCatalog) return 'in its catalog';
  return `when it first downloaded it${pin.checkedAt ? ` on ${pin.checkedAt.slice(0, 10)}` : ''}`;
}

function changedUpstream(uri: string, pin: Pin, announced: string): string {
  return `${uri} changed upstream: the hub now announces sha256 ${announced}, Draftline pinned ${pin.sha256}${pin.size ? ` (${pin.size} bytes)` : ''} ${pinnedWhen(pin)}. Not downloaded; the pinned file is the one Draftline was tested with.`;
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
