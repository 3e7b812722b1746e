// Downloads through the proxy the user set: VS Code's `http.proxy` (passed from the extension
// host), else the standard HTTPS_PROXY / HTTP_PROXY / NO_PROXY environment variables. node-llama-cpp's
// downloader and our own requests both use the global fetch, so one undici dispatcher set here
// covers them. Worker side only (the extension host's own requests are VS Code's business).
import { Agent, type Dispatcher, EnvHttpProxyAgent, getGlobalDispatcher, ProxyAgent, setGlobalDispatcher } from 'undici';

export interface ProxySettings {
  /** `http.proxy`: used for every download when set. */
  url?: string;
  /** `http.noProxy`: hosts reached directly even so. */
  noProxy?: string[];
}

let current: { key: string; explicit?: string; noProxy: string[] } | undefined;
let gate: Gate | undefined;

/** Sets the dispatcher the next downloads go through (a no-op when nothing changed). */
export function useProxy(settings: ProxySettings = {}): void {
  const explicit = settings.url?.trim() || undefined;
  const noProxy = settings.noProxy ?? [];
  const env = envProxy();
  const key = JSON.stringify([explicit, noProxy, env]);
  if (!gate) {
    gate = new Gate(getGlobalDispatcher());
    setGlobalDispatcher(gate);
  }
  if (current?.key === key) return;
  if (explicit) {
    const proxied = new ProxyAgent(explicit);
    gate.inner = noProxy.length > 0 ? new NoProxySplit(proxied, gate.original, noProxy) : proxied;
  } else if (env.https || env.http) gate.inner = new EnvHttpProxyAgent();
  else gate.inner = gate.original;
  current = { key, explicit, noProxy };
}

/**
 * Refuses, without a connection, every request to these hosts (`*`: to any) until the returned function is
 * called: a cancelled download's downloader goes on retrying in the background (it takes no
 * signal while it starts), and a cancel must stop its traffic at once.
 */
export function blockHosts(hosts: string[]): () => void {
  if (!gate) useProxy();
  const g = gate as Gate;
  for (const h of hosts) g.blocked.set(h, (g.blocked.get(h) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    for (const h of hosts) {
      const n = (g.blocked.get(h) ?? 1) - 1;
      if (n > 0) g.blocked.set(h, n);
      else g.blocked.delete(h);
    }
  };
}

/** Lets a new download through even while an older, cancelled one's retries linger. */
export function unblockAll(): void {
  gate?.blocked.clear();
}

/**
 * A dispatcher of its own for one request to `url`, through the same proxy as the downloads: the
 * caller destroys it afterwards (a shared pool opens a new connection after an aborted request).
 */
export function freshDispatcher(url: string): Dispatcher {
  if (!activeProxy(url)) return new Agent();
  const explicit = current?.explicit;
  return explicit ? new ProxyAgent(explicit) : new EnvHttpProxyAgent();
}

/** The proxy a request to `url` goes through (for the messages), or undefined when it goes direct. */
export function activeProxy(url: string): string | undefined {
  const target = new URL(url);
  const env = envProxy();
  const explicit = current?.explicit;
  const noProxy = explicit ? (current?.noProxy ?? []) : splitList(process.env.NO_PROXY ?? process.env.no_proxy ?? '');
  const proxy = explicit ?? (target.protocol === 'https:' ? (env.https ?? env.http) : env.http);
  if (!proxy || bypasses(target, noProxy)) return undefined;
  return safeProxyName(proxy);
}

function envProxy(): { https?: string; http?: string } {
  const pick = (...names: string[]) => names.map((n) => process.env[n]).find((v) => v?.trim());
  return { https: pick('HTTPS_PROXY', 'https_proxy'), http: pick('HTTP_PROXY', 'http_proxy') };
}

function splitList(value: string): string[] {
  return value
    .split(/[,\s]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

/** NO_PROXY's usual reading: `*`, a host, `.domain` or `domain` (its subdomains too), with an optional port. */
function bypasses(target: URL, noProxy: string[]): boolean {
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = target.port || (target.protocol === 'https:' ? '443' : '80');
  return noProxy.some((entry) => {
    if (entry === '*') return true;
    const [name, entryPort] = entry
      .toLowerCase()
      .replace(/^\*?\./, '.')
      .split(':');
    if (entryPort && entryPort !== port) return false;
    const bare = name.replace(/^\./, '');
    return host === bare || host.endsWith(`.${bare}`);
  });
}

/** The proxy's address without any user and password in it. */
function safeProxyName(proxy: string): string {
  try {
    const u = new URL(proxy);
    return u.host;
  } catch {
    return 'the configured proxy';
  }
}

/** The global dispatcher: the chosen one (direct or a proxy); requests to the hosts of cancelled downloads are refused. */
class Gate extends Agent {
  readonly blocked = new Map<string, number>();
  inner: Dispatcher;
  constructor(readonly original: Dispatcher) {
    super();
    this.inner = original;
  }
  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const host = new URL(String(options.origin)).host;
    if (!this.blocked.has(host) && !this.blocked.has('*')) return this.inner.dispatch(options, handler);
    // Answered here with a 410: node-llama-cpp's downloader gives up at once on a client error
    // (it would retry a network error for minutes), and nothing leaves this machine.
    queueMicrotask(() => answerGone(handler));
    return true;
  }
}

/** An empty `410 Gone` to a handler of either form: Node's own fetch hands in the older one (onHeaders), undici 7 the newer. */
function answerGone(handler: Dispatcher.DispatchHandler): void {
  const legacy = handler as {
    onConnect?: (abort: () => void) => void;
    onHeaders?: (status: number, headers: Buffer[], resume: () => void, statusText: string) => boolean;
    onComplete?: (trailers: Buffer[] | null) => void;
  };
  if (legacy.onHeaders) {
    legacy.onConnect?.(() => undefined);
    legacy.onHeaders(410, [Buffer.from('content-length'), Buffer.from('0')], () => undefined, 'Gone');
    legacy.onComplete?.([]);
    return;
  }
  const controller = { abort: () => undefined, pause: () => undefined, resume: () => undefined, aborted: false, paused: false, reason: null } as unknown as Dispatcher.DispatchController;
  handler.onRequestStart?.(controller, {});
  handler.onResponseStart?.(controller, 410, { 'content-length': '0' }, 'Gone');
  handler.onResponseEnd?.(controller, {});
}

/** `http.proxy` with `http.noProxy`: the listed hosts go direct, the rest through the proxy. */
class NoProxySplit extends Agent {
  constructor(
    private readonly proxied: Dispatcher,
    private readonly direct: Dispatcher,
    private readonly noProxy: string[],
  ) {
    super();
  }
  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const origin = new URL(String(options.origin));
    return (bypasses(origin, this.noProxy) ? this.direct : this.proxied).dispatch(options, handler);
  }
}
