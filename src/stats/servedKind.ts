// How a completion was served, named alike wherever Draftline says it (the status bar and its
// tooltip, Show Stats' tables and charts, the log): computed by the model now, from the cache (an
// earlier answer at the same place), or from a prefetch (computed before the editor asked for it).

export type ServedKind = 'computed' | 'cache' | 'prefetch';

export const SERVED_KINDS: readonly ServedKind[] = ['computed', 'cache', 'prefetch'];

/** The names, as said after "served" / "came": "from the cache", "from a prefetch". */
export const SERVED_NAMES: Readonly<Record<ServedKind, string>> = { computed: 'computed', cache: 'from the cache', prefetch: 'from a prefetch' };

/** A completion served from the cache (`fromCache`) came from a prefetch when one computed it. */
export function servedKind(fromCache: boolean, prefetched: boolean): ServedKind {
  return !fromCache ? 'computed' : prefetched ? 'prefetch' : 'cache';
}
