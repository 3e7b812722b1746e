import { currentLinePrefix, type CompletionContext } from './context';
import { repeatedConditionCut } from './repeatedConditions';

/** Longest cycle of lines looked for. */
const MAX_CYCLE_LINES = 8;
/** Up to this length a repeated unit is babble ("Na" in "NaNaNaNa"): cut with the whole run. */
const MAX_BABBLE_UNIT_CHARS = 4;
/** Longest repeated unit looked for at a line's end (a statement repeated on one line fits). */
const MAX_UNIT_CHARS = 160;
/** A run of one digit this long at a line's end is a loop, not a constant (64-bit masks have 16). */
const MAX_DIGIT_RUN = 40;
/** Lines in a run of one shape (one token changing along a trivial sequence) before it is a loop. */
const MIN_SHAPE_RUN_LINES = 3;
/** Blocks of one shape (each line with at most one token changing) before they are a loop. */
const MIN_SHAPE_RUN_BLOCKS = 3;

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

/** Lines the same but for their indentation before they are a loop nesting deeper. */
const MIN_NESTED_RUN_LINES = 3;
/** Blocks of two or more lines, each a copy of the one before indented deeper, before they are a loop. */
const MIN_NESTED_RUN_BLOCKS = 2;

/**
 * Lines [0, keep) once a cycle of lines repeating up to the end, each time indented deeper than the
 * last (`const sum = values.sort((a, b) => {` opening a scope inside itself again and again, or
 * `if (c === 0) {` / `c = values[sum];` nesting a level deeper each time), is cut to its first
 * occurrence. linesBeforeRepeats compares lines with their indentation and so misses this loop. One
 * line needs MIN_NESTED_RUN_LINES lines, a block MIN_NESTED_RUN_BLOCKS blocks; the last line may be
 * cut short.
 */
function linesBeforeNestedRepeats(lines: readonly string[]): number | undefined {
  const indent = (i: number) => /^\s*/.exec(lines[i]!)![0].length;
  const code = (i: number) => lines[i]!.trim();
  // Blank lines after the loop do not end it.
  let count = lines.length;
  while (count > 0 && code(count - 1) === '') count--;
  const nests = (i: number, j: number) => code(i) === code(j) && indent(i) > indent(j);
  let earliest: number | undefined;
  for (let cycle = 1; cycle <= MAX_CYCLE_LINES && 2 * cycle <= count; cycle++) {
    const last = count - 1;
    // The last line, cut short by the token budget: its text so far begins the line it repeats.
    const lastCutShort = last - cycle >= 0 && code(last) !== code(last - cycle) && code(last).length > 0 && code(last - cycle).startsWith(code(last)) && indent(last) > indent(last - cycle);
    const end = lastCutShort ? last - 1 : last;
    let i = end;
    while (i - cycle >= 0 && nests(i, i - cycle)) i--;
    const start = i + 1 - cycle;
    if (start < 0) continue;
    const run = end - start + 1;
    const enough = cycle === 1 ? run >= MIN_NESTED_RUN_LINES : Math.floor(run / cycle) >= MIN_NESTED_RUN_BLOCKS;
    if (enough && lines.slice(start, start + cycle).some(isSubstantial)) earliest = Math.min(earliest ?? Number.POSITIVE_INFINITY, start + cycle);
  }
  return earliest;
}

/** A cut inside a line: where the kept text ends. */
type LineCut = { keepUntil: number };

/**
 * Where a run repeated up to the end of `line` (trailing spaces aside) is cut, if there is one:
 * - a unit of 1-4 characters with a letter, repeated (1 char 10+ times, 2-4 chars 3+ times), is
 *   babble: cut at the start of the run ("'Batman NaNaNa" keeps "'Batman");
 * - a longer unit with a letter repeated 3+ times is a clause or statement looping
 *   ("var sum = list[i]; var sum = list[i]; ..."): its first occurrence is kept, as for lines;
 * - one digit repeated MAX_DIGIT_RUN+ times: cut at the start of the run.
 */
