// Whether the next-edit model is a model of its own or the completion target's file: the target's
// own file is loaded once and serves both tasks from their own KV sequences. Pure: the worker wiring
// decides with it.
import * as path from 'node:path';

export type NextEditModelPlan =
  /** No next-edit model configured. */
  | { kind: 'none' }
  /** The completion target's own file: no second load, a KV sequence of its own. */
  | { kind: 'shareTarget'; file: string }
  /** A model of its own, loaded beside the completion pair when next edits are first asked for. */
  | { kind: 'separate'; file: string };

/**
 * Same resolved path -> share. Both paths are local files by now (hub URIs are resolved to their
 * downloaded file first: two URIs of one file resolve to one path). Paths compare resolved
 * (`a/../b` is `b`) and, on Windows and macOS (case-insensitive file systems by default), without
 * regard to case. `realpath` (fs.realpathSync in the worker) also sees through symbolic links;
 * a path it cannot resolve (not there) is compared as it is.
 */
export function planNextEditModel(nextEditFile: string, targetFile: string, options: { platform?: NodeJS.Platform; realpath?: (file: string) => string } = {}): NextEditModelPlan {
  const file = nextEditFile.trim();
  if (!file) return { kind: 'none' };
  return sameModelFile(file, targetFile, options) ? { kind: 'shareTarget', file: targetFile } : { kind: 'separate', file };
}

/** Whether two local model paths name the same file (see planNextEditModel). */
export function sameModelFile(a: string, b: string, options: { platform?: NodeJS.Platform; realpath?: (file: string) => string } = {}): boolean {
  if (!a.trim() || !b.trim()) return false;
  const platform = options.platform ?? process.platform;
  const p = platform === 'win32' ? path.win32 : path.posix;
  const canonical = (file: string) => {
    let resolved = p.resolve(file.trim());
    if (options.realpath) {
      try {
        resolved = options.realpath(resolved);
      } catch {}
    }
    return platform === 'win32' || platform === 'darwin' ? resolved.toLowerCase() : resolved;
  };
  return canonical(a) === canonical(b);
}
