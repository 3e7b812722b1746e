import type * as vscode from 'vscode';
import type { CompletionBackend, InferenceBackend } from '../backend/backend';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, prefetchWhileShownFor } from '../engine/completionEngine';
import { PowerMonitor } from './battery';
import { pauseOnBattery, prefetchWhileShown, readEngineSettings, type SettingProblemReport } from './settings';

/** What the editor's engine needs of the editor. */
export interface EditorEngineDeps {
  /** The backend that serves now (it changes with Select Backend). */
  backend(): InferenceBackend;
  reportSettingProblem: SettingProblemReport;
  log: vscode.LogOutputChannel;
  /** A prefetch made a completion ready: the stats changed. */
  onPrefetchReady(): void;
}

/**
 * The completion engine as the editor runs it: over whichever backend serves now, its prefetch
 * paused on battery where the settings say so, prefetching while a ghost text is shown as the
 * setting and the backend say, and each prefetch's end in the log.
 */
export function createEditorEngine(deps: EditorEngineDeps): CompletionEngine {
  const { reportSettingProblem, log } = deps;
  // Battery or mains, for draftline.prefetch.pauseOnBattery (read at most once a minute).
  const power = new PowerMonitor();
  const backend: CompletionBackend = {
    complete: (request, signal) => deps.backend().complete(request, signal),
    // One without alternatives says so.
    alternatives: (request, count, signal) =>
      deps.backend().alternatives?.(request, count, signal) ?? Promise.resolve({ completions: [], limitedBy: 'this backend computes one suggestion only', totalMs: 0 }),
  };
  return new CompletionEngine(
    backend,
    { ...DEFAULT_ENGINE_SETTINGS, ...readEngineSettings(false, reportSettingProblem) },
    {
      prefetchBlocker: async () => (pauseOnBattery(reportSettingProblem) && (await power.onBattery()) ? 'on battery (draftline.prefetch.pauseOnBattery)' : null),
      prefetchWhileShown: () => prefetchWhileShownFor(prefetchWhileShown(reportSettingProblem), deps.backend().kind),
      onPrefetch: (outcome, trigger, detail) => {
        if (outcome === 'cached' || outcome === 'skipped') return;
        log[outcome === 'failed' ? 'warn' : 'debug'](`prefetch (${trigger === 'accepted' ? 'after an accepted completion' : 'while a ghost text is shown'}): ${outcome}${detail ? `, ${detail}` : ''}`);
        if (outcome === 'ready') deps.onPrefetchReady();
      },
    },
  );
}
