import { currentLinePrefix, type CompletionContext } from './context';

/** Longest cycle of lines looked for. */
const MAX_CYCLE_LINES = 8;
/** Longest repeated unit looked for inside a line ("Na" in "NaNaNaNa"). */
const MAX_UNIT_CHARS = 4;

/** A line worth calling a repetition: some letters or digits, not just `}` or `end;`-like closers. */
function isSubstantial(line: string): boolean {
  const code = line.trim();
  return code.length >= 2 && /[\p{L}\p{N}]/u.test(code);
}

/**
 * Lines [0, keep) once a cycle of lines repeating up to the end is cut to its first occurrence:
 * one line 3+ times, a cycle of 2 lines 3+ times, of 3+ lines twice. Lines compare with their
 * indentation (nested `end`s differ) but not trailing spaces; the last line may be cut short.
 */
function linesBeforeRepeats(lines: readonly string[]): number | undefined {
  const count = lines.length;
  const same = (i: number, j: number) => lines[i]!.trimEnd() === lines[j]!.trimEnd();
  const continues = (i: number, j: number) => (i === count - 1 ? lines[j]!.trimEnd().startsWith(lines[i]!.trimEnd()) : same(i, j));
  for (let cycle = 1; cycle <= MAX_CYCLE_LINES && 2 * cycle <= count; cycle++) {
    let i = count - 1;
    while (i - cycle >= 0 && continues(i, i - cycle)) i--;
    const start = i + 1 - cycle;
    const lastCutShort = start <= count - 1 - cycle && !same(count - 1, count - 1 - cycle);
    const repeats = Math.floor((count - start - (lastCutShort ? 1 : 0)) / cycle);
    const needed = cycle <= 2 ? 3 : 2;
    if (repeats >= needed && lines.slice(start, start + cycle).some(isSubstantial)) return start + cycle;
  }
  return undefined;
}

/** Start of a run of one short unit repeated up to the end of `line` (trailing spaces aside), if any. */
function repeatedUnitRunStart(line: string): number | undefined {
  const end = line.trimEnd().length;
  let earliest: number | undefined;
  for (let unit = 1; unit <= MAX_UNIT_CHARS; unit++) {
    let j = end - 1;
    while (j - unit >= 0 && line[j] === line[j - unit]) j--;
    const start = j + 1 - unit;
    if (start < 0) continue;
    const repeats = (end - start) / unit;
    const text = line.slice(start, start + unit);
    const enough = unit === 1 ? repeats >= 10 : repeats >= 5;
    if (enough && /\p{L}/u.test(text) && (earliest === undefined || start < earliest)) earliest = start;
  }
  return earliest;
}

/**
 * Tiny models loop. Cuts a cycle of lines repeating to the end after its first occurrence, and a
 * line ending in one short unit repeated over and over ("NaNaNaNaNa") at the start of that run,
 * with everything after it. The completion's first line is compared as the full cursor line.
 */
export function removeRepetitiveLines(completion: string, ctx: CompletionContext): string {
  const linePrefix = currentLinePrefix(ctx);
  const lines = completion.split('\n');
  const fullLines = [linePrefix + lines[0], ...lines.slice(1)];
  const keep = linesBeforeRepeats(fullLines);
  const kept = keep === undefined ? lines : lines.slice(0, keep);

  let offset = 0;
  for (let index = 0; index < kept.length; index++) {
    const line = kept[index]!;
    const runStart = repeatedUnitRunStart(index === 0 ? linePrefix + line : line);
    if (runStart !== undefined) {
      // A run that began before the cursor makes the whole first line repetition.
      const startInLine = index === 0 ? Math.max(0, runStart - linePrefix.length) : runStart;
      return completion.slice(0, offset + startInLine).trimEnd();
    }
    offset += line.length + 1;
  }
  return kept.join('\n');
}
