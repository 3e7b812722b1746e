/**
 * Cached random test models: each distinct (name, options) pair is written once into
 * test-output/models/ (gitignored) and reused by later tests and runs.
 */
import { createHash } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { GGUF_WRITER_VERSION, writeRandomLlamaModel } from './ggufWriter';
import type { RandomLlamaOptions } from './ggufWriter';

export const TEST_MODEL_DIR = path.resolve(__dirname, '../test-output/models');

const inFlight = new Map<string, Promise<string>>();

/** JSON with sorted object keys, so equal options hash equally. */
function stableStringify(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableStringify).join(',')}]`;
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableStringify(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

export function testModelHash(opts: RandomLlamaOptions): string {
  return createHash('sha256').update(`gguf-writer-v${GGUF_WRITER_VERSION}\n`).update(stableStringify(opts)).digest('hex').slice(0, 16);
}

/**
 * Path of a random llama model with these options, writing it first if it is not cached yet.
 * `name` only makes the file name readable; the options hash makes it unique.
 */
export function ensureTestModel(name: string, opts: RandomLlamaOptions, dir = TEST_MODEL_DIR): Promise<string> {
  const safe = name.replace(/[^A-Za-z0-9._-]+/g, '_');
  return ensureCachedModel(path.join(dir, `${safe}-${testModelHash(opts)}.gguf`), (file) => writeRandomLlamaModel(file, opts));
}

/**
 * `file`, written by `write` first if it does not exist yet (its name must say everything the bytes
 * depend on). Written under a temporary name and renamed, so a concurrent or interrupted run never
 * sees a half-written model.
 */
export function ensureCachedModel(file: string, write: (file: string) => Promise<void>): Promise<string> {
  let p = inFlight.get(file);
  if (!p) {
    p = (async () => {
      try {
        if ((await stat(file)).isFile()) return file;
      } catch {
        /* not cached yet */
      }
      await mkdir(path.dirname(file), { recursive: true });
      const tmp = `${file}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
      try {
        await write(tmp);
        await rename(tmp, file);
      } catch (e) {
        await rm(tmp, { force: true });
        throw e;
      }
      return file;
    })();
    inFlight.set(file, p);
    p.catch(() => inFlight.delete(file));
  }
  return p;
}
