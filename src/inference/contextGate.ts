// Who evaluates on the target's context now: completions first, a next-edit generation between them.
// A next-edit request decodes a whole window (hundreds of tokens) on its own KV
// sequence; a completion that arrives meanwhile must not wait for it. Every native call of the
// next-edit (its sequence's set-up, each evaluation, each cut of its cache) goes through
// `evaluate`; a completion takes the context with `pause`: it waits for the next-edit's evaluation
// in flight, if any (one decode step at most), and the next-edit parks before its next one until
// every completion released the context. Its KV sequence keeps its prompt and what it generated,
// so it resumes where it stopped. Pure: the session wires it (inference/sessionNextEdits.ts).

/** Thrown by `evaluate` when the request was cancelled while it waited for the context. */
export class ParkedAbort extends Error {
  constructor() {
    super('cancelled while waiting for a completion');
  }
}

export class ContextGate {
  /** Completions holding the context or waiting for the next-edit's evaluation to end. */
  private pausers = 0;
  /** A next-edit evaluation is running. */
  private busy = false;
  private readonly idleWaiters: (() => void)[] = [];
  private readonly resumeWaiters: (() => void)[] = [];
  /** Times a next-edit parked for completions (stats, tests). */
  parks = 0;
  /** When the next-edit's last native call ended (performance.now()): where a stretch of its work ends. */
  lastCallEndedAt = 0;

  /** Whether a completion holds the context or waits for it. */
  get paused(): boolean {
    return this.pausers > 0;
  }

  /**
   * A completion takes the context: resolves once no next-edit evaluation runs, with the function
   * that gives the context back. Until then the next-edit parks before its next native call.
   */
  async pause(): Promise<() => void> {
    this.pausers++;
    while (this.busy) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.pausers--;
      // Not at once: the scheduler starts the next waiting completion in this turn of the event loop
      // (its pause comes in a microtask), and a next-edit that resumed in between would hold it up a step.
      if (this.pausers === 0) setImmediate(() => this.wakeNextEdit());
    };
  }

  private wakeNextEdit(): void {
    if (this.pausers > 0) return;
    for (const wake of this.resumeWaiters.splice(0)) wake();
  }

  /**
   * One native call of the next-edit, once no completion holds or waits for the context. Rejects
   * with ParkedAbort when `signal` aborts while it waits. `onPark` and `onResume` bracket each wait;
   * `check` runs after a wait, before the call (the session checks there that the next-edit's KV
   * sequence is still its own, and throws if not).
   */
  async evaluate<T>(call: () => Promise<T>, signal?: AbortSignal, hooks: { onPark?(): void; onResume?(): void; check?(): void } = {}): Promise<T> {
    if (this.pausers > 0) {
      this.parks++;
      hooks.onPark?.();
      try {
        // Again after each wake: a completion may have paused between the wake and this continuation.
        while (this.pausers > 0) await this.parked(signal);
      } finally {
        hooks.onResume?.();
      }
      hooks.check?.();
    }
    this.busy = true;
    try {
      return await call();
    } finally {
      this.busy = false;
      this.lastCallEndedAt = performance.now();
      for (const idle of this.idleWaiters.splice(0)) idle();
    }
  }

  private parked(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(new ParkedAbort());
      const onAbort = () => {
        const at = this.resumeWaiters.indexOf(wake);
        if (at >= 0) this.resumeWaiters.splice(at, 1);
        reject(new ParkedAbort());
      };
      const wake = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.resumeWaiters.push(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
