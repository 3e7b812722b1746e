import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServedFile {
  file: string;
  /** Bytes per second (throttled in 16 KiB chunks); unlimited when absent. */
  rate?: number;
  /** Drop the connection after this many bytes, the first `times` requests that get that far. */
  dropAfter?: { bytes: number; times: number };
  /** Announce no size (chunked transfer, no ranges), as some servers do. */
  chunked?: boolean;
  /**
   * Answer as the hub does for an LFS file: a 302 to the bytes on another path (the "CDN") whose
   * headers carry `X-Linked-Etag`/`ETag` (the sha256, quoted), `X-Linked-Size` and `X-Repo-Commit`.
   * `true` announces the served file's own sha256; a string announces that one instead.
   */
  hub?: true | string;
  /**
   * A response from byte 0 sends this many bytes, then nothing more (the connection stays open):
   * the rest of the file arrives, its start never does, as when an editor is closed mid-download.
   */
  stallAfter?: number;
}

/** sha256 (hex) of a file, for what a test hub announces. */
export function sha256Of(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

const CDN = '/cdn';

/**
 * A static file server on 127.0.0.1 for the download tests: HEAD, Range (resume), 404, throttling, hub-style
 * redirects carrying a sha256, stalled transfers,
 * and connections cut mid-file. Stands in for the hub and for https model URLs.
 */
export async function startModelServer(routes: Record<string, ServedFile>): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const drops = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push(`${req.method} ${pathname} ${req.headers.range ?? ''}`.trim());
    const cdn = pathname.startsWith(`${CDN}/`) ? routes[pathname.slice(CDN.length)] : undefined;
    const route = cdn?.hub ? cdn : routes[pathname];
    if (!route || !fs.existsSync(route.file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    if (route.hub && !cdn) {
      // The hub's answer: the hash on the redirect, the bytes elsewhere (absolute URL, as to the CDN's host).
      const sha256 = route.hub === true ? sha256Of(route.file) : route.hub;
      res.writeHead(302, {
        location: `http://${req.headers.host}${CDN}${pathname}`,
        'x-linked-etag': `"${sha256}"`,
        etag: `"${sha256}"`,
        'x-linked-size': String(fs.statSync(route.file).size),
        'x-repo-commit': 'c0ffee0000000000000000000000000000000000',
      });
      res.end();
      return;
    }
    const key = cdn ? pathname.slice(CDN.length) : pathname;
    const size = fs.statSync(route.file).size;
    let start = 0;
    let end = size - 1;
    const range = /bytes=(\d+)-(\d*)/.exec(req.headers.range ?? '');
    if (range) {
      start = Number(range[1]);
      end = range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
    }
    if (route.chunked) (start = 0), (end = size - 1);
    const partial = range && !route.chunked;
    const headers = route.chunked
      ? { 'content-type': 'application/octet-stream' }
      : { 'content-type': 'application/octet-stream', 'accept-ranges': 'bytes', 'content-length': String(end - start + 1), ...(partial ? { 'content-range': `bytes ${start}-${end}/${size}` } : {}) };
    res.writeHead(partial ? 206 : 200, headers);
    if (req.method === 'HEAD') return void res.end();
    // Counted when a connection is really cut: the downloader's first GET only reads the headers.
    const dropAt = route.dropAfter && (drops.get(key) ?? 0) < route.dropAfter.times ? route.dropAfter.bytes : Infinity;
    const stallAt = route.stallAfter !== undefined && start === 0 ? route.stallAfter : Infinity;
    const stream = fs.createReadStream(route.file, { start, end, highWaterMark: 16 * 1024 });
    let sent = 0;
    // The next chunk waits for both the socket (drain) and the rate: a 16 KiB chunk fills the
    // response's buffer, so resuming on drain alone would let a local client take it at full speed.
    let waits = 0;
    const release = () => --waits === 0 && stream.resume();
    stream.on('data', (data) => {
      const chunk = data as Buffer;
      if (sent + chunk.length > dropAt) {
        drops.set(key, (drops.get(key) ?? 0) + 1);
        res.write(chunk.subarray(0, Math.max(0, dropAt - sent)));
        stream.destroy();
        res.socket?.destroy();
        return;
      }
      if (sent + chunk.length > stallAt) {
        res.write(chunk.subarray(0, Math.max(0, stallAt - sent)));
        sent = stallAt;
        stream.destroy();
        return;
      }
      sent += chunk.length;
      if (!res.write(chunk)) {
        waits++;
        stream.pause();
        res.once('drain', release);
      }
      if (route.rate) {
        waits++;
        stream.pause();
        setTimeout(release, (chunk.length / route.rate) * 1000);
      }
    });
    stream.on('end', () => res.end());
    req.on('close', () => stream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
