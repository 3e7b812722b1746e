// The editor's change events into nextEdit/editHistory.ts: it records one change with the document's
// text before it, so a copy of each open document's text is kept here (documents up to a bound).
import { EditHistory, type DocumentChange } from '../nextEdit/editHistory';
import type { EditEvent } from '../nextEdit/types';

/** Documents longer than this are not recorded (a copy of the text is kept per document). */
export const MAX_RECORDED_CHARS = 1_000_000;

export class RecordedEdits {
  private readonly texts = new Map<string, string>();

  constructor(
    private readonly history = new EditHistory(),
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** The document's text as it is now (when it opens). */
  track(key: string, text: string): void {
    if (text.length <= MAX_RECORDED_CHARS) this.texts.set(key, text);
  }

  /** The document closed: its text copy goes (its events stay in the timeline until they age out). */
  forget(key: string): void {
    this.texts.delete(key);
  }

  /** One change event's changes (offsets in the text before the event; VS Code lists them so that each applies after the one before). */
  record(key: string, path: string, changes: readonly DocumentChange[]): void {
    let text = this.texts.get(key);
    if (text === undefined) return;
    const at = this.now();
    for (const change of [...changes].sort((a, b) => b.offset - a.offset)) {
      this.history.record(path, text, change, at);
      text = text.slice(0, change.offset) + change.text + text.slice(change.offset + change.deleteCount);
    }
    if (text.length > MAX_RECORDED_CHARS) this.texts.delete(key);
    else this.texts.set(key, text);
  }

  events(): EditEvent[] {
    return this.history.events();
  }
}
