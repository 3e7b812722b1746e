import * as vscode from 'vscode';
import { updateWhereItApplies } from './settings';

/** Remembered when the user keeps ghost-text coloring: the question is not asked again. */
const DECLINED_KEY = 'draftline.hugeFileAdvice.declined';
export const TURN_OFF = 'Turn Off Ghost-Text Coloring';
export const KEEP = 'Keep It';

/**
 * In a huge or minified file (one Draftline does not mirror, engine/documentMirror.ts) VS Code colors
 * ghost text by tokenizing the ghost line in context (`tokenizeLinesAt`), which first tokenizes every
 * line above the cursor, synchronously, in the window's renderer: the editor can freeze for minutes
 * (docs/ARCHITECTURE.md has the figures). Draftline cannot change how VS Code paints its text, so it
 * asks once whether to turn the coloring off (editor.inlineSuggest.syntaxHighlightingEnabled, a user
 * setting); nothing changes without the user's answer.
 */
export class HugeFileAdvice {
  private askedThisSession = false;

  constructor(
    private readonly state: vscode.Memento,
    private readonly log: (message: string) => void,
  ) {}

  /** `notMirroredReason`: why the document is not mirrored (huge, minified, binary), or undefined. */
  async check(document: vscode.TextDocument, notMirroredReason: string | undefined): Promise<void> {
    if (!notMirroredReason || /binary/.test(notMirroredReason) || this.askedThisSession || this.state.get<boolean>(DECLINED_KEY)) return;
    const inlineSuggest = vscode.workspace.getConfiguration('editor.inlineSuggest', document);
    if (inlineSuggest.get<boolean>('syntaxHighlightingEnabled') === false) return;
    this.askedThisSession = true;
    const name = document.uri.path.split('/').pop() ?? document.uri.toString();
    this.log(`${name} is ${notMirroredReason}: VS Code's ghost-text coloring tokenizes the file up to the cursor before showing a suggestion; asking whether to turn it off`);
    const choice = await vscode.window.showInformationMessage(
      `Draftline: ${name} is ${notMirroredReason}. Before VS Code shows a suggestion here, it colors it by tokenizing the whole file up to the cursor, which can freeze the editor for minutes. Turn off ghost-text coloring (editor.inlineSuggest.syntaxHighlightingEnabled)?`,
      TURN_OFF,
      KEEP,
    );
    if (choice === TURN_OFF) {
      const place = await updateWhereItApplies(inlineSuggest, 'syntaxHighlightingEnabled', false);
      this.log(`ghost-text coloring turned off (editor.inlineSuggest.syntaxHighlightingEnabled: false, ${place})`);
    } else if (choice === KEEP) {
      await this.state.update(DECLINED_KEY, true);
    }
  }
}
