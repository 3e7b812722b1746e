import * as vscode from 'vscode';
import type { DecodeMode } from '../../shared/decoding';
import type { EditEvent, NextEditFormatId, NextEditRequest } from '../../nextEdit/types';

/** Documents up to this size are sent whole; from a larger one, the lines around the cursor. */
const WHOLE_DOCUMENT_CHARS = 200_000;
/** Lines sent either side of the cursor from a larger document (far more than any format's window). */
const WINDOW_LINES = 400;

export interface BuiltRequest {
  request: NextEditRequest;
  /** Document offset of the request's text (its offsets + base = the document's). */
  base: number;
}

/** The document's path as the model sees it: workspace-relative with forward slashes (else its file name). */
export function documentPathForModel(uri: vscode.Uri): string {
  const relative = vscode.workspace.asRelativePath(uri, false);
  return relative.replace(/\\/g, '/');
}

/** The next-edit request for the cursor in `document`: its text (or the lines around the cursor), the recent edits. */
export function buildRequest(document: vscode.TextDocument, cursor: vscode.Position, events: EditEvent[], options: { mode: DecodeMode; format?: NextEditFormatId | 'auto' }): BuiltRequest {
  const length = document.offsetAt(document.lineAt(document.lineCount - 1).range.end);
  let base = 0;
  let text: string;
  if (length <= WHOLE_DOCUMENT_CHARS) text = document.getText();
  else {
    const first = Math.max(0, cursor.line - WINDOW_LINES);
    const last = Math.min(document.lineCount - 1, cursor.line + WINDOW_LINES);
    const range = new vscode.Range(first, 0, last, document.lineAt(last).text.length);
    base = document.offsetAt(range.start);
    text = document.getText(range);
  }
  return {
    base,
    request: {
      path: documentPathForModel(document.uri),
      languageId: document.languageId,
      text,
      cursorOffset: document.offsetAt(cursor) - base,
      events,
      documentKey: document.uri.toString(),
      mode: options.mode,
      ...(options.format ? { format: options.format } : {}),
    },
  };
}
