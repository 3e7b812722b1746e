// What an editor request for ghost text asks for. VS Code asks with "Invoke" when the user shows
// the next or previous suggestion (Alt+] / Alt+[, or the palette), but also when anyone runs its
// trigger command (Draftline itself after a load or a restart), and it keeps asking with Invoke for
// the keystrokes that follow such a trigger. Reading every Invoke as "show me alternatives" made
// each of those compute three suggestions: the ghost text waited seconds behind alternatives
// nobody asked for, and typing on cancelled each before it ended (no ghost text at all). So an
// Invoke asks for alternatives only where a suggestion is already shown at that very document
// version and cursor: that is the user cycling. Host-safe (no vscode): the provider feeds it.

export interface CursorAt {
  uri: string;
  version: number;
  line: number;
  character: number;
}

/** 'complete': the one suggestion (a typed-on Invoke is debounced like an automatic request); 'alternatives': the list to cycle through. */
export type RequestIntent = { kind: 'complete'; debounce: boolean } | { kind: 'alternatives' };

const same = (a: CursorAt | null, b: CursorAt) => a !== null && a.uri === b.uri && a.version === b.version && a.line === b.line && a.character === b.character;

/** How long an announced trigger waits for the editor's request (it comes within milliseconds). */
export const OWN_TRIGGER_MS = 2000;

export class InvokeIntent {
  /** Where ghost text was last shown (greedy or cycled): an Invoke there is the user cycling. */
  private shown: CursorAt | null = null;
  /** The trigger Draftline announced itself (after an accept, a load): one suggestion, not a list. */
  private own: (CursorAt & { at: number }) | null = null;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Draftline is about to run the editor's trigger command at `at`. */
  expectOwnTrigger(at: CursorAt): void {
    this.own = { ...at, at: this.now() };
  }

  /** Ghost text is shown at `at`. */
  shownAt(at: CursorAt): void {
    this.shown = { ...at };
  }

  /** What a request at `at` asks for; `invoke`: the editor said Invoke (not Automatic). */
  classify(at: CursorAt, invoke: boolean): RequestIntent {
    const own = this.own;
    this.own = null;
    if (!invoke) return { kind: 'complete', debounce: true };
    // Answered at once; a mark it never answered must not turn the user's later Alt+] there into one suggestion.
    if (own && this.now() - own.at < OWN_TRIGGER_MS && same(own, at)) return { kind: 'complete', debounce: false };
    if (same(this.shown, at)) return { kind: 'alternatives' };
    // An Invoke where nothing is shown: a trigger (or a keystroke after one), or Alt+] with nothing
    // shown yet. Debounced only when the document changed since the last ghost text (typing on).
    const typedOn = this.shown !== null && this.shown.uri === at.uri && this.shown.version !== at.version;
    return { kind: 'complete', debounce: typedOn };
  }
}
