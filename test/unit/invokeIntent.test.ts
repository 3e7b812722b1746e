// Alternatives are computed only for the user's own Alt+] / Alt+[ (or the palette's Show Next /
// Previous Suggestion): a trigger after a load or an accept, the keystrokes VS Code then asks for
// with Invoke, and any other Invoke where ghost text is shown get their one suggestion.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CursorAt, InvokeIntent } from '../../src/engine/invokeIntent';

const at = (version: number, character = 10, uri = 'file:///a.ts'): CursorAt => ({ uri, version, line: 3, character });

describe('what an Invoke request asks for', () => {
  it('after a restart: the trigger and the typing that follows get one suggestion each, never alternatives', () => {
    const intent = new InvokeIntent();
    // The models loaded again: Draftline announces its trigger, VS Code asks with Invoke.
    intent.expectOwnTrigger(at(5));
    assert.deepEqual(intent.classify(at(5), true), { kind: 'complete', debounce: false });
    intent.shownAt(at(5));
    // VS Code keeps asking with Invoke while the user types on after that trigger.
    for (let v = 6; v < 12; v++) {
      assert.deepEqual(intent.classify(at(v, 10 + v), true), { kind: 'complete', debounce: true }, `keystroke ${v}`);
    }
  });

  it('a trigger nobody announced, with nothing shown, is one suggestion too', () => {
    const intent = new InvokeIntent();
    assert.equal(intent.classify(at(1), true).kind, 'complete');
  });

  it('after an accept: an Invoke where the prefetched ghost text is shown is no one cycling, whoever took the announcement', () => {
    const intent = new InvokeIntent();
    // The prefetch is ready: Draftline announces its trigger, but VS Code's own request after the
    // accept (Automatic) comes first and is answered from the prefetch.
    intent.expectOwnTrigger(at(8));
    assert.deepEqual(intent.classify(at(8), false), { kind: 'complete', debounce: true });
    intent.shownAt(at(8));
    // Then Draftline's trigger arrives, its announcement gone: one suggestion (from the cache), at once.
    assert.deepEqual(intent.classify(at(8), true), { kind: 'complete', debounce: false });
    intent.shownAt(at(8));
    // And any other Invoke there (Alt+\, another extension's trigger) as well.
    assert.equal(intent.classify(at(8), true).kind, 'complete');
  });

  it("the user's Alt+] asks for the alternatives, and every request there while cycling", () => {
    const intent = new InvokeIntent();
    assert.deepEqual(intent.classify(at(7), false), { kind: 'complete', debounce: true });
    intent.shownAt(at(7));
    assert.equal(intent.userCycles(at(7)), false, 'VS Code holds one suggestion: it must be asked again');
    assert.deepEqual(intent.classify(at(7), true), { kind: 'alternatives' });
    intent.listedAt(at(7));
    // Alt+] again: VS Code holds the list, and asks again only if it wants to.
    assert.equal(intent.userCycles(at(7)), true);
    assert.deepEqual(intent.classify(at(7), true), { kind: 'alternatives' });
    // A trigger of Draftline's own at that spot gets the list too (the greedy suggestion first).
    intent.expectOwnTrigger(at(7));
    assert.deepEqual(intent.classify(at(7), true), { kind: 'alternatives' });
  });

  it('cycling ends where the cursor or the document moves on; an automatic request is never cycling', () => {
    const intent = new InvokeIntent();
    intent.shownAt(at(7));
    intent.userCycles(at(7));
    assert.deepEqual(intent.classify(at(7), false), { kind: 'complete', debounce: true });
    assert.equal(intent.classify(at(7, 11), true).kind, 'complete', 'another cursor');
    assert.equal(intent.classify(at(7), true).kind, 'complete', 'back at the same cursor: no one asked again');
    intent.userCycles(at(7));
    assert.equal(intent.classify(at(7, 10, 'file:///b.ts'), true).kind, 'complete', 'another document');
    intent.userCycles(at(7));
    assert.equal(intent.classify(at(8), true).kind, 'complete', 'typed on');
  });

  it('a list replaced by one suggestion at the same spot must be asked for again', () => {
    const intent = new InvokeIntent();
    intent.userCycles(at(4));
    intent.classify(at(4), true);
    intent.listedAt(at(4));
    // The user moved away and back: VS Code asked again automatically and got one suggestion.
    intent.classify(at(4), false);
    intent.shownAt(at(4));
    assert.equal(intent.userCycles(at(4)), false);
  });

  it("the controller's own trigger is answered at once; a stale announcement is an ordinary trigger", () => {
    let now = 0;
    const intent = new InvokeIntent(() => now);
    intent.shownAt(at(3));
    intent.expectOwnTrigger(at(4));
    assert.deepEqual(intent.classify(at(4), true), { kind: 'complete', debounce: false });
    intent.expectOwnTrigger(at(5));
    now = 5000;
    // Typed on since the last ghost text, and the announcement too old to be this request's: debounced.
    assert.deepEqual(intent.classify(at(5), true), { kind: 'complete', debounce: true });
  });
});
