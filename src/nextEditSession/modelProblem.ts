// A next-edit model that cannot serve (not downloaded, no next-edit format, quarantined, a prompt
// that cannot be built) gives the same answer after every pause. The log says it once, the status bar
// tooltip and Show Stats show it while it lasts, and the log speaks again only when it changes.
import type { NextEditResult, NoSuggestionReason } from '../nextEdit/types';

/** Reasons about the model or its setup rather than about this edit: they repeat on every pause. */
const MODEL_REASONS: ReadonlySet<NoSuggestionReason> = new Set(['noFormat', 'error']);

export class NextEditModelProblem {
  private current: string | null = null;

  /** What stops next edits now ("error: Next-edit model not downloaded …"), or null while the model serves. */
  get problem(): string | null {
    return this.current;
  }

  /**
   * Told of every answer that was not cancelled (`noSuggestion` absent: it gave edits). Returns whether
   * its no-suggestion line belongs in the log: always for an edit's own reason (unchanged, unparseable…),
   * for a model problem only when it is new or differs from the last one.
   */
  answered(noSuggestion: NextEditResult['noSuggestion']): boolean {
    if (!noSuggestion || !MODEL_REASONS.has(noSuggestion.reason)) {
      this.current = null;
      return true;
    }
    const problem = `${noSuggestion.reason}: ${noSuggestion.detail}`;
    if (problem === this.current) return false;
    this.current = problem;
    return true;
  }
}
