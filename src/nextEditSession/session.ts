// One editor's next-edit suggestion from the keystroke to Tab, as a state
// machine without VS Code: the controller (src/vscode/nextEdit/nextEditController.ts) feeds it the editor's
// events and carries out what it asks of its host (timers, requests, drawing, context keys, the edit).
//
//   idle ──edit──▶ waiting (debounce) ──timer──▶ requesting ──answer──▶ shown ──Tab (near)──▶ applied ─┐
//                  ▲    ▲                                               │  └─Tab (far)──▶ shown (jumped) │
//                  │    └──────── another keystroke (cancels) ──────────┤                                │
//                  │                        Escape / cursor moved away ─┴──▶ idle                         │
//                  └──── chain: the answer's next edit at once, else a request at once ◀──────────────────┘
import { nearestEdit, remainingAfter, sameEdit } from './chain';
import type { NextEditShape } from './shape';
import type { TextReplacement } from '../nextEdit/types';

/** How a shown suggestion ended. */
export type NextEditOutcome = 'applied' | 'dismissed' | 'typedOver' | 'movedAway' | 'fimPriority' | 'replaced' | 'closed';

export interface ShownSuggestion {
  /** The request it came from (a chain shows several suggestions of one request). */
  requestId: number;
  /** The cursor it is shown for (a document offset); moving away from it removes it. */
  cursor: number;
  edit: TextReplacement;
  shape: NextEditShape;
  /** The answer's other edits, in document offsets of the text it is shown on. */
  others: TextReplacement[];
  /** Tab moved the cursor to it (it was far). */
  jumped: boolean;
  /** How many suggestions of this chain were applied before this one. */
  chainIndex: number;
}

export type SessionPhase = { kind: 'idle' } | { kind: 'waiting' } | { kind: 'requesting'; requestId: number; cursor: number } | { kind: 'shown'; suggestion: ShownSuggestion };

export interface ContextKeys {
  /** A suggestion drawn by Draftline (decorations): Tab applies or jumps, Escape dismisses. */
  shown: boolean;
  /** It is far: Tab jumps to it first. */
  far: boolean;
}

export interface SessionHost {
  /** Ask after `delayMs` (0: now); replaces a pending timer. */
  schedule(delayMs: number): void;
  /** Cancel the pending timer and abort the request in flight. */
  cancel(): void;
  /** Draw the suggestion, or clear what is drawn (null). */
  render(suggestion: ShownSuggestion | null): void;
  setKeys(keys: ContextKeys): void;
  /** Move the cursor to the suggestion's edit and reveal it. */
  jump(suggestion: ShownSuggestion): void;
  /** Apply the edit as one undo step; then the controller calls applied(). */
  apply(suggestion: ShownSuggestion): void;
  /** The suggestion is gone: one log line and the stats. */
  ended(suggestion: ShownSuggestion, outcome: NextEditOutcome): void;
  /** How the edit is drawn with the cursor at `cursor`. */
  classify(edit: TextReplacement, cursor: number): NextEditShape;
  lineOf(offset: number): number;
}

export class NextEditSession {
  phase: SessionPhase = { kind: 'idle' };
  private nextRequestId = 1;
  /** Suggestions of the current chain applied so far. */
  private chainLength = 0;

  constructor(
    private readonly host: SessionHost,
    private readonly debounceMs: () => number,
  ) {}

  get shown(): ShownSuggestion | null {
    return this.phase.kind === 'shown' ? this.phase.suggestion : null;
  }

  /** The user changed the document (a keystroke, a paste, an undo): whatever is shown goes, and a request follows the pause. */
  edited(): void {
    this.end('typedOver');
    this.host.cancel();
    this.chainLength = 0;
    this.phase = { kind: 'waiting' };
    this.host.schedule(this.debounceMs());
  }

  /** The cursor is at `cursor` now (not by an edit of the document: those come as edited()). */
  cursorMoved(cursor: number): void {
    const p = this.phase;
    if (p.kind === 'shown' && p.suggestion.cursor !== cursor) {
      this.end('movedAway');
      this.phase = { kind: 'idle' };
    } else if (p.kind === 'requesting' && p.cursor !== cursor) {
      this.host.cancel();
      this.phase = { kind: 'idle' };
    }
  }

  /** Escape. Returns whether a suggestion was dismissed. */
  escape(): boolean {
    if (this.phase.kind !== 'shown') return false;
    this.end('dismissed');
    this.host.cancel();
    this.phase = { kind: 'idle' };
    return true;
  }

