import * as vscode from 'vscode';
import type { NextEditProvider } from '../../nextEdit/provider';
import type { NextEditFormatId, TextReplacement } from '../../nextEdit/types';
import { shifted } from '../../nextEditSession/chain';
import { RecordedEdits } from '../../nextEditSession/historyAdapter';
import { type ContextKeys, type NextEditOutcome, NextEditSession, type ShownSuggestion } from '../../nextEditSession/session';
import { classifyNextEdit, type ShapeText } from '../../nextEditSession/shape';
import { describeSuggestion, type NextEditRequestFigures, NextEditStats, requestFigures } from '../../nextEditSession/stats';
import type { DecodeMode } from '../../shared/decoding';
import { FimTracker } from './fimTracker';
import { GhostNextEdit } from './ghostNextEdit';
import { NextEditRenderer } from './renderer';
import { buildRequest } from './request';

/** Context keys the keybindings read (package.json contributes.keybindings). */
export const CONTEXT_SHOWN = 'draftline.nextEditShown';
export const CONTEXT_FAR = 'draftline.nextEditFar';
/** How long a next edit waits for the FIM answer at the same cursor before it is drawn anyway. */
const FIM_WAIT_MS = 1500;
/** After Draftline moves the cursor itself (jump, apply), selection events without a kind are its own. */
const OWN_CURSOR_MS = 500;

export interface NextEditHooks {
  log: vscode.LogOutputChannel;
  /** What computes next edits now (the backend, or the tests' recorded answers), or null when nothing can. */
  source(): NextEditProvider | null;
  /** Why there is no source (for the log, once), when source() is null. */
  noSourceReason(): string;
  settings(): { enabled: boolean; debounceMs: number; format?: NextEditFormatId | 'auto' };
  mode(): DecodeMode;
  /** When the document's last edit reached the extension host (performance.now()). */
  lastEditAt(document: vscode.TextDocument): number | undefined;
  /** Figures changed (the status bar tooltip and Show Stats). */
  onStats(): void;
}

/**
 * Next-edit suggestions in the editor: asks after the user pauses on an edit and after a
 * next edit is applied, draws the answer by its shape, and carries out Tab, Escape and the rest of
 * NextEditSession's decisions on the active editor. Fill-in-the-middle ghost text keeps priority at
 * the cursor: a next edit waits for its answer there and is not drawn when it has a completion.
 */
