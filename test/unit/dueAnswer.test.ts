// The inline provider's wait for a next edit due at its cursor (src/vscode/nextEdit/dueAnswer.ts):
// it ends when the answer is drawn, when nothing is due there any more, on cancellation, or at the
// deadline, and never waits where nothing is due.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DueAnswer } from '../../src/vscode/nextEdit/dueAnswer';

function cancellation() {
  const listeners = new Set<() => void>();
  const token = {
    isCancellationRequested: false,
    onCancellationRequested(listener: () => void) {
      listeners.add(listener);
      return { dispose: () => listeners.delete(listener) };
    },
  };
  return {
    token: token as never,
    cancel() {
      token.isCancellationRequested = true;
      for (const l of listeners) l();
    },
    listeners,
  };
}

const URI = 'file:///a.ts';
const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('DueAnswer', () => {
  it('waits while the pause runs and the request is under way, and ends when the answer is drawn', async () => {
    const due = new DueAnswer();
    due.scheduled(URI, 3);
    let drawn = false;
    let ended = false;
    const waiting = due.until(URI, 3, 10, cancellation().token, 10_000, () => drawn).then(() => (ended = true));
    await later(5);
    due.started(URI, 3, 10);
    await later(5);
    assert.equal(ended, false, 'still waiting while the request is under way');
    drawn = true;
    due.wake();
    await waiting;
    assert.equal(ended, true);
  });

  it('ends when the request settles without an answer, or when it is cancelled by a keystroke', async () => {
    const due = new DueAnswer();
    due.started(URI, 3, 10);
    const settled = due.until(URI, 3, 10, cancellation().token, 10_000, () => false);
    due.settled();
    await settled;
    due.started(URI, 3, 10);
    const c = cancellation();
    const cancelled = due.until(URI, 3, 10, c.token, 10_000, () => false);
    c.cancel();
    await cancelled;
    assert.equal(c.listeners.size, 0, 'the cancellation listener is disposed');
  });

  it('does not wait for a request of another version, cursor or document, nor after the deadline', async () => {
    const due = new DueAnswer();
    due.started(URI, 3, 10);
    assert.equal(due.isDueAt(URI, 3, 10), true);
    assert.equal(due.isDueAt(URI, 4, 10), false);
    assert.equal(due.isDueAt(URI, 3, 11), false);
    assert.equal(due.isDueAt('file:///b.ts', 3, 10), false);
    // While the pause runs the request's cursor is not known yet: any cursor of that version counts.
    due.scheduled(URI, 5);
    assert.equal(due.isDueAt(URI, 5, 99), true);
    const t0 = Date.now();
    await due.until(URI, 6, 10, cancellation().token, 10_000, () => false);
    assert.ok(Date.now() - t0 < 50, 'returns at once where nothing is due');
    await due.until(URI, 5, 10, cancellation().token, 30, () => false);
    assert.ok(Date.now() - t0 >= 25, 'waits until the deadline');
    assert.equal(due.isDueAt(URI, 5, 10), true);
  });
});