  /** The pending timer fired: a request starts for the cursor now. Returns its id. */
  requestStarted(cursor: number): number {
    this.end('replaced');
    const requestId = this.nextRequestId++;
    this.phase = { kind: 'requesting', requestId, cursor };
    return requestId;
  }

  /** Whether answers for `requestId` are still wanted. */
  wants(requestId: number): boolean {
    const p = this.phase;
    return (p.kind === 'requesting' && p.requestId === requestId) || (p.kind === 'shown' && p.suggestion.requestId === requestId);
  }

  /**
   * A request's edits (document offsets), the first one streamed or all of them: the one nearest the
   * cursor is shown (a streamed first edit stays shown when the rest arrives). Returns what is shown.
   */
  answered(requestId: number, edits: readonly TextReplacement[]): ShownSuggestion | null {
    const p = this.phase;
    if (p.kind === 'shown' && p.suggestion.requestId === requestId) {
      // The rest of the answer: the shown edit stays, the others wait for the chain.
      const s = p.suggestion;
      s.others = edits.filter((e) => !sameEdit(e, s.edit)).filter((e) => e.end <= s.edit.start || e.start >= s.edit.end);
      return s;
    }
    if (p.kind !== 'requesting' || p.requestId !== requestId) return null;
    if (edits.length === 0) {
      this.phase = { kind: 'idle' };
      return null;
    }
    return this.show(requestId, p.cursor, edits, this.chainLength);
  }

  /** The request ended without a suggestion (nothing to change, cancelled, failed). */
  failed(requestId: number): void {
    const p = this.phase;
    if (p.kind === 'requesting' && p.requestId === requestId) this.phase = { kind: 'idle' };
  }

  /** Tab. Returns whether it was Draftline's to handle. */
  tab(): boolean {
    const s = this.shown;
    if (!s) return false;
    if (s.shape.far) {
      const cursor = s.edit.start;
      s.cursor = cursor;
      s.jumped = true;
      this.host.jump(s);
      s.shape = this.host.classify(s.edit, cursor);
      // Once there it is near whatever the view: Tab applies it.
      s.shape.far = false;
      this.host.render(s);
      this.keys();
      return true;
    }
    this.host.apply(s);
    return true;
  }

  /**
   * The shown edit is in the document (Tab, or VS Code's own Tab on the ghost text), with the cursor
   * at `cursor`: the chain goes on with the answer's next edit at once, else with a new request at once.
   */
  applied(cursor: number): void {
    const s = this.shown;
    if (!s) return;
    this.host.ended(s, 'applied');
    this.host.render(null);
    this.chainLength++;
    const rest = remainingAfter(s.edit, s.others);
    if (rest.length > 0) {
      this.show(s.requestId, cursor, rest, this.chainLength);
      return;
    }
    this.phase = { kind: 'waiting' };
    this.keys();
    this.host.schedule(0);
  }

  /** Fill-in-the-middle ghost text appeared at the cursor: it has priority over a next edit drawn there. */
  fimShown(): void {
    const s = this.shown;
    if (!s) return;
    this.end('fimPriority');
    this.phase = { kind: 'idle' };
  }

  /** The editor closed, another became active, or next edits were turned off. */
  reset(): void {
    this.end('closed');
    this.host.cancel();
    this.phase = { kind: 'idle' };
    this.chainLength = 0;
  }

  private show(requestId: number, cursor: number, edits: readonly TextReplacement[], chainIndex: number): ShownSuggestion | null {
    const edit = nearestEdit(edits, cursor, this.host.lineOf);
    if (!edit) {
      this.phase = { kind: 'idle' };
      return null;
    }
    const others = edits.filter((e) => e !== edit);
    const suggestion: ShownSuggestion = { requestId, cursor, edit, shape: this.host.classify(edit, cursor), others, jumped: false, chainIndex };
    this.phase = { kind: 'shown', suggestion };
    this.host.render(suggestion);
    this.keys();
    return suggestion;
  }

  private end(outcome: NextEditOutcome): void {
    const s = this.shown;
    if (!s) return;
    this.phase = { kind: 'idle' };
    this.host.render(null);
    this.keys();
    this.host.ended(s, outcome);
  }

  private keys(): void {
    const s = this.shown;
    const drawn = !!s && s.shape.render !== 'ghost';
    this.host.setKeys({ shown: drawn, far: drawn && s!.shape.far });
  }
}
