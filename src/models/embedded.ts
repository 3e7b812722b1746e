import * as path from 'node:path';

/**
 * The demo pairs shipped in `models/` (see models/README.md). The v3 pair is what a user gets with
 * no model configured; the tiny v2 pair stays in the repository for tests that need speed, and is
 * not packaged.
 */
export const EMBEDDED_PAIRS = {
  v3: { target: 'draftline-code-target.gguf', draft: 'draftline-code-draft.gguf' },
  tiny: { target: 'tiny-code-target.gguf', draft: 'tiny-code-draft.gguf' },
} as const;

export type EmbeddedPairName = keyof typeof EMBEDDED_PAIRS;

/** The pair used when nothing is configured. */
export const DEFAULT_EMBEDDED_PAIR: EmbeddedPairName = 'v3';

/** Absolute paths of an embedded pair under a root holding `models/` (the extension or the repo). */
export function embeddedPairPaths(root: string, pair: EmbeddedPairName = DEFAULT_EMBEDDED_PAIR): { target: string; draft: string } {
  const files = EMBEDDED_PAIRS[pair];
  return { target: path.join(root, 'models', files.target), draft: path.join(root, 'models', files.draft) };
}

/** A model's display name from its file: `draftline-code-target.gguf` -> `draftline-code-target`. */
export function modelNameOf(file: string): string {
  return path.basename(file).replace(/\.gguf$/i, '');
}
