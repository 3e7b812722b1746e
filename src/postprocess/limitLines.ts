export const DEFAULT_MAX_LINES = 16;

/** A filter keeping at most `maxLines` lines: long ghost text is rarely accepted whole. */
export function limitLines(maxLines: number = DEFAULT_MAX_LINES): (completion: string) => string {
  return (completion) => {
    if (maxLines <= 0) return '';
    let end = -1;
    for (let line = 0; line < maxLines; line++) {
      end = completion.indexOf('\n', end + 1);
      if (end < 0) return completion;
    }
    return completion.slice(0, end);
  };
}