export class NextEditController implements vscode.Disposable {
  readonly stats = new NextEditStats();
  readonly fim = new FimTracker();
  private readonly history = new RecordedEdits();
  private readonly renderer = new NextEditRenderer();
  private readonly session: NextEditSession;
  private readonly disposables: vscode.Disposable[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight: AbortController | null = null;
  /** The editor the session is about (the active one when the request started). */
  private editor: vscode.TextEditor | null = null;
  private applying = false;
  private ownCursorUntil = 0;
  private keys: ContextKeys = { shown: false, far: false };
  /** The suggestion drawn as ghost text, served to the inline provider. */
  readonly ghost = new GhostNextEdit((s) => this.markOnScreen(s));
  /** Per request: its figures, for the log line of each suggestion it gave. */
  private readonly figures = new Map<number, NextEditRequestFigures>();
  private readonly onScreen = new WeakMap<ShownSuggestion, number | null>();
  private noSourceLogged = false;
  private lastFailure: string | null = null;

  constructor(private readonly hooks: NextEditHooks) {
    this.session = new NextEditSession(
      {
        schedule: (delayMs) => this.schedule(delayMs),
        cancel: () => this.cancel(),
        render: (s) => this.render(s),
        setKeys: (keys) => this.setKeys(keys),
        jump: (s) => this.moveTo(s),
        apply: (s) => void this.apply(s),
        ended: (s, outcome) => this.ended(s, outcome),
        classify: (edit, cursor) => this.classify(edit, cursor),
        lineOf: (offset) => this.editor?.document.positionAt(offset).line ?? 0,
      },
      () => this.hooks.settings().debounceMs,
    );
    for (const doc of vscode.workspace.textDocuments) this.history.track(doc.uri.toString(), doc.getText());
    this.disposables.push(
      this.renderer,
      vscode.workspace.onDidOpenTextDocument((doc) => recordable(doc) && this.history.track(doc.uri.toString(), doc.getText())),
      vscode.workspace.onDidCloseTextDocument((doc) => this.history.forget(doc.uri.toString())),
      vscode.workspace.onDidChangeTextDocument((e) => this.onDocumentChanged(e)),
      vscode.window.onDidChangeTextEditorSelection((e) => this.onSelectionChanged(e)),
      // Another document in front (not the same one again, which VS Code reports too, e.g. after a notification).
      vscode.window.onDidChangeActiveTextEditor((editor) => editor?.document !== this.editor?.document && this.session.reset()),
    );
  }

  /** The shown suggestion, for tests and the commands. */
  get shown(): ShownSuggestion | null {
    return this.session.shown;
  }

  // ------------------------------------------------------------------------------ editor events

  private onDocumentChanged(e: vscode.TextDocumentChangeEvent): void {
    if (e.contentChanges.length === 0 || !recordable(e.document)) return;
    this.history.record(
      e.document.uri.toString(),
      vscode.workspace.asRelativePath(e.document.uri, false).replace(/\\/g, '/'),
      e.contentChanges.map((c) => ({ offset: c.rangeOffset, deleteCount: c.rangeLength, text: c.text })),
    );
    const active = vscode.window.activeTextEditor;
    if (active?.document !== e.document || this.applying) return;
    // VS Code's own Tab on a next edit drawn as ghost text: the chain goes on.
    const acceptedTo = this.ghost.acceptedBy(e);
    if (acceptedTo !== null) {
      this.session.applied(acceptedTo);
      return;
    }
    if (this.hooks.settings().enabled) {
      this.editor = active;
      this.session.edited();
    } else this.session.reset();
  }

  private onSelectionChanged(e: vscode.TextEditorSelectionChangeEvent): void {
    if (e.textEditor !== vscode.window.activeTextEditor || this.applying) return;
    if (e.kind === undefined && performance.now() < this.ownCursorUntil) return;
    const selection = e.selections[0];
    if (e.selections.length !== 1 || !selection || !selection.isEmpty) {
      this.session.reset();
      return;
    }
    this.session.cursorMoved(e.textEditor.document.offsetAt(selection.active));
  }

  // --------------------------------------------------------------------------------- commands

  /** Tab on a far next edit: the cursor goes there (then Tab applies it). */
  jump(): boolean {
    return this.session.tab();
  }

  /** Tab on a near next edit (or the palette's Apply, wherever it is): applied as one undo step. */
  applyShown(): boolean {
    const s = this.session.shown;
    if (!s) return false;
    void this.apply(s);
    return true;
  }

  /** Escape. */
  dismiss(): boolean {
    const ghost = this.ghost.suggestion;
    const dismissed = this.session.escape();
    if (dismissed && ghost) this.ghost.hide();
    return dismissed;
  }

  /** VS Code accepted the ghost text of a next edit (its item's command): the chain goes on if the change did not already. */
  ghostAccepted(): void {
    if (!this.ghost.suggestion) return;
    this.ghost.clear();
    const editor = vscode.window.activeTextEditor;
    if (editor) this.session.applied(editor.document.offsetAt(editor.selection.active));
  }

  /** Next edits were turned off (or on): whatever is shown goes. */
  settingsChanged(): void {
    if (!this.hooks.settings().enabled) this.session.reset();
  }

  /** Fill-in-the-middle ghost text's state at a cursor (the inline provider's report). */
  fimPhase(document: vscode.TextDocument, position: vscode.Position, phase: 'pending' | 'shown' | 'none'): void {
    this.fim.note(document, position, phase);
    if (phase === 'shown') {
      const s = this.session.shown;
      const editor = vscode.window.activeTextEditor;
      if (s && s.shape.render !== 'ghost' && editor?.document === document && document.offsetAt(position) === s.cursor) this.session.fimShown();
    }
  }

  // ------------------------------------------------------------------------------ session host

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.ask(), delayMs);
    const document = vscode.window.activeTextEditor?.document;
    if (document) this.ghost.due.scheduled(document.uri.toString(), document.version);
  }

  private cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.inFlight?.abort();
    this.inFlight = null;
    this.ghost.due.settled();
  }

  private async ask(): Promise<void> {
    this.timer = undefined;
    this.ghost.due.settled();
    const editor = vscode.window.activeTextEditor;
    if (!editor?.selection.isEmpty || editor.selections.length !== 1 || !recordable(editor.document)) return;
    const settings = this.hooks.settings();
    if (!settings.enabled) return;
    const source = this.hooks.source();
    if (!source) {
      if (!this.noSourceLogged) this.hooks.log.info(`next edits: ${this.hooks.noSourceReason()}`);
      this.noSourceLogged = true;
      return;
    }
    this.editor = editor;
    const document = editor.document;
    const version = document.version;
    const position = editor.selection.active;
    const cursor = document.offsetAt(position);
    const { request, base } = buildRequest(document, position, this.history.events(), { mode: this.hooks.mode(), format: settings.format });
    const requestId = this.session.requestStarted(cursor);
    const abort = new AbortController();
    this.inFlight = abort;
    this.ghost.due.started(document.uri.toString(), version, cursor);
    this.stats.requested();
    const current = () => !abort.signal.aborted && document.version === version && this.session.wants(requestId);
    const onEdit = (edit: TextReplacement) => {
      // The first final edit, before the rest of the window is decoded: drawn at once unless FIM
      // ghost text is (or may be) shown at this cursor.
      if (!current() || this.session.shown || this.fim.phaseAt(document, position) !== 'none') return;
      this.session.answered(requestId, shifted([edit], base));
    };
    try {
      const result = await source.nextEdit(request, abort.signal, onEdit);
      if (!current()) return;
      this.lastFailure = null;
      const figures = requestFigures(result);
      this.figures.set(requestId, figures);
      this.stats.answered(figures);
      if (result.noSuggestion || result.edits.length === 0) {
        const why = result.noSuggestion ? `${result.noSuggestion.reason}: ${result.noSuggestion.detail}` : 'no edit';
        if (result.noSuggestion?.reason !== 'cancelled') {
          this.stats.nothingToSuggest(result.noSuggestion?.reason ?? 'unchanged');
          // A model that cannot serve answers so after every pause: said once, and again when it changes.
          if (this.stats.modelProblem.answered(result.noSuggestion)) this.hooks.log.info(`next edit: no suggestion (${why}; ${Math.round(figures.totalMs)} ms)`);
        }
        this.session.failed(requestId);
        return;
      }
      this.stats.modelProblem.answered(undefined);
      if (!this.session.shown) {
        const fim = await this.fim.settled(document, position, FIM_WAIT_MS);
        if (!current()) return;
        if (fim === 'shown') {
          this.hooks.log.info(`next edit: not shown, ghost text at the cursor has priority (${result.edits.length} edit${result.edits.length === 1 ? '' : 's'})`);
          this.session.failed(requestId);
          return;
        }
      }
      this.session.answered(requestId, shifted(result.edits, base));
    } catch (error) {
      // Once per distinct failure (a model that cannot load fails every request the same way).
      const message = (error as Error).message;
      if (!abort.signal.aborted && message !== this.lastFailure) this.hooks.log.warn(`next edit failed: ${message}`);
      this.lastFailure = message;
      this.session.failed(requestId);
    } finally {
      if (this.inFlight === abort) {
        this.inFlight = null;
        this.ghost.due.settled();
      }
      this.hooks.onStats();
    }
  }

  private render(s: ShownSuggestion | null): void {
    const editor = this.editor ?? vscode.window.activeTextEditor;
    if (!s || !editor) {
      // Ghost text goes by itself (VS Code drops it on a keystroke; Escape hides it in dismiss()).
      this.renderer.clear();
      this.ghost.clear();
      return;
    }
    if (s.shape.render === 'ghost') {
      this.renderer.clear();
      this.ghost.show(editor.document, s);
      return;
    }
    this.ghost.clear();
    this.renderer.show(editor, s);
    this.markOnScreen(s);
  }

  private markOnScreen(s: ShownSuggestion): void {
    if (this.onScreen.has(s)) return;
    const editAt = this.editor ? this.hooks.lastEditAt(this.editor.document) : undefined;
    const ms = editAt === undefined ? null : performance.now() - editAt;
    this.onScreen.set(s, ms);
    this.stats.shown(s.shape.render, ms);
    this.hooks.onStats();
  }

  private setKeys(keys: ContextKeys): void {
    if (keys.shown !== this.keys.shown) void vscode.commands.executeCommand('setContext', CONTEXT_SHOWN, keys.shown);
    if (keys.far !== this.keys.far) void vscode.commands.executeCommand('setContext', CONTEXT_FAR, keys.far);
    this.keys = keys;
  }

  private moveTo(s: ShownSuggestion): void {
    const editor = this.editor;
    if (!editor) return;
    const at = editor.document.positionAt(s.edit.start);
    this.ownCursorUntil = performance.now() + OWN_CURSOR_MS;
    editor.selection = new vscode.Selection(at, at);
    editor.revealRange(new vscode.Range(at, editor.document.positionAt(s.edit.end)), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  /** The edit as one undo step; the cursor after it; then the chain. */
  private async apply(s: ShownSuggestion): Promise<void> {
    const editor = this.editor;
    if (!editor || this.applying) return;
    const document = editor.document;
    const range = new vscode.Range(document.positionAt(s.edit.start), document.positionAt(s.edit.end));
    this.renderer.clear();
    this.applying = true;
    let ok = false;
    try {
      ok = await editor.edit((builder) => builder.replace(range, s.edit.text), { undoStopBefore: true, undoStopAfter: true });
    } finally {
      this.applying = false;
    }
    if (!ok || this.session.shown !== s) {
      if (!ok) this.hooks.log.warn('next edit: the editor refused the edit');
      return;
    }
    const end = document.positionAt(s.edit.start + s.edit.text.length);
    this.ownCursorUntil = performance.now() + OWN_CURSOR_MS;
    editor.selection = new vscode.Selection(end, end);
    editor.revealRange(new vscode.Range(end, end), vscode.TextEditorRevealType.Default);
    this.session.applied(document.offsetAt(end));
  }

  private ended(s: ShownSuggestion, outcome: NextEditOutcome): void {
    this.ghost.clear(s);
    this.stats.ended(outcome);
    this.hooks.log.info(describeSuggestion(s, outcome, this.figures.get(s.requestId) ?? null, this.onScreen.get(s) ?? null));
    this.hooks.onStats();
  }

  private classify(edit: TextReplacement, cursor: number) {
    const editor = this.editor ?? vscode.window.activeTextEditor!;
    const doc = editor.document;
    const text: ShapeText = {
      positionAt: (offset) => doc.positionAt(offset),
      offsetAt: ({ line, character }) => doc.offsetAt(new vscode.Position(line, character)),
      lineCount: doc.lineCount,
      lineText: (line) => doc.lineAt(line).text,
    };
    const slice = (start: number, end: number) => doc.getText(new vscode.Range(doc.positionAt(start), doc.positionAt(end)));
    const visible = editor.visibleRanges.map((r) => ({ start: r.start.line, end: r.end.line }));
    return classifyNextEdit(text, slice, edit, cursor, visible);
  }

  dispose(): void {
    this.session.reset();
    this.cancel();
    this.setKeys({ shown: false, far: false });
    for (const d of this.disposables) d.dispose();
  }
}

/** Documents whose edits are the user's (not output channels, not the settings editor's). */
function recordable(doc: vscode.TextDocument): boolean {
  return doc.uri.scheme === 'file' || doc.uri.scheme === 'untitled' || doc.uri.scheme === 'vscode-remote';
}