function lineEndRunCut(line: string): LineCut | undefined {
  const end = line.trimEnd().length;
  let earliest: number | undefined;
  const consider = (keepUntil: number) => {
    if (earliest === undefined || keepUntil < earliest) earliest = keepUntil;
  };
  for (let unit = 1; unit <= MAX_UNIT_CHARS && 3 * unit <= end; unit++) {
    let j = end - 1;
    while (j - unit >= 0 && line[j] === line[j - unit]) j--;
    const start = j + 1 - unit;
    if (start < 0) continue;
    const repeats = (end - start) / unit;
    const text = line.slice(start, start + unit);
    if (unit === 1 && /\d/.test(text) && repeats >= MAX_DIGIT_RUN) consider(start);
    if (!/\p{L}/u.test(text)) continue;
    if (unit === 1 ? repeats >= 10 : repeats >= 3) consider(unit <= MAX_BABBLE_UNIT_CHARS ? start : start + unit);
  }
  return earliest === undefined ? undefined : { keepUntil: earliest };
}

/** Words, numbers, string literals (possibly cut short) and single punctuation characters. */
const TOKEN = /[\p{L}_$][\p{L}\p{N}_$]*|\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`(?:[^`\\]|\\.)*`?|\S/gu;

type ShapedLine = { indent: string; tokens: string[] };

function shapeOf(line: string): ShapedLine {
  return { indent: /^\s*/.exec(line)![0], tokens: line.match(TOKEN) ?? [] };
}

/** Token positions where two lines of the same indentation and token count differ; undefined when they are not of one shape. */
function differingTokens(a: ShapedLine, b: ShapedLine): number[] | undefined {
  if (a.indent !== b.indent || a.tokens.length !== b.tokens.length) return undefined;
  const positions: number[] = [];
  for (let t = 0; t < a.tokens.length; t++) if (a.tokens[t] !== b.tokens[t]) positions.push(t);
  return positions;
}

/** The last line may be cut short by the token limit: its tokens so far fit the line it repeats. */
function cutShortOf(last: ShapedLine, full: ShapedLine): boolean {
  if (last.indent !== full.indent || last.tokens.length === 0 || last.tokens.length > full.tokens.length) return false;
  let differences = 0;
  for (let t = 0; t < last.tokens.length; t++) {
    const same = t === last.tokens.length - 1 ? full.tokens[t]!.startsWith(last.tokens[t]!) : full.tokens[t] === last.tokens[t];
    if (!same) differences++;
  }
  return differences <= 1;
}

/** A number to sequence: an integer, a single letter, or a text ending in an integer (`item3`, `"col3"`). */
function sequenceKey(token: string): { stem: string; value: number } | undefined {
  const bare = token.replace(/^["'`]|["'`]$/g, '');
  if (/^\p{L}$/u.test(bare)) return { stem: '', value: bare.codePointAt(0)! };
  const match = /^(.*?)(\d+)$/.exec(bare);
  return match ? { stem: match[1]!, value: Number(match[2]) } : undefined;
}

/**
 * Values that a loop counts through: 0,1,2 / b,c,d / item1,item2: every step is 0 or the same
 * non-zero step, with at least two real steps. Names like red, green, blue are not a sequence:
 * that is an enum or a list of fields, written on purpose.
 */
function isTrivialSequence(values: readonly string[]): boolean {
  const keys = values.map(sequenceKey);
  if (keys.some((k) => k === undefined || k.stem !== keys[0]!.stem)) return false;
  let step: number | undefined;
  let steps = 0;
  for (let i = 1; i < keys.length; i++) {
    const delta = keys[i]!.value - keys[i - 1]!.value;
    if (delta === 0) continue;
    if (step !== undefined && delta !== step) return false;
    step = delta;
    steps++;
  }
  return steps >= 2;
}

