/**
 * When to try again something the estimates have written off (a proposal source, every `interval`
 * steps; a fixed verify shape, every `interval` generations): the interval doubles after each try
 * that does not win it back, up to `max`, and starts over once it pays.
 */
export class RetrySchedule {
  interval: number;
  private since = 0;

  constructor(
    private readonly first: number,
    private readonly max: number,
  ) {
    this.interval = first;
  }

  /**
   * Counts one more occasion; true when it is time to try (the next interval then doubles). `spacing`
   * (at least 1; null: this occasion could not pay) stretches the interval, asked only once the
   * interval itself has passed.
   */
  due(spacing?: () => number | null): boolean {
    if (this.since + 1 < this.interval) {
      this.since++;
      return false;
    }
    const stretch = spacing ? spacing() : 1;
    // An occasion where a try could not pay (a short offer, say) is not counted, nor does it undo the count.
    if (stretch === null) return false;
    if (++this.since < this.interval * stretch) return false;
    this.since = 0;
    this.interval = Math.min(this.interval * 2, this.max);
    return true;
  }

  /** It paid: back to the first interval. */
  reset(): void {
    this.interval = this.first;
    this.since = 0;
  }
}
