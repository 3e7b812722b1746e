import type { ShownCompletion } from '../postprocess';

interface Entry {
  prefix: string;
  suffix: string;
  completion: string;
  /** Characters of the cursor line's suffix the completion replaces: the suffix is the same on a hit, so this is too. */
  replaceSuffixChars: number;
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

  put(prefix: string, suffix: string, shown: ShownCompletion): void {
    if (!shown.text) return;
    this.entries = this.entries.filter((e) => !(e.prefix === prefix && e.suffix === suffix));
    this.entries.push({ prefix, suffix, completion: shown.text, replaceSuffixChars: shown.replaceSuffixChars });
    if (this.entries.length > this.capacity) this.entries.shift();
  }

  get(prefix: string, suffix: string): ShownCompletion | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e.suffix !== suffix || !prefix.startsWith(e.prefix)) continue;
      const typed = prefix.slice(e.prefix.length);
      if (typed.length < e.completion.length && e.completion.startsWith(typed)) {
        // Most recent use last, so it survives eviction.
        this.entries.splice(i, 1);
        this.entries.push(e);
        return { text: e.completion.slice(typed.length), replaceSuffixChars: e.replaceSuffixChars };
      }
    }
    return undefined;
  }

  clear(): void {
    this.entries = [];
  }
}
