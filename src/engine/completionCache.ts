interface Entry {
  prefix: string;
  suffix: string;
  completion: string;
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

  put(prefix: string, suffix: string, completion: string): void {
    if (!completion) return;
    this.entries = this.entries.filter((e) => !(e.prefix === prefix && e.suffix === suffix));
    this.entries.push({ prefix, suffix, completion });
    if (this.entries.length > this.capacity) this.entries.shift();
  }

  get(prefix: string, suffix: string): string | undefined {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e.suffix !== suffix || !prefix.startsWith(e.prefix)) continue;
      const typed = prefix.slice(e.prefix.length);
      if (typed.length < e.completion.length && e.completion.startsWith(typed)) {
        // Most recent use last, so it survives eviction.
        this.entries.splice(i, 1);
        this.entries.push(e);
        return e.completion.slice(typed.length);
      }
    }
    return undefined;
  }

  clear(): void {
    this.entries = [];
  }
}
