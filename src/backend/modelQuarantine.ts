// Model files that ended the inference worker: a file (or, for a crash while generating, the pair of
// files that ran) that did so twice is not loaded again until it changes (size or modification time)
// or the user asks, so that a broken or hostile file (or one too big for the GPU, whose GGML_ABORT
// ends the process) does not take the worker down at every restart. Kept in a JSON file (the
// extension's global storage), so every window of the profile and the next session know it too.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Worker ends with the same files in native use before they are quarantined. */
export const QUARANTINE_AFTER_CRASHES = 2;

interface FileStamp {
  size: number;
  mtimeMs: number;
}

export interface QuarantineEntry {
  /**
   * The files llama.cpp ran when the worker ended: the one it was reading during a load, or the
   * target and draft during a generation (which of the two aborted cannot be told, so only that
   * pair is refused, not the draft with another target). Each as it was then: another size or time
   * is another file.
   */
  files: Record<string, FileStamp>;
  crashes: number;
  /**
   * The workers (pids) whose end was counted: every window of a pair sees its shared worker end, and
   * one end counts once whichever windows record it.
   */
  workers?: number[];
  /** How it ended and what the worker was doing ('while loading it', 'while generating with it'), the last time. */
  lastCrash: string;
}

export class QuarantinedModelError extends Error {
  readonly code = 'quarantined';
  constructor(readonly entries: QuarantineEntry[]) {
    const entry = entries[0]!;
    const files = Object.keys(entry.files);
    super(
      `${files.map((f) => path.basename(f)).join(' with ')} ended the inference worker ${entry.crashes} times (${entry.lastCrash}) and ${files.length > 1 ? 'are' : 'is'} not loaded again until the file changes or you load it anyway (Draftline: Clear Model Quarantine): ${files.join(', ')}`,
    );
  }
}

const stampOf = (file: string): FileStamp | null => {
  try {
    const s = fs.statSync(file);
    return { size: s.size, mtimeMs: s.mtimeMs };
  } catch {
    return null;
  }
};

/** An entry's files, all as they were when they ended the worker. */
const unchanged = (entry: QuarantineEntry) =>
  Object.entries(entry.files).every(([file, then]) => {
    const now = stampOf(file);
    return now !== null && now.size === then.size && now.mtimeMs === then.mtimeMs;
  });

const keyOf = (files: string[]) => JSON.stringify([...new Set(files)].sort());

export class ModelQuarantine {
  private entries = new Map<string, QuarantineEntry>();

  /** `storeFile`: where the entries are kept (none: in this object only). */
  constructor(private readonly storeFile?: string) {}

  /**
   * The worker (`workerPid`) ended while llama.cpp ran these files. Returns their entry once it is
   * quarantined, else null.
   */
  recordCrash(files: string[], what: string, workerPid?: number): QuarantineEntry | null {
    if (files.length === 0) return null;
    this.read();
    const key = keyOf(files);
    const stamps: Record<string, FileStamp> = {};
    // In the order given (the target first), for the message; the key does not depend on it.
    for (const file of new Set(files)) {
      const stamp = stampOf(file);
      if (!stamp) return null;
      stamps[file] = stamp;
    }
    const old = this.entries.get(key);
    const same = old !== undefined && unchanged(old);
    // Another window already counted this worker's end.
    if (same && workerPid !== undefined && old.workers?.includes(workerPid)) return old.crashes >= QUARANTINE_AFTER_CRASHES ? old : null;
    // Files that changed since their last crash start again from none.
    const crashes = same ? old.crashes + 1 : 1;
    const workers = [...(same ? (old.workers ?? []) : []), ...(workerPid !== undefined ? [workerPid] : [])].slice(-8);
    const entry: QuarantineEntry = { files: stamps, crashes, workers, lastCrash: what };
    this.entries.set(key, entry);
    this.write();
    return crashes >= QUARANTINE_AFTER_CRASHES ? entry : null;
  }

  /** The quarantined entries that a load of these files would run into (each of an entry's files among them, unchanged). */
  check(files: (string | null | undefined)[]): QuarantineEntry[] {
    this.read();
    const loading = new Set(files.filter((f): f is string => Boolean(f)));
    return [...this.entries.values()].filter((e) => e.crashes >= QUARANTINE_AFTER_CRASHES && Object.keys(e.files).every((f) => loading.has(f)) && unchanged(e));
  }

  /** Everything quarantined now, for the command that lifts it. */
  list(): QuarantineEntry[] {
    this.read();
    return [...this.entries.values()].filter((e) => e.crashes >= QUARANTINE_AFTER_CRASHES && unchanged(e));
  }

  /** The user asks for these files (everything when none are named): entries naming any of them go. */
  clear(files?: string[]): void {
    this.read();
    for (const [key, entry] of this.entries) {
      if (!files || Object.keys(entry.files).some((f) => files.includes(f))) this.entries.delete(key);
    }
    this.write();
  }

  private read(): void {
    if (!this.storeFile) return;
    let text: string;
    try {
      text = fs.readFileSync(this.storeFile, 'utf8');
    } catch {
      // None written yet: what this window counted so far stands.
      return;
    }
    try {
      const data = JSON.parse(text) as Record<string, QuarantineEntry>;
      this.entries = new Map(Object.entries(data).filter(([, e]) => e && typeof e.crashes === 'number' && e.files && typeof e.files === 'object'));
    } catch {
      // Unreadable (a write cut short): nothing is quarantined; a file that aborts again is counted again.
      this.entries = new Map();
    }
  }

  private write(): void {
    if (!this.storeFile) return;
    try {
      fs.mkdirSync(path.dirname(this.storeFile), { recursive: true });
      // Whole or not at all: another window may read it at any moment.
      const temporary = `${this.storeFile}.${process.pid}.tmp`;
      fs.writeFileSync(temporary, JSON.stringify(Object.fromEntries(this.entries), null, 1));
      fs.renameSync(temporary, this.storeFile);
    } catch {
      // Kept in memory for this window.
    }
  }
}
