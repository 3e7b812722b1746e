// The context gate (inference/contextGate.ts): completions take the target's context between two
// native calls of a next-edit request, which parks until they gave it back; a cancel while parked
// ends it without a call, and a check after the wait can refuse to go on (its sequence was taken).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ContextGate, ParkedAbort } from '../../src/inference/contextGate';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('the context gate', () => {
  it('a completion waits for the next-edit call in flight, never longer; the next-edit parks until it is released', async () => {
    const gate = new ContextGate();
    const log: string[] = [];
    let finishCall!: () => void;
    const first = gate.evaluate(() => new Promise<void>((resolve) => (finishCall = () => (log.push('call 1 ends'), resolve()))));
    let release!: () => void;
    const paused = gate.pause().then((r) => {
      log.push('completion starts');
      release = r;
    });
    await tick();
    assert.equal(log.length, 0, 'the completion waits for the call in flight');
    finishCall();
    await first;
    await paused;
    const parks: string[] = [];
    const second = gate.evaluate(async () => void log.push('call 2'), undefined, { onPark: () => parks.push('park'), onResume: () => parks.push('resume') });
    await tick();
    assert.deepEqual(log, ['call 1 ends', 'completion starts'], 'the next call waits for the completion');
    log.push('completion ends');
    release();
    await second;
    assert.deepEqual(log, ['call 1 ends', 'completion starts', 'completion ends', 'call 2']);
    assert.deepEqual(parks, ['park', 'resume']);
    assert.equal(gate.parks, 1);
  });

  it('a completion that comes right after another keeps the next-edit parked (it resumes only once none waits)', async () => {
    const gate = new ContextGate();
    const releaseA = await gate.pause();
    let called = false;
    const parked = gate.evaluate(async () => void (called = true));
    releaseA();
    // The next completion asks in the same turn of the event loop (the scheduler starts it at once).
    const releaseB = await gate.pause();
    await tick();
    await tick();
    assert.equal(called, false);
    releaseB();
    await parked;
    assert.equal(called, true);
  });

  it('a cancel while parked ends the call without running it; a failed check stops it too', async () => {
    const gate = new ContextGate();
    const release = await gate.pause();
    const controller = new AbortController();
    let called = false;
    const parked = gate.evaluate(async () => void (called = true), controller.signal);
    controller.abort();
    await assert.rejects(parked, ParkedAbort);
    const checked = gate.evaluate(async () => void (called = true), undefined, {
      check: () => {
        throw new Error('taken');
      },
    });
    release();
    await assert.rejects(checked, /taken/);
    assert.equal(called, false);
    // Nothing holds the gate now: calls run at once.
    assert.equal(await gate.evaluate(async () => 7), 7);
  });
});
