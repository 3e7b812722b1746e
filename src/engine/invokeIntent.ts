// What an editor request for ghost text asks for. VS Code asks with "Invoke" when the user shows the
// next or previous suggestion, but also for every run of its trigger command: Draftline's own (after
// an accept whose next ghost text a prefetch made ready, after a load, completions turned on),
// another extension's, Alt+\, and the keystrokes after such a trigger; no request says which. Read
// as "the user cycles" wherever ghost text was shown, Draftline's own trigger after an accept
// computed alternatives whenever another request took its announcement first. So alternatives are
// computed only where the user's own command (Draftline: Show Next / Previous Suggestion, on Alt+] and
// Alt+[) marked the cursor; every other Invoke gets its one suggestion. Host-safe (no vscode): the
// provider feeds it.

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
  /** Where ghost text was last shown (greedy or cycled): an Invoke after typing on from there is debounced. */
  private shown: CursorAt | null = null;
  /** The trigger Draftline announced itself (after an accept, a load): one suggestion, not a list. */
  private own: (CursorAt & { at: number }) | null = null;
  /** Where the user asked for the next or previous suggestion: kept while the document and the cursor stay. */
  private cycling: CursorAt | null = null;
  /** Where the editor was given the list to cycle through (it holds it, and cycles without asking). */
  private listed: CursorAt | null = null;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Draftline is about to run the editor's trigger command at `at`. */
  expectOwnTrigger(at: CursorAt): void {
    this.own = { ...at, at: this.now() };
  }

  /**
   * The user asked for the next or previous suggestion at `at` (Alt+], Alt+[, the palette): the
   * editor's requests there ask for the alternatives. Returns whether the editor already holds them
   * there (it cycles through them without asking).
   */
  userCycles(at: CursorAt): boolean {
    this.cycling = { ...at };
    return same(this.listed, at);
  }

  /** One suggestion is shown at `at` (the editor holds that one only). */
  shownAt(at: CursorAt): void {
    this.shown = { ...at };
    if (same(this.listed, at)) this.listed = null;
  }

  /** The list to cycle through was given to the editor at `at`. */
  listedAt(at: CursorAt): void {
    this.shown = { ...at };
    this.listed = { ...at };
  }

  /** What a request at `at` asks for; `invoke`: the editor said Invoke (not Automatic). */
  classify(at: CursorAt, invoke: boolean): RequestIntent {
    const own = this.own;
    this.own = null;
    if (!same(this.cycling, at)) this.cycling = null;
    if (!invoke) return { kind: 'complete', debounce: true };
    // The user's Alt+] here: the list answers a trigger of Draftline's own at that spot too (greedy first).
    if (this.cycling) return { kind: 'alternatives' };
    // Answered at once; a mark it never answered must not turn a later request there into an undebounced one.
    if (own && this.now() - own.at < OWN_TRIGGER_MS && same(own, at)) return { kind: 'complete', debounce: false };
    // A trigger (or a keystroke after one): debounced only when the document changed since the last
    // ghost text (typing on).
    const typedOn = this.shown !== null && this.shown.uri === at.uri && this.shown.version !== at.version;
    return { kind: 'complete', debounce: typedOn };
  }
}
