export function median(xs: number[]): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

export function percentile(xs: number[], p: number): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))];
}

export function fmt(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits);
}

/** A share as a whole percentage, "-" when unknown. */
export function pct(x: number | null | undefined): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '-' : `${Math.round(x * 100)}%`;
}

/** A one-line progress bar on stderr. */
export class Progress {
  private done = 0;
  private lastDraw = 0;
  private readonly started = Date.now();
  constructor(
    private readonly total: number,
    private readonly label: string,
  ) {}
  tick(note = ''): void {
    this.done++;
    // Redraw at most 5 times a second (and at the end): the bar must not cost what it measures.
    if (this.done < this.total && Date.now() - this.lastDraw < 200) return;
    this.lastDraw = Date.now();
    const width = 30;
    const filled = Math.round((this.done / this.total) * width);
    const elapsed = (Date.now() - this.started) / 1000;
    const eta = this.done ? (elapsed / this.done) * (this.total - this.done) : 0;
    process.stderr.write(
      `\r${this.label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${this.done}/${this.total} ${elapsed.toFixed(0)}s eta ${eta.toFixed(0)}s ${note}`.padEnd(110).slice(0, 140),
    );
    if (this.done === this.total) process.stderr.write('\n');
  }
}
