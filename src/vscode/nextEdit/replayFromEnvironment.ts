import * as fs from 'node:fs';
import type { NextEditProvider } from '../../nextEdit/provider';
import { type RecordedNextEdit, ReplayNextEditProvider } from '../../nextEditSession/replayProvider';

/** Environment variable naming a JSON file of recorded next-edit answers (`{ "cases": RecordedNextEdit[] }`). */
export const REPLAY_ENV = 'DRAFTLINE_NEXT_EDIT_REPLAY';

/**
 * The real-editor tests' backend for next edits: recorded answers read from the file that
 * DRAFTLINE_NEXT_EDIT_REPLAY names (read again when it changes), or null when the variable is unset.
 * Users never set it: their next edits come from the backend.
 */
export function replaySourceFromEnvironment(warn: (message: string) => void): NextEditProvider | null {
  const file = process.env[REPLAY_ENV];
  if (!file) return null;
  let loaded: { mtimeMs: number; source: ReplayNextEditProvider } | null = null;
  const current = (): ReplayNextEditProvider => {
    try {
      const mtimeMs = fs.statSync(file).mtimeMs;
      if (loaded?.mtimeMs !== mtimeMs) {
        const cases = (JSON.parse(fs.readFileSync(file, 'utf8')) as { cases: RecordedNextEdit[] }).cases;
        loaded = { mtimeMs, source: new ReplayNextEditProvider(cases) };
      }
    } catch (error) {
      warn(`${REPLAY_ENV}: ${(error as Error).message}`);
      loaded ??= { mtimeMs: 0, source: new ReplayNextEditProvider([]) };
    }
    return loaded.source;
  };
  return { nextEdit: (request, signal, onEdit) => current().nextEdit(request, signal, onEdit) };
}
