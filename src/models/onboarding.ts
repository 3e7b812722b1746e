// The first-run offer of a real model pair, without the editor: the VS Code layer
// (src/vscode/modelDownloads.ts) supplies the notification, the download and the settings.
import { recommendPair, type MachineMemory } from './catalog';
import { DownloadError } from './downloadIndex';

export const ONBOARDED_KEY = 'draftline.onboarded';

/** Where the answer is kept across sessions (the extension's globalState). */
export interface OnboardingState {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}

export interface OnboardingHost {
  state: OnboardingState;
  /** This machine's memory, as the worker sees it (local: no network). */
  machine(): Promise<MachineMemory>;
  /** Shows the offer; resolves to the chosen button, or undefined when the notification was closed. */
  ask(message: string, ...choices: string[]): PromiseLike<string | undefined>;
  download(uris: string[], title: string): Promise<unknown>;
  /** Makes the downloaded pair the configured one. */
  useModels(targetUri: string, draftUri: string): Promise<void>;
  showError(message: string): void;
  log(message: string): void;
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 1e8 ? 1 : 0)} MB`;

/**
 * The offer's buttons. Short: VS Code gives a notification's buttons one row of a fixed-width toast and
 * cuts longer labels (to "Download (217…", "Use embedded demo …"); the size goes in the message.
 */
export const OFFER_CHOICES = { download: 'Download', later: 'Not Now' } as const;
/** Where the offer is found again once answered (the command, the status bar menu, the walkthrough). */
export const OFFER_AGAIN = 'Draftline: Get Recommended Models (the status bar menu, the Draftline walkthrough)';

/**
 * First run with no model configured: offer a recommended pair sized to this machine, or keeping the
 * embedded demo models for now. Nothing touches the network before the user clicks Download (no
 * connectivity probe either: offline, the download fails with its own message and the offer comes
 * back next start). Any answer, closing the notification included, is remembered; `again` (the
 * command) asks whatever was answered before.
 */
export async function offerRecommendedPair(host: OnboardingHost, options: { again?: boolean } = {}): Promise<void> {
  if (!options.again && host.state.get<boolean>(ONBOARDED_KEY)) return;
  const pair = recommendPair(await host.machine());
  const size = mb(pair.target.sizeBytes + pair.draft.sizeBytes);
  const choice = await host.ask(
    `Draftline runs on small demo models. Download ${pair.target.name} with ${pair.draft.name} as draft (${size}, ${pair.reason}) for real completions? The offer stays in ${OFFER_AGAIN}.`,
    OFFER_CHOICES.download,
    OFFER_CHOICES.later,
  );
  await host.state.update(ONBOARDED_KEY, true);
  if (choice !== OFFER_CHOICES.download) {
    host.log(`model offer answered; it stays in ${OFFER_AGAIN}, and Select Target Model lists the recommended models any time`);
    return;
  }
  try {
    await host.download([pair.target.uri, pair.draft.uri], `Draftline: downloading ${pair.target.name} + ${pair.draft.name}`);
  } catch (error) {
    await host.state.update(ONBOARDED_KEY, false);
    // A failed download's message (with Retry and Use a Local File…) has been shown already.
    const shown = (error as { shown?: unknown }).shown === true;
    if (!(error instanceof DownloadError && error.code === 'cancelled') && !shown) host.showError((error as Error).message);
    return;
  }
  await host.useModels(pair.target.uri, pair.draft.uri);
}
