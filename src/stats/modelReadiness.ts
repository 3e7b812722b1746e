// When the models could not serve completions: loading at startup, the inference worker restarting
// after a crash, a server not answering. VS Code asks for ghost text again only once they are back,
// so the time between an edit and that request was spent waiting for them, not on the editor: the
// slow-ghost-text line says which (stats/ghostTextTimeline.ts).

/** Why the models could not serve, as the log says it ("most of it waiting for the models (…)"). */
export const NOT_READY_CAUSES = {
  loading: 'the models loading',
  workerRestart: 'the inference worker restarting after a crash and loading the models again',
  serverDown: 'the server not answering',
  loadFailed: 'the models failing to load',
} as const;

interface NotReadySpan {
  from: number;
  /** null while it lasts. */
  to: number | null;
  cause: string;
}

/** Spans kept: enough to cover any edit a ghost text is still answered for. */
const KEPT_SPANS = 16;

export class ModelReadiness {
  private readonly spans: NotReadySpan[] = [];

  /** Not ready from the start: the models load when the extension starts. */
  constructor(
    private readonly now: () => number = () => performance.now(),
    initialCause: string = NOT_READY_CAUSES.loading,
  ) {
    this.spans.push({ from: now(), to: null, cause: initialCause });
  }

  /** The models stopped serving (or could not start): `cause` unless they were already down for another. */
  notReady(cause: string): void {
    if (this.spans.at(-1)?.to === null) return;
    this.spans.push({ from: this.now(), to: null, cause });
    if (this.spans.length > KEPT_SPANS) this.spans.shift();
  }

  /** The models serve again. */
  ready(): void {
    const open = this.spans.at(-1);
    if (open && open.to === null) open.to = this.now();
  }

  /** How long in [from, to] the models could not serve, and why (the cause of the longest part); null when they could throughout. */
  notReadyBetween(from: number, to: number): { ms: number; cause: string } | null {
    let ms = 0;
    let longest: { ms: number; cause: string } | null = null;
    for (const span of this.spans) {
      const overlap = Math.min(to, span.to ?? to) - Math.max(from, span.from);
      if (overlap <= 0) continue;
      ms += overlap;
      if (!longest || overlap > longest.ms) longest = { ms: overlap, cause: span.cause };
    }
    return longest ? { ms, cause: longest.cause } : null;
  }
}
