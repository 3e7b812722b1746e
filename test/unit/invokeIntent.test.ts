// Alternatives are computed only when the user cycles (issue #48, item 4): a trigger after a load or
// a restart, and the keystrokes VS Code then asks for with Invoke, get their one suggestion.
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

  it('Alt+] where ghost text is shown asks for the alternatives, and again while cycling', () => {
    const intent = new InvokeIntent();
    assert.deepEqual(intent.classify(at(7), false), { kind: 'complete', debounce: true });
    intent.shownAt(at(7));
    assert.deepEqual(intent.classify(at(7), true), { kind: 'alternatives' });
    intent.shownAt(at(7));
    assert.deepEqual(intent.classify(at(7), true), { kind: 'alternatives' });
    // Another cursor, or another document, is not cycling.
    assert.equal(intent.classify(at(7, 11), true).kind, 'complete');
    assert.equal(intent.classify(at(7, 10, 'file:///b.ts'), true).kind, 'complete');
  });

  it("the controller's own trigger at a shown suggestion is not Alt+]; a stale announcement is", () => {
    let now = 0;
    const intent = new InvokeIntent(() => now);
    intent.shownAt(at(3));
    intent.expectOwnTrigger(at(3));
    assert.deepEqual(intent.classify(at(3), true), { kind: 'complete', debounce: false });
    intent.expectOwnTrigger(at(3));
    now = 5000;
    assert.deepEqual(intent.classify(at(3), true), { kind: 'alternatives' });
  });
});
