import * as vscode from 'vscode';
import { blockImage, editorLineHeight, gutterArrow, type ThemeKind } from '../../nextEditSession/blockImage';
import type { ShownSuggestion } from '../../nextEditSession/session';

/** What the editor shows beside a next edit drawn as decorations. */
export const HINT_APPLY = 'Tab to apply';
export const hintJump = (line: number, below: boolean) => `Tab to jump ${below ? '↓' : '↑'} next edit at line ${line}`;

const nbsp = (text: string) => text.replace(/ /g, '\u00a0');

function themeKind(): ThemeKind {
  switch (vscode.window.activeColorTheme.kind) {
    case vscode.ColorThemeKind.Light:
      return 'light';
    case vscode.ColorThemeKind.HighContrast:
      return 'highContrast';
    case vscode.ColorThemeKind.HighContrastLight:
      return 'highContrastLight';
    default:
      return 'dark';
  }
}

/**
 * Draws a next edit that is not ghost text: the removed text marked in the diff
 * editor's removed colour, the inserted text beside it in the inserted colour (one line), or the new
 * lines as an image beside the old (several lines); "Tab to apply" beside it; and for a far edit a
 * "Tab to jump" marker at the cursor's line, with an arrow in the gutter and a mark in the overview
 * ruler at the edit. Ghost text goes through the inline completion provider instead (the controller).
 */
export class NextEditRenderer implements vscode.Disposable {
  private readonly removed = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor('diffEditor.removedTextBackground'),
    borderColor: new vscode.ThemeColor('diffEditor.removedTextBorder'),
    borderStyle: 'solid',
    borderWidth: '1px',
    textDecoration: 'line-through',
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
  private readonly inserted = vscode.window.createTextEditorDecorationType({
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
  private readonly hint = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor('editorCodeLens.foreground'), fontStyle: 'italic', margin: '0 0 0 1.5em' },
  });
  private target: vscode.TextEditorDecorationType;
  private drawnOn: vscode.TextEditor | null = null;
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    this.target = this.targetType();
    this.disposables.push(
      vscode.window.onDidChangeActiveColorTheme(() => {
        this.target.dispose();
        this.target = this.targetType();
      }),
    );
  }

  private targetType(): vscode.TextEditorDecorationType {
    return vscode.window.createTextEditorDecorationType({
      gutterIconPath: vscode.Uri.parse(gutterArrow(themeKind())),
      gutterIconSize: '70%',
      overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.modifiedForeground'),
      overviewRulerLane: vscode.OverviewRulerLane.Full,
      isWholeLine: true,
      backgroundColor: new vscode.ThemeColor('diffEditor.unchangedRegionBackground'),
    });
  }

  show(editor: vscode.TextEditor, s: ShownSuggestion): void {
    this.clear();
    if (s.shape.render === 'ghost') return;
    this.drawnOn = editor;
    const doc = editor.document;
    const range = (start: number, end: number) => new vscode.Range(doc.positionAt(start), doc.positionAt(end));
    const shape = s.shape;
    const removed = shape.removed.end > shape.removed.start ? [range(shape.removed.start, shape.removed.end)] : [];
    editor.setDecorations(this.removed, removed);
    const inserted: vscode.DecorationOptions[] = [];
    let hintLine = shape.lastLine;
    if (shape.render === 'inline' && shape.inserted) {
      const at = doc.positionAt(shape.inserted.at);
      inserted.push({
        range: new vscode.Range(at, at),
        renderOptions: {
          after: {
            contentText: nbsp(shape.inserted.text),
            backgroundColor: new vscode.ThemeColor('diffEditor.insertedTextBackground'),
            border: '1px solid',
            borderColor: new vscode.ThemeColor('diffEditor.insertedTextBorder'),
          },
        },
      });
    } else if (shape.render === 'block' && shape.block) {
      const b = shape.block;
      const config = vscode.workspace.getConfiguration('editor', doc);
      const fontSize = config.get<number>('fontSize', 14);
      const font = {
        family: config.get<string>('fontFamily', 'monospace'),
        size: fontSize,
        lineHeight: editorLineHeight(fontSize, config.get<number>('lineHeight', 0), process.platform === 'darwin'),
      };
      const tabSize = typeof editor.options.tabSize === 'number' ? editor.options.tabSize : 4;
      const image = blockImage(b.lines, b.moreLines, font, themeKind(), tabSize);
      const anchor = doc.lineAt(b.anchorLine);
      const gap = Math.max(2, b.widestColumn - anchor.text.length + 4);
      inserted.push({
        range: new vscode.Range(anchor.range.end, anchor.range.end),
        renderOptions: {
          after: {
            contentIconPath: vscode.Uri.parse(image.uri),
            width: `${image.width}px`,
            height: `${image.height}px`,
            margin: `0 0 0 ${gap}ch`,
            // Drawn over the lines below (it is taller than one), not pushing them down.
            textDecoration: 'none; position: absolute; z-index: 10; vertical-align: top',
          },
        },
      });
      hintLine = Math.min(doc.lineCount - 1, b.anchorLine + b.lines.length + (b.moreLines > 0 ? 1 : 0));
      // The hint goes below the image, on the line after it, unless that line is long: then beside the first.
      if (hintLine >= doc.lineCount || doc.lineAt(hintLine).text.length > b.widestColumn) hintLine = b.anchorLine;
    }
    editor.setDecorations(this.inserted, inserted);
    const hints: vscode.DecorationOptions[] = [];
    const cursorLine = doc.positionAt(s.cursor).line;
    if (shape.far) {
      const line = doc.lineAt(cursorLine);
      hints.push({ range: new vscode.Range(line.range.end, line.range.end), renderOptions: { after: { contentText: nbsp(hintJump(shape.firstLine + 1, shape.firstLine > cursorLine)) } } });
    } else if (shape.render !== 'block' || hintLine !== shape.block?.anchorLine) {
      const line = doc.lineAt(hintLine);
      hints.push({ range: new vscode.Range(line.range.end, line.range.end), renderOptions: { after: { contentText: nbsp(HINT_APPLY) } } });
    }
    editor.setDecorations(this.hint, hints);
    editor.setDecorations(this.target, shape.far ? [doc.lineAt(shape.firstLine).range] : []);
  }

  clear(): void {
    const editor = this.drawnOn;
    this.drawnOn = null;
    if (!editor) return;
    for (const type of [this.removed, this.inserted, this.hint, this.target]) editor.setDecorations(type, []);
  }

  dispose(): void {
    this.clear();
    for (const type of [this.removed, this.inserted, this.hint, this.target]) type.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
