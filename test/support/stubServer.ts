// A scripted HTTP server on 127.0.0.1 for the server backends' tests (test/integration/remoteBackends.test.ts):
// each route answers with a JSON status+body, a recorded SSE/NDJSON stream replayed with delays
// (optionally stalling or dropping the connection part way), garbage, a hang, or a dropped
// connection. It records every request (headers, JSON body) and whether and when the client went
// away before the answer was complete (what makes a real server stop generating).
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import * as path from 'node:path';

export const FIXTURES = path.resolve(__dirname, '../fixtures/remote');

/** A fixture file's text, e.g. fixture('llama-server/props.json'). */
export function fixture(name: string): string {
  return fs.readFileSync(path.join(FIXTURES, name), 'utf8');
}

export function fixtureJson<T = unknown>(name: string): T {
  return JSON.parse(fixture(name)) as T;
}

export type Reply =
  | { kind: 'json'; status: number; body: string; headers?: Record<string, string> }
  | {
      kind: 'stream';
      /** Raw pieces written one after the other (an SSE event with its blank line, an NDJSON line, or any bytes). */
      events: (string | Buffer)[];
      contentType: string;
      status?: number;
      /** Wait before each piece after the first. */
      delayMs?: number;
      /** After this many pieces: stop writing and keep the connection open (a stalled server). */
      stallAfter?: number;
      /** After this many pieces: destroy the socket (a crashed server). */
      dropAfter?: number;
    }
  /** Never answers (not even headers) until the client goes away. */
  | { kind: 'hang' }
  /** Destroys the socket without an answer. */
  | { kind: 'drop' };

/** What a route answers: one reply, or one per request in turn (the last one repeats), or computed from the request. */
export type Route = Reply | Reply[] | ((request: RecordedRequest) => Reply);

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  bodyText: string;
  /** The body parsed as JSON (undefined when empty or not JSON). */
  // biome-ignore lint/suspicious/noExplicitAny: tests read request bodies field by field
  json: any;
  receivedAt: number;
  /** Stream pieces written before the answer ended or the client went away. */
  eventsSent: number;
  /** The answer was written completely. */
  finished: boolean;
  /** The client closed the connection before the answer was complete (ms timestamp), if it did. */
  clientGoneAt?: number;
  /** Resolves once the answer ended, one way or the other (true: the client went away first). */
  ended: Promise<boolean>;
}

export function json(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return { kind: 'json', status, body: typeof body === 'string' ? body : JSON.stringify(body), headers };
}

/** A fixture file as the body of a JSON answer. */
export function jsonFixture(status: number, name: string): Reply {
  return json(status, fixture(name));
}

/** Splits SSE text into its events (each with its blank line) and NDJSON text into lines. */
export function splitEvents(text: string, framing: 'sse' | 'ndjson'): string[] {
  if (framing === 'ndjson')
    return text
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => `${l}\n`);
  return text
    .split(/\n\n/)
    .filter((e) => e.trim())
    .map((e) => `${e}\n\n`);
}

export interface StreamOptions {
  delayMs?: number;
  stallAfter?: number;
  dropAfter?: number;
  contentType?: string;
  status?: number;
}

/** Replays SSE or NDJSON text (a fixture's content, or built by the test) as a stream. */
export function stream(text: string, framing: 'sse' | 'ndjson', options: StreamOptions = {}): Reply {
  return {
    kind: 'stream',
    events: splitEvents(text, framing),
    contentType: options.contentType ?? (framing === 'sse' ? 'text/event-stream' : 'application/x-ndjson'),
    status: options.status,
    delayMs: options.delayMs,
    stallAfter: options.stallAfter,
    dropAfter: options.dropAfter,
  };
}

/** A fixture file replayed as a stream (framing from its extension). */
export function replay(name: string, options: StreamOptions = {}): Reply {
  return stream(fixture(name), name.endsWith('.ndjson') ? 'ndjson' : 'sse', options);
}

export function hang(): Reply {
  return { kind: 'hang' };
}

export function drop(): Reply {
  return { kind: 'drop' };
}

export class StubServer {
  readonly requests: RecordedRequest[] = [];
  private readonly server: http.Server | https.Server;
  private readonly sockets = new Set<Socket>();
  private readonly counts = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private listeningPort = 0;

