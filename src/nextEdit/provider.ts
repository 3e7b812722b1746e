// The one seam between the editor and whatever predicts next edits (as Zed's EditPredictionProvider):
// the VS Code layer (src/vscode/nextEdit/) knows only this. The in-process worker
// (backend/localBackend.ts) and the inference servers (remote/serverBackend.ts) implement it as part
// of InferenceBackend, and so do the real-editor tests' recorded answers (nextEditSession/replayProvider.ts).
import type { NextEditRequest, NextEditResult, TextReplacement } from './types';

export interface NextEditProvider {
  /**
   * A next-edit suggestion: the request's window rewritten by the model and reduced to
   * edits. `onEdit` gets each final edit as soon as it is final (in-process: while the rest of the
   * window decodes; a server: as its stream shows it), `ms` from the request's start. Completions
   * come first (in-process, the worker schedules them before it); the signal cancels, answered with
   * noSuggestion 'cancelled'. A model output that gives no suggestion says why (noSuggestion).
   */
  nextEdit(request: NextEditRequest, signal?: AbortSignal, onEdit?: (edit: TextReplacement, ms: number) => void): Promise<NextEditResult>;
}