/**
 * Lines [0, keep) once a run of lines of one shape repeating up to the end is cut to its first
 * block: a cycle of `cycle` lines where each line differs from the one a cycle before in one token
 * at most, that token counting along a trivial sequence (`const b = 1;` / `const c = 1;` /
 * `const d = 1;`, `rows[0]` / `rows[1]` / `rows[2]`). One line needs MIN_SHAPE_RUN_LINES lines, a
 * block MIN_SHAPE_RUN_BLOCKS blocks; the last line may be cut short. Identical cycles are
 * linesBeforeRepeats's; distinct names (enums, fields, imports) and lines differing in two tokens
 * (`{ id: 1, name: "a" },`) are left alone.
 */
function linesBeforeShapeRepeats(lines: readonly string[]): number | undefined {
  const shapes = lines.map(shapeOf);
  const count = lines.length;
  for (let cycle = 1; cycle <= MAX_CYCLE_LINES && 2 * cycle < count; cycle++) {
    const lastCutShort = differingTokens(shapes[count - 1]!, shapes[count - 1 - cycle]!) === undefined && cutShortOf(shapes[count - 1]!, shapes[count - 1 - cycle]!);
    const end = lastCutShort ? count - 1 : count;
    let i = end - 1;
    while (i - cycle >= 0 && (differingTokens(shapes[i]!, shapes[i - cycle]!)?.length ?? 2) <= 1) i--;
    const start = i + 1 - cycle;
    if (start < 0) continue;
    const blocks = Math.floor((end - start) / cycle);
    if (blocks < (cycle === 1 ? MIN_SHAPE_RUN_LINES : MIN_SHAPE_RUN_BLOCKS)) continue;
    let changes = false;
    let counting = true;
    for (let offset = 0; offset < cycle && counting; offset++) {
      const rows = Array.from({ length: blocks }, (_, b) => shapes[start + offset + b * cycle]!);
      const positions = new Set(rows.slice(1).flatMap((row, b) => differingTokens(rows[b]!, row)!));
      if (positions.size > 1) counting = false;
      else if (positions.size === 1) {
        changes = true;
        const [position] = positions;
        counting = isTrivialSequence(rows.map((row) => row.tokens[position!]!));
      }
    }
    if (changes && counting && lines.slice(start, start + cycle).some(isSubstantial)) return start + cycle;
  }
  return undefined;
}

/**
 * Tiny models loop. Cuts a cycle of lines repeating to the end after its first occurrence, the same
 * for lines of one shape counting through a trivial sequence and for lines nesting deeper each time,
 * before a branch that repeats a condition (repeatedConditions.ts), and a line ending in one unit
 * repeated over and over (lineEndRunCut), with everything after it. The completion's first line
 * is compared as the full cursor line.
 */
export function removeRepetitiveLines(completion: string, ctx: CompletionContext): string {
  const linePrefix = currentLinePrefix(ctx);
  const lines = completion.split('\n');
  const fullLines = [linePrefix + lines[0], ...lines.slice(1)];
  const condition = repeatedConditionCut(fullLines, ctx.prefix.split('\n').slice(0, -1));
  const keep = Math.min(
    linesBeforeRepeats(fullLines) ?? lines.length,
    linesBeforeShapeRepeats(fullLines) ?? lines.length,
    linesBeforeNestedRepeats(fullLines) ?? lines.length,
    condition?.line ?? lines.length,
  );
  const kept = lines.slice(0, keep);
  // A repeated condition's line keeps the brace that closes the branch before it.
  if (condition && condition.line === keep && condition.keepChars > 0) {
    const closer = keep === 0 ? lines[0]!.slice(0, Math.max(0, condition.keepChars - linePrefix.length)) : lines[keep]!.slice(0, condition.keepChars);
    if (closer.trim()) kept.push(closer);
  }

  let offset = 0;
  for (let index = 0; index < kept.length; index++) {
    const line = kept[index]!;
    const cut = lineEndRunCut(index === 0 ? linePrefix + line : line);
    if (cut !== undefined) {
      // A run that began before the cursor makes the whole first line repetition.
      const keepInLine = index === 0 ? Math.max(0, cut.keepUntil - linePrefix.length) : cut.keepUntil;
      return completion.slice(0, offset + keepInLine).trimEnd();
    }
    offset += line.length + 1;
  }
  return kept.join('\n');
}
