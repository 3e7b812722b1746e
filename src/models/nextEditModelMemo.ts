// The next-edit model's file, asked for at each next-edit request: resolved (offered, downloaded)
// once per setting value, but only an answer is kept. A download that failed or was cut short (the
// worker ended under it) is offered again at the next request, and so is a model whose download the
// user declined once next edits are turned off and on again. Host-safe: the VS Code layer supplies
// the offer and the download (src/vscode/modelDownloads.ts).

/** The user said no (Cancel on the offer, or a cancelled download): not asked again for this value. */
export class NextEditModelDeclined extends Error {}

export class NextEditModelMemo<T = string> {
  private last: { model: string; file: Promise<T> } | null = null;

  constructor(private readonly resolve: (model: string) => Promise<T>) {}

  /** The local file for `model` (and what was found out about it); rejects as the resolution did (a decline is kept, a failure not). */
  async file(model: string): Promise<T> {
    if (this.last?.model !== model) this.last = { model, file: this.resolve(model) };
    const entry = this.last;
    try {
      return await entry.file;
    } catch (error) {
      if (!(error instanceof NextEditModelDeclined) && this.last === entry) this.last = null;
      throw error;
    }
  }

  /** Next edits were turned off (or on): whatever was answered is asked again. */
  reset(): void {
    this.last = null;
  }
}
