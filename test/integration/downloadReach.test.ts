// Downloads with no route to the server: they fail fast and say why, a cancel stops every
// connection at once, and a proxy is used when set. Loopback servers only (one that accepts and
// never answers, one that resets), and a name that cannot resolve.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { unblockAll, useProxy } from '../../src/inference/downloadProxy';
import { waitForServer } from '../../src/inference/downloadReach';
import { downloadModels } from '../../src/inference/modelDownloader';
import { startModelServer } from '../support/modelServer';
import { DownloadError, type DownloadProgress, progressMessage } from '../../src/models/downloadIndex';

const OUT = path.resolve(__dirname, '../../test-output/downloadReach');

/** A TCP server on 127.0.0.1 that counts connections and does with each what `serve` says. */
async function tcpServer(serve: (socket: net.Socket, index: number) => void): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  let count = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    serve(socket, count++);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

const silent = () => tcpServer(() => undefined);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([promise, sleep(ms).then(() => assert.fail(`${what}: still waiting after ${ms} ms`))]);
}

describe('downloads with no route to the server', () => {
  const closing: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closing) await close();
    useProxy({});
  });

  it('a server that accepts and never answers: a clear error naming the host after the bounded retries, with each wait and retry told', async () => {
    const server = await silent();
    closing.push(server.close);
    const notes: string[] = [];
    const started = Date.now();
    const error = await within(
      downloadModels([`${server.url}/m/model.gguf`], {
        dirPath: path.join(OUT, 'silent'),
        answerTimeoutMs: 300,
        retryDelaysMs: [50, 100],
        onProgress: (p: DownloadProgress) => p.note && notes.push(p.note),
      }).then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      ),
      5000,
      'the download',
    );
    assert.ok(error instanceof DownloadError, String(error));
    assert.equal(error.code, 'failed');
    const host = new URL(server.url).host;
    assert.equal(error.message, `Cannot download from ${host}: no answer from ${host} in 0.3 s.`);
    assert.equal(server.connections(), 3, 'three attempts, no more');
    assert.ok(Date.now() - started < 3000);
    assert.match(notes[0], new RegExp(`^waiting for ${host}…`));
    assert.ok(
      notes.some((n) => /no answer .* retrying in 0\.05 s \(attempt 2 of 3\)/.test(n)),
      notes.join(' | '),
    );
  });

  it('a name that does not resolve: "cannot resolve" it, at once', async () => {
    const error = await within(
      downloadModels(['http://nonexistent.invalid/m/model.gguf'], { dirPath: path.join(OUT, 'dns'), answerTimeoutMs: 2000, retryDelaysMs: [50] }).then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      ),
      6000,
      'the download',
    );
    assert.ok(error instanceof DownloadError, String(error));
    assert.match(error.message, /^Cannot download from nonexistent\.invalid: cannot resolve nonexistent\.invalid/);
  });

  it('cancel while waiting for an answer: cancelled at once, and no further connection', async () => {
    const server = await silent();
    closing.push(server.close);
    const controller = new AbortController();
    const pending = downloadModels([`${server.url}/m/model.gguf`], { dirPath: path.join(OUT, 'cancel-wait'), signal: controller.signal, answerTimeoutMs: 10_000, retryDelaysMs: [50, 50] });
    while (server.connections() === 0) await sleep(10);
    controller.abort();
    await within(
      assert.rejects(pending, (e: DownloadError) => e.code === 'cancelled'),
      500,
      'the cancel',
    );
    await sleep(1000);
    assert.equal(server.connections(), 1);
  });

  it('cancel while the downloader retries a server that stopped answering: cancelled at once, and no further connection', async () => {
    // The first two connections answer the HEADs asked before the downloader starts; from then on
    // every connection is reset, and node-llama-cpp's downloader retries it (for minutes).
    const server = await tcpServer((socket, index) => {
      if (index >= 2) return void socket.destroy();
      socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\nAccept-Ranges: bytes\r\nConnection: close\r\n\r\n'));
    });
    closing.push(server.close);
    const dir = path.join(OUT, 'cancel-retry');
    fs.rmSync(dir, { recursive: true, force: true });
    const controller = new AbortController();
    const pending = downloadModels([`${server.url}/m/model.gguf`], { dirPath: dir, signal: controller.signal });
    pending.catch(() => undefined);
    const deadline = Date.now() + 8000;
    while (server.connections() < 4 && Date.now() < deadline) await sleep(20);
    assert.ok(server.connections() >= 4, `the downloader retried (${server.connections()} connections)`);
    controller.abort();
    await within(
      assert.rejects(pending, (e: DownloadError) => e.code === 'cancelled'),
      500,
      'the cancel',
    );
    const atCancel = server.connections();
    // The downloader's retries come every 0.2 to 5 s: two seconds see several of them.
    await sleep(2000);
    assert.equal(server.connections(), atCancel, 'no connection after the cancel');
    assert.deepEqual(
      fs.readdirSync(dir).filter((f) => f !== 'downloads.json'),
      [],
    );
  });

  it('a transfer that stops sending: given up after the stall timeout, naming the host', async () => {
    const file = path.resolve(__dirname, '../../models/tiny-code-target.gguf');
    const hub = await startModelServer({ '/m/stall.gguf': { file, stallAfter: 200_000 } });
    closing.push(hub.close);
    const dir = path.join(OUT, 'stall');
    fs.rmSync(dir, { recursive: true, force: true });
    const host = new URL(hub.url).host;
    const error = await within(
      downloadModels([`${hub.url}/m/stall.gguf`], { dirPath: dir, stallTimeoutMs: 1500 }).then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      ),
      15_000,
      'the stalled download',
    );
    assert.ok(error instanceof DownloadError, String(error));
    assert.equal(error.code, 'failed');
    assert.match(error.message, new RegExp(`no data from ${host} for 2 s`));
  });

  it('goes through the proxy set in http.proxy, and says "proxy refused" when the proxy refuses', async () => {
    const target = await tcpServer((socket) => socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')));
    closing.push(target.close);
    const tunnels: string[] = [];
    let refuse = false;
    const proxy = http.createServer();
    proxy.on('connect', (req, socket, head) => {
      tunnels.push(String(req.url));
      if (refuse) return void socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      const [host, port] = String(req.url).split(':');
      const upstream = net.connect(Number(port), host, () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(socket);
        socket.pipe(upstream);
      });
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    closing.push(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    const host = new URL(target.url).host;
    // As a new download does: the cancelled one above may still be retrying, refused, in the background.
    unblockAll();
    useProxy({ url: proxyUrl });
    try {
      const notes: string[] = [];
      await waitForServer(`${target.url}/m/model.gguf`, { answerTimeoutMs: 2000, onNote: (n) => notes.push(n) });
      assert.deepEqual(tunnels, [host]);
      assert.match(notes[0], new RegExp(`through the proxy ${new URL(proxyUrl).host}`));
      refuse = true;
      await assert.rejects(waitForServer(`${target.url}/m/model.gguf`, { answerTimeoutMs: 2000, retryDelaysMs: [50] }), (e: DownloadError) => {
        assert.equal(e.code, 'failed');
        assert.match(e.message, new RegExp(`^Cannot download from ${host}: proxy refused: 127\\.0\\.0\\.1:\\d+ answered HTTP 403`));
        return true;
      });
      // A host in http.noProxy goes direct.
      useProxy({ url: proxyUrl, noProxy: ['127.0.0.1'] });
      const before = tunnels.length;
      await waitForServer(`${target.url}/m/model.gguf`, { answerTimeoutMs: 2000 });
      assert.equal(tunnels.length, before);
    } finally {
      useProxy({});
    }
  });
});

describe("a download's progress text", () => {
  it('says what it waits for before the first byte, then bytes and percent', () => {
    assert.equal(progressMessage({ downloadedBytes: 0, totalBytes: 0, bytesPerSecond: 0, etaSeconds: Number.POSITIVE_INFINITY, note: 'waiting for huggingface.co…' }), 'waiting for huggingface.co…');
    assert.equal(progressMessage({ downloadedBytes: 412_000_000, totalBytes: 1_650_000_000, bytesPerSecond: 10_000_000, etaSeconds: 124 }), '412 MB of 1650 MB (24%) · 10.0 MB/s · 2 min 4 s left');
    assert.equal(progressMessage({ downloadedBytes: 5_000_000, totalBytes: 0, bytesPerSecond: 1_000_000, etaSeconds: Number.POSITIVE_INFINITY }), '5.0 MB · 1.0 MB/s');
  });
});
