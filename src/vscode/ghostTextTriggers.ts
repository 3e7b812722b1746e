// When the editor asks VS Code for a ghost text itself, instead of waiting for the user to type:
// after the models load, after completions are turned back on, and after an accept whose next
// completion a prefetch made ready; and the user's Alt+] / Alt+[, which asks for the alternatives.
import * as vscode from 'vscode';
import type { CompletionEngine } from '../engine/completionEngine';
import type { ExtraContext } from '../shared/completion';
import { type DraftlineInlineProvider, engineDocument } from './inlineProvider';

/**
 * Asks VS Code for the ghost text at the cursor, announced to the provider: such a request comes
 * as Invoke, like the user's Alt+], and must cost one suggestion, not the alternatives.
 */
export function triggerGhostText(provider: DraftlineInlineProvider): void {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  provider.expectOwnTrigger(editor.document, editor.selection.active);
  void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
}

/**
 * The user accepted a completion in the document `key`: the completion at the cursor after it is
 * prefetched (the editor asks there next), and asked for once ready. The insertion is done by the
 * time this runs, with the cursor after it.
 */
export function prefetchAfterAccept(engine: CompletionEngine, provider: DraftlineInlineProvider, key: string, extraContext: (document: vscode.TextDocument) => ExtraContext | undefined): void {
  const editor = [vscode.window.activeTextEditor, ...vscode.window.visibleTextEditors].find((e) => e?.document.uri.toString() === key);
  if (!editor?.selection.isEmpty) return;
  const document = editor.document;
  const version = document.version;
  const position = editor.selection.active;
  const doc = engineDocument(document, position, editor, extraContext);
  void engine.prefetch(doc, 'accepted').then((outcome) => {
    // Ask VS Code for the ghost text at this cursor once it is ready (a cache hit): VS Code 1.100
    // asks by itself after an accept (that request waits for the running prefetch), but nothing
    // says every version does, and a second ask costs a cache lookup.
    if (outcome !== 'ready' && outcome !== 'cached') return;
    const active = vscode.window.activeTextEditor;
    if (active?.document !== document || document.version !== version || !active.selection.active.isEqual(position)) return;
    provider.expectOwnTrigger(document, position);
    void vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
  });
}

/**
 * Alt+] / Alt+[ (Draftline: Show Next / Previous Suggestion): the next or previous of the
 * suggestions at the cursor, the alternatives computed for it. VS Code's own commands show the next
 * item of the list VS Code holds; it asks the provider again only where its last request there was
 * an automatic one. Where it holds the one suggestion of an Invoke (Draftline's trigger after an
 * accept) it would never ask, so that ghost text is hidden and asked for again first.
 */
export async function showOtherSuggestion(provider: DraftlineInlineProvider, direction: 'next' | 'previous'): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  if (!provider.userCycles(editor.document, editor.selection.active)) {
    await vscode.commands.executeCommand('editor.action.inlineSuggest.hide');
    await vscode.commands.executeCommand('editor.action.inlineSuggest.trigger');
  }
  await vscode.commands.executeCommand(direction === 'next' ? 'editor.action.inlineSuggest.showNext' : 'editor.action.inlineSuggest.showPrevious');
}
