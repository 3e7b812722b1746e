import type { ShownCompletion } from '../postprocess';
import type { PrefetchTrigger } from '../stats/statsCollector';

interface Entry {
  prefix: string;
  suffix: string;
  completion: string;
  /** Characters of the cursor line's suffix the completion replaces: the suffix is the same on a hit, so this is too. */
  replaceSuffixChars: number;
  prefetch?: PrefetchMark;
}

/**
 * The prefetch that computed a cached completion (engine/completionEngine.ts prefetch): its number,
 * for the served/wasted count, and why it was made (the log says where a served ghost text came from).
 */
export interface PrefetchMark {
  id: number;
  by: PrefetchTrigger;
}

/** A cache hit, and the prefetch that computed it (if one did). */
export interface CacheHit extends ShownCompletion {
  prefetch?: PrefetchMark;
}

/**
 * Remembers recent completions so that typing exactly what the ghost text showed is served without
 * a model call: for a new prefix that extends a cached one by text the completion starts with (and
 * the same suffix), the rest of that completion is the answer.
 */
export class CompletionCache {
  private entries: Entry[] = [];

  constructor(private readonly capacity = 64) {}

  get size(): number {
    return this.entries.length;
  }

  /**
   * An empty completion is kept only when a prefetch computed it, and then serves only the exact same
   * prefix and suffix: the request that follows an accept then costs no model call to learn that the
   * model has nothing to add there (the same greedy decoding would say the same).
   */
  put(prefix: string, suffix: string, shown: ShownCompletion, prefetch?: PrefetchMark): void {
    if (!shown.text && prefetch === undefined) return;
    this.entries = this.entries.filter((e) => !(e.prefix === prefix && e.suffix === suffix));
    this.entries.push({ prefix, suffix, completion: shown.text, replaceSuffixChars: shown.replaceSuffixChars, prefetch });
    if (this.entries.length > this.capacity) this.entries.shift();
  }

  get(prefix: string, suffix: string): CacheHit | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e.suffix !== suffix || !prefix.startsWith(e.prefix)) continue;
      const typed = prefix.slice(e.prefix.length);
      const exactEmpty = e.completion === '' && typed === '';
      if (exactEmpty || (typed.length < e.completion.length && e.completion.startsWith(typed))) {
        // Most recent use last, so it survives eviction.
        this.entries.splice(i, 1);
        this.entries.push(e);
        const hit: CacheHit = { text: e.completion.slice(typed.length), replaceSuffixChars: e.replaceSuffixChars };
        if (e.prefetch) hit.prefetch = e.prefetch;
        return hit;
      }
    }
    return undefined;
  }

  clear(): void {
    this.entries = [];
  }
}
