import type * as vscode from 'vscode';

/** Lets callers wait for the next change of some state (fimTracker.ts, dueAnswer.ts). */
export class ChangeSignal {
  private readonly waiters = new Set<() => void>();

  /** The state changed: every waiter resumes (and checks again what it waits for). */
  notify(): void {
    for (const wake of [...this.waiters]) wake();
  }

  /** Resolves at the next notify(), after `timeoutMs`, or once `token` is cancelled. */
  next(timeoutMs: number, token?: vscode.CancellationToken): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiters = this.waiters;
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      const sub = token?.onCancellationRequested(done);
      waiters.add(done);
      function done() {
        clearTimeout(timer);
        sub?.dispose();
        waiters.delete(done);
        resolve();
      }
    });
  }
}