  /** Routes by "METHOD /path" or "/path" (any method); unrouted requests get llama-server's 404. With `tls`, https. */
  constructor(
    public routes: Record<string, Route> = {},
    private readonly tls?: { key: string; cert: string },
  ) {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => void this.handle(req, res);
    this.server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, handler) : http.createServer(handler);
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  static async start(routes: Record<string, Route> = {}, port = 0, tls?: { key: string; cert: string }): Promise<StubServer> {
    const stub = new StubServer(routes, tls);
    await stub.listen(port);
    return stub;
  }

  async listen(port = 0): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.listeningPort = (this.server.address() as AddressInfo).port;
  }

  get port(): number {
    return this.listeningPort;
  }

  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.listeningPort}`;
  }

  /** Requests to a path (and method), in order. */
  to(pathname: string, method?: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path === pathname && (!method || r.method === method));
  }

  /** Stops listening and cuts every open connection (the port then refuses connections). */
  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private route(method: string, pathname: string): Route | undefined {
    return this.routes[`${method} ${pathname}`] ?? this.routes[pathname];
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const bodyText = Buffer.concat(chunks).toString('utf8');
    let parsed: unknown;
    try {
      parsed = bodyText ? JSON.parse(bodyText) : undefined;
    } catch {
      parsed = undefined;
    }
    const pathname = new URL(req.url ?? '/', 'http://stub').pathname;
    let resolveEnded!: (gone: boolean) => void;
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path: pathname,
      headers: req.headers,
      bodyText,
      json: parsed,
      receivedAt: Date.now(),
      eventsSent: 0,
      finished: false,
      ended: new Promise<boolean>((resolve) => (resolveEnded = resolve)),
    };
    this.requests.push(record);
    res.on('close', () => {
      if (!res.writableFinished) record.clientGoneAt ??= Date.now();
      resolveEnded(record.clientGoneAt !== undefined);
    });
    res.on('finish', () => (record.finished = true));

    const reply = this.pick(record);
    switch (reply.kind) {
      case 'json':
        res.writeHead(reply.status, { 'content-type': 'application/json; charset=utf-8', ...reply.headers });
        res.end(reply.body);
        return;
      case 'hang':
        return;
      case 'drop':
        req.socket.destroy();
        return;
      case 'stream':
        return this.writeStream(reply, record, req, res);
    }
  }

  private pick(record: RecordedRequest): Reply {
    const route = this.route(record.method, record.path);
    if (!route) return jsonFixtureOr404();
    if (typeof route === 'function') return route(record);
    if (!Array.isArray(route)) return route;
    const key = `${record.method} ${record.path}`;
    const n = this.counts.get(key) ?? 0;
    this.counts.set(key, n + 1);
    return route[Math.min(n, route.length - 1)];
  }

  private writeStream(reply: Extract<Reply, { kind: 'stream' }>, record: RecordedRequest, req: http.IncomingMessage, res: http.ServerResponse): void {
    res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType, 'cache-control': 'no-cache' });
    res.flushHeaders();
    let i = 0;
    const next = () => {
      if (res.destroyed || record.clientGoneAt !== undefined) return;
      if (reply.dropAfter !== undefined && i >= reply.dropAfter) {
        req.socket.destroy();
        return;
      }
      if (reply.stallAfter !== undefined && i >= reply.stallAfter) return;
      if (i >= reply.events.length) {
        res.end();
        return;
      }
      res.write(reply.events[i++]);
      record.eventsSent = i;
      // The last event and the end of the answer go out together, as a real server's do: a client
      // that closes once it has read the final event must not win a race against the next timer
      // and look as if it had left early (seen under load in the full suite).
      if (i >= reply.events.length && (reply.dropAfter ?? Number.POSITIVE_INFINITY) > i && (reply.stallAfter ?? Number.POSITIVE_INFINITY) > i) {
        res.end();
        return;
      }
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        next();
      }, reply.delayMs ?? 0);
      this.timers.add(timer);
    };
    next();
  }
}

function jsonFixtureOr404(): Reply {
  return json(404, fixture('llama-server/error-404.json'));
}
