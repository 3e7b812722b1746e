import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServedFile {
  file: string;
  /** Bytes per second (throttled in 16 KiB chunks); unlimited when absent. */
  rate?: number;
  /** Drop the connection after this many bytes, the first `times` requests. */
  dropAfter?: { bytes: number; times: number };
  /** Announce no size (chunked transfer, no ranges), as some servers do. */
  chunked?: boolean;
}

/**
 * A static file server on 127.0.0.1 for the download tests: HEAD, Range (resume), 404, throttling,
 * and connections cut mid-file. Stands in for the hub and for https model URLs.
 */
export async function startModelServer(routes: Record<string, ServedFile>): Promise<{ url: string; requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const drops = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    requests.push(`${req.method} ${pathname} ${req.headers.range ?? ''}`.trim());
    const route = routes[pathname];
    if (!route || !fs.existsSync(route.file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
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
    const dropped = drops.get(pathname) ?? 0;
    const dropAt = route.dropAfter && dropped < route.dropAfter.times ? route.dropAfter.bytes : Infinity;
    if (dropAt !== Infinity) drops.set(pathname, dropped + 1);
    const stream = fs.createReadStream(route.file, { start, end, highWaterMark: 16 * 1024 });
    let sent = 0;
    // The next chunk waits for both the socket (drain) and the rate: a 16 KiB chunk fills the
    // response's buffer, so resuming on drain alone would let a local client take it at full speed.
    let waits = 0;
    const release = () => --waits === 0 && stream.resume();
    stream.on('data', (data) => {
      const chunk = data as Buffer;
      if (sent + chunk.length > dropAt) {
        res.write(chunk.subarray(0, Math.max(0, dropAt - sent)));
        stream.destroy();
        res.socket?.destroy();
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
