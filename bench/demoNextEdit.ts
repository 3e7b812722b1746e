// The hook for an embedded demo next-edit model (issue #39 item 8): when one ships in models/, the
// edits regime runs its modes on it and its own greedy output is scored (window exact, right lines,
// no suggestion). None ships yet: null.
import * as fs from 'node:fs';
import * as path from 'node:path';

/** File names a demo next-edit model may have in models/ (checked in order). */
export const DEMO_NEXT_EDIT_FILES = ['draftline-next-edit.gguf', 'draftline-nes.gguf'];

export function demoNextEditModel(root: string): string | null {
  for (const name of DEMO_NEXT_EDIT_FILES) {
    const file = path.join(root, 'models', name);
    if (fs.existsSync(file)) return file;
  }
  return null;
}
