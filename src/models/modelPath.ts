import * as path from 'node:path';
import { isModelUri } from './downloadIndex';

/**
 * A model setting as the worker should get it. Hub URIs and absolute paths pass as they are; `~` is
 * the user's home; any other relative path is resolved against the home folder too, with a note
 * saying so: left alone it would resolve against the worker's working directory, which is wherever
 * the editor happened to start.
 */
export function resolveModelPath(setting: string, value: string, home: string): { path: string; note?: string } {
  if (!value || value === 'none' || isModelUri(value) || path.isAbsolute(value)) return { path: value };
  const tilde = /^~(?=$|[\\/])/.exec(value);
  if (tilde) return { path: path.join(home, value.slice(1)) };
  const resolved = path.resolve(home, value);
  return {
    path: resolved,
    note: `${setting} is a relative path ("${value}"): Draftline reads it from your home folder, ${resolved}. Use an absolute path (or ~/…) to say so explicitly.`,
  };
}
