// What a downloaded model is checked against, and the check itself: the hub's own sha256 for the
// file (a HEAD of its resolve URL) and a streaming sha256 of the file on disk. Runs in the inference
// worker (src/inference/modelDownloader.ts), never on the extension host's thread.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';

/** What the server says of a file before it is downloaded. */
export interface AnnouncedDigest {
  /** The file's sha256 (hex, lower case), or null when the server announced none. */
  sha256: string | null;
  size: number | null;
  /** The repository commit the hub resolved the revision to (X-Repo-Commit). */
  commit: string | null;
  /** Why there is no sha256, in words (for the record and the log). */
  why?: string;
}

const SHA256 = /^[0-9a-f]{64}$/;

/**
 * The sha256 in an ETag-style header, or null. The hub answers a HEAD of an LFS file's resolve URL
 * with `X-Linked-Etag: "<sha256>"` (and the same `ETag`); a file kept in git itself gets its git blob
 * sha1 (40 hex) instead, and other servers send md5s or opaque tags: only 64 hex digits are a sha256.
 */
export function sha256FromEtag(value: string | null | undefined): string | null {
  const tag = value
    ?.trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1')
    .toLowerCase();
  return tag && SHA256.test(tag) ? tag : null;
}

/**
 * The URL node-llama-cpp downloads a model URI from, for the URI forms that name a file:
 * `hf:user/repo/path/file.gguf[#revision]` (resolve/<revision>, as node-llama-cpp's parseModelUri
 * builds it) and plain http(s) URLs. Null for `hf:user/repo:quant`, which the hub resolves through
 * a manifest (the caller asks the downloader for that one).
 */
export function modelFileUrl(uri: string, huggingFaceEndpoint?: string): string | null {
  const value = uri.trim();
  if (/^https?:\/\//i.test(value)) return value;
  const hub = /^(?:hf:\/\/|hf:|huggingface:\/\/|huggingface:|hf\.co\/|huggingface\.co\/)(.*)$/i.exec(value);
  if (!hub) return null;
  const [user, repo, ...rest] = hub[1].split('/');
  let filePath = rest.join('/');
  if (!user || !repo || !filePath || repo.includes(':')) return null;
  let revision = 'main';
  const hash = filePath.indexOf('#');
  if (hash >= 0) {
    revision = filePath.slice(hash + 1) || 'main';
    filePath = filePath.slice(0, hash);
  }
  const endpoint = hubEndpoint(huggingFaceEndpoint);
  const encodedPath = filePath
    .split('/')
    .map((p) => encodeURIComponent(p))
    .join('/');
  return `${endpoint}${encodeURIComponent(user)}/${encodeURIComponent(repo)}/resolve/${encodeURIComponent(revision)}/${encodedPath}?download=true`;
}

/** The hub endpoint as node-llama-cpp picks it: the option, MODEL_ENDPOINT, HF_ENDPOINT, else huggingface.co. */
export function hubEndpoint(huggingFaceEndpoint?: string): string {
  const pick = [huggingFaceEndpoint, process.env.MODEL_ENDPOINT, process.env.HF_ENDPOINT].find((e) => e && /^https?:\/\//i.test(e)) ?? 'https://huggingface.co/';
  return pick.endsWith('/') ? pick : `${pick}/`;
}

const HEAD_TIMEOUT_MS = 20_000;

/**
 * Asks the server for a file's sha256 with one HEAD request. The hub puts it on its redirect to
 * the storage CDN (the CDN's own answer does not carry it), so redirects to another host are not
 * followed; a relative redirect (a renamed repository) is, as huggingface_hub does. node-llama-cpp's
 * downloader (ipull) makes its own HEAD but keeps only the size, the name and whether ranges work,
 * and follows the redirect: the hash is not to be had from it. Never throws: a server that cannot
 * be asked gives no hash, and the download goes on unverified (its own request fails it if the
 * server is really down).
 */
export async function fetchAnnouncedDigest(url: string, signal?: AbortSignal): Promise<AnnouncedDigest> {
  const none = (why: string): AnnouncedDigest => ({ sha256: null, size: null, commit: null, why });
  let target = url;
  try {
    const timeout = AbortSignal.timeout(HEAD_TIMEOUT_MS);
    const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
    for (let hop = 0; hop < 5; hop++) {
      const response = await fetch(target, { method: 'HEAD', redirect: 'manual', signal: both, headers: { 'Accept-Encoding': 'identity' } });
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location?.startsWith('/') && !location.startsWith('//')) {
        target = new URL(location, target).href;
        continue;
      }
      if (response.status >= 400) return none(`${new URL(url).host} answered HTTP ${response.status} when asked for the file's hash`);
      const sha256 = sha256FromEtag(response.headers.get('x-linked-etag')) ?? sha256FromEtag(response.headers.get('etag'));
      const size = Number(response.headers.get('x-linked-size') ?? (response.status < 300 ? response.headers.get('content-length') : null) ?? Number.NaN);
      return {
        sha256,
        size: Number.isFinite(size) ? size : null,
        commit: response.headers.get('x-repo-commit'),
        ...(sha256 ? {} : { why: `${new URL(url).host} announced no sha256 for this file` }),
      };
    }
    return none(`${new URL(url).host} redirected too many times when asked for the file's hash`);
  } catch (error) {
    if (signal?.aborted) throw error;
    return none(`could not ask ${safeHost(url)} for the file's hash (${(error as Error).message})`);
  }
}

function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** Bytes read per step: large enough for full hashing speed, small enough (~1 ms of work) to keep the worker responsive. */
const CHUNK = 1 << 20;

/**
 * sha256 of a whole file, streamed: each 1 MiB read is a separate turn of the event loop, so the
 * worker keeps answering completions and cancels while a multi-GB model is hashed. `signal`
 * stops it (rejects with an AbortError).
 */
export async function sha256File(file: string, options: { signal?: AbortSignal; onProgress?: (hashedBytes: number) => void } = {}): Promise<string> {
  const hash = createHash('sha256');
  let hashed = 0;
  const stream = fs.createReadStream(file, { highWaterMark: CHUNK, signal: options.signal });
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    hashed += (chunk as Buffer).length;
    options.onProgress?.(hashed);
  }
  return hash.digest('hex');
}
