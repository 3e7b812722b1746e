// The notification shown while the backend is down (the local worker crashed, or the server is
// unreachable), apart from the controller: it reads only the backend's outage and writes the status bar.
import * as vscode from 'vscode';
import type { InferenceBackend } from '../backend/backend';
import type { StatusState } from './statusBar';

export interface OutageNotice {
  /** Reads the backend's outage again (another crash in the burst). */
  refresh(): void;
  close(): void;
}

/**
 * One notification per burst of crashes, counting down the client's real backoff (which doubles
 * with each crash in a row, up to 30 s) until the models are loaded again. `onClose` runs as it closes.
 */
export function showOutageNotice(backend: () => InferenceBackend, setState: (state: StatusState) => void, onClose: () => void): OutageNotice {
  let close!: () => void;
  const closed = new Promise<void>((resolve) => (close = resolve));
  let refresh = (): void => undefined;
  const notice = { refresh: () => refresh(), close: () => (onClose(), close()) };
  void vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Draftline' }, async (progress) => {
    refresh = () => {
      const outage = backend().outage();
      const local = backend().kind === 'local';
      const again = outage && `${local ? 'Restarting' : 'Trying again'} in ${Math.ceil(outage.remainingMs / 1000)} s`;
      const times = outage && outage.failuresInARow > 1 ? `, ${outage.failuresInARow} times in a row` : '';
      const message = outage
        ? local
          ? `the inference worker stopped (${outage.description}${times}). ${again}; the editor is not affected (Draftline: Show Log for details).`
          : `the ${backend().kind} server is unreachable (${outage.description}${times}). ${again}; no completions until it answers.`
        : local
          ? 'the inference worker restarted; loading the models again…'
          : 'the server answers again; reconnecting…';
      progress.report({ message });
      setState({ kind: 'error', message: outage ? `${outage.description}; ${again?.toLowerCase()}` : 'restarting' });
    };
    refresh();
    const timer = setInterval(refresh, 1000);
    await closed;
    clearInterval(timer);
  });
  return notice;
}
