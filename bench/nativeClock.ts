// Times the native calls of a node-llama-cpp context by wrapping its binding object (the library's
// methods stay untouched): decodeBatch (or the native addon's decode) is the forward pass, sampleToken
// reading one position's token; Draftline's native greedy reader (one call for all positions of a step)
// counts as reading too.
import type { InferenceSession } from '../src/inference/inferenceSession';
import { loadNativeAddon } from '../src/llama/nativeAddon';
import { median } from './stats';

/** Native time spent in the context's binding, by call. */
export interface NativeClock {
  decodeMs: number;
  decodes: number;
  /** Reading greedy tokens: sampleToken calls (one a position), or native reader calls (one a step). */
  sampleMs: number;
  samples: number;
  /** Forward passes by batch size (tokens in the batch): total ms and count. */
  bySize: Map<number, { ms: number; count: number }>;
}

/** Mean forward pass of batches of `size` tokens since the clock started, or null when none ran. */
export function meanForwardMs(clock: NativeClock, size: number): number | null {
  const s = clock.bySize.get(size);
  return s && s.count > 0 ? s.ms / s.count : null;
}

/** Wraps the binding object of a node-llama-cpp context so its decode and sample calls are timed. */
export function clockNative(session: InferenceSession): NativeClock {
  const clock: NativeClock = { decodeMs: 0, decodes: 0, sampleMs: 0, samples: 0, bySize: new Map() };
  // Tokens added since the batch was started (initBatch, then addToBatch per sequence).
  let batchTokens = 0;
  const context = session.target.context as unknown as { _ctx: Record<string, unknown> };
  const native = context._ctx;
  const timed =
    (fn: (...a: unknown[]) => Promise<unknown>, add: (ms: number) => void) =>
    async (...args: unknown[]) => {
      const t = performance.now();
      try {
        return await fn(...args);
      } finally {
        add(performance.now() - t);
      }
    };
  /** One forward pass of `size` tokens took `ms` (the library's decodeBatch or the addon's decode). */
  const forwardPass = (size: number, ms: number) => {
    clock.decodeMs += ms;
    clock.decodes++;
    const s = clock.bySize.get(size) ?? { ms: 0, count: 0 };
    s.ms += ms;
    s.count++;
    clock.bySize.set(size, s);
  };
  const proxy = new Proxy(native, {
    get(target, prop) {
      const value = target[prop as string];
      if (typeof value !== 'function') return value;
      const bound = (value as (...a: unknown[]) => unknown).bind(target) as (...a: unknown[]) => Promise<unknown>;
      if (prop === 'initBatch') return (...args: unknown[]) => ((batchTokens = 0), bound(...args));
      if (prop === 'addToBatch') return (...args: unknown[]) => ((batchTokens += (args[2] as Uint32Array).length), bound(...args));
      if (prop === 'decodeBatch') return timed(bound, (ms) => forwardPass(batchTokens, ms));
      if (prop === 'sampleToken') return timed(bound, (ms) => ((clock.sampleMs += ms), clock.samples++));
      return bound;
    },
  });
  context._ctx = proxy;
  // The native addon unwraps the context object itself: every call of it gets the real one behind the
  // proxy; its token reads (host logits, or the device's sampled ids) count as reading.
  const loaded = loadNativeAddon();
  if ('addon' in loaded) {
    const addon = loaded.addon as unknown as Record<string, unknown>;
    for (const name of Object.keys(addon)) {
      const fn = addon[name];
      if (typeof fn !== 'function' || name === 'argmax') continue;
      const reads = name === 'readGreedy' || name === 'readSampled';
      addon[name] = (ctx: unknown, ...rest: unknown[]) => {
        if (ctx !== proxy) return (fn as (...a: unknown[]) => unknown)(ctx, ...rest);
        // The direct decode (llama/directDecode.ts): a forward pass like the library's decodeBatch.
        if (name === 'decode') {
          const size = (rest[2] as Int32Array).length;
          return timed(
            (...a: unknown[]) => (fn as (...x: unknown[]) => Promise<unknown>)(native, ...a),
            (ms) => forwardPass(size, ms),
          )(...rest);
        }
        const t = performance.now();
        try {
          return (fn as (...a: unknown[]) => unknown)(native, ...rest);
        } finally {
          if (reads) {
            clock.sampleMs += performance.now() - t;
            clock.samples++;
          }
        }
      };
    }
  }
  return clock;
}

/**
 * Median forward pass of b tokens with an output each, at `depth` cached tokens, each size timed in a
 * run of its own (the last rounds of a run): what a fixed verify shape pays, where a backend that
 * replays captured graphs replays one (speculation/verifyShape.ts). measureForwardPass interleaves sizes.
 */
export async function measureWarmForwardPass(session: InferenceSession, clock: NativeClock, sizes: number[], depth: number): Promise<Record<number, number>> {
  const ev = session.target.evaluator;
  await session.resetCaches();
  const filler = Array.from({ length: depth }, (_, i) => 100 + (i % 3000));
  for (let i = 0; i < depth; i += 256) await ev.append(filler.slice(i, i + 256), 0);
  const out: Record<number, number> = {};
  for (const b of sizes) {
    const times: number[] = [];
    for (let round = 0; round < 12; round++) {
      const before = clock.decodeMs;
      await ev.append(
        Array.from({ length: b }, (_, i) => 200 + i + round),
        b,
      );
      if (round >= 4) times.push(clock.decodeMs - before);
      await ev.truncate(depth);
    }
    out[b] = median(times)!;
  }
  await session.resetCaches();
  return out;
}

/** Median raw forward pass (decodeBatch alone) of b tokens with an output each, at `depth` cached tokens. */
export async function measureForwardPass(session: InferenceSession, clock: NativeClock, sizes: number[], depth: number): Promise<Record<number, number>> {
  const ev = session.target.evaluator;
  await session.resetCaches();
  const filler = Array.from({ length: depth }, (_, i) => 100 + (i % 3000));
  for (let i = 0; i < depth; i += 256) await ev.append(filler.slice(i, i + 256), 0);
  // Sizes interleaved, round after round, the first round left out: a batch size measured right
  // after another pays for the switch (llama.cpp re-plans its graph), and a block of one size would
  // carry that cost into one size only.
  const times = new Map<number, number[]>(sizes.map((b) => [b, []]));
  for (let round = 0; round < 10; round++) {
    for (const b of sizes) {
      const before = clock.decodeMs;
      await ev.append(
        Array.from({ length: b }, (_, i) => 200 + i + round),
        b,
      );
      if (round > 0) times.get(b)!.push(clock.decodeMs - before);
      await ev.truncate(depth);
    }
  }
  const out: Record<number, number> = {};
  for (const b of sizes) out[b] = median(times.get(b)!)!;
  await session.resetCaches();
  return out;
}
