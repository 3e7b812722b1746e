// A branch whose condition an earlier branch of its chain already tested can never run
// (`if (v === undefined) {…} else if (v === undefined) {…}`), and an if that opens the body of an if
// of the same condition tests what is known: both are how a small model loops through a chain of
// branches. removeRepetitiveLines cuts the completion before such a line.

/** `if`, `else if`, `elif`, `elsif` at a line's start (after a closing brace for an else), and what follows. */
const BRANCH = /^(\s*)(\}\s*)?(else\s+if|elif|elsif|if)\b\s*(.*)$/;
/** A line that closes a block and lets an else follow (C-like braces, Ruby / Lua `end` does not). */
const CLOSER = /^\}\s*;?$/;
/** Lines of the prefix looked at for the start of the cursor's chain. */
const CONTEXT_LINES = 60;

/** The tested condition, whitespace removed: a balanced parenthesis at the start (C-like), else up to a trailing `{`, `:` or `then`. */
function conditionOf(rest: string): string | undefined {
  let condition: string;
  if (rest.startsWith('(')) {
    let depth = 0;
    let end = -1;
    for (let i = 0; i < rest.length && end < 0; i++) {
      if (rest[i] === '(') depth++;
      else if (rest[i] === ')' && --depth === 0) end = i;
    }
    if (end < 0) return undefined;
    condition = rest.slice(0, end + 1);
  } else {
    const match = /^(.*?)\s*(?:\{|:|\bthen)\s*$/.exec(rest);
    if (!match) return undefined;
    condition = match[1]!;
  }
  const bare = condition.replace(/\s+/g, '');
  return bare.length > 0 && bare !== '()' ? bare : undefined;
}

interface Branch {
  indent: number;
  /** Starts a chain (`if`), or continues one (`else if` and the like). */
  kind: 'if' | 'else';
  condition: string;
  /** Characters of the line up to and with its closing brace, when it starts with one. */
  closerEnd: number;
}

function branchOf(line: string): Branch | undefined {
  const match = BRANCH.exec(line);
  if (!match) return undefined;
  const condition = conditionOf(match[4]!);
  if (condition === undefined) return undefined;
  const [, indent, brace, keyword] = match;
  if (brace && keyword === 'if') return undefined;
  return { indent: indent!.length, kind: keyword === 'if' ? 'if' : 'else', condition, closerEnd: brace ? indent!.length + 1 : 0 };
}

/** Where the completion is cut: before line `line` of `lines`, keeping its first `keepChars` characters (the brace that closes the branch before it). */
export interface ConditionCut {
  line: number;
  keepChars: number;
}

/**
 * The first line of `lines` (the completion, its first line as the whole cursor line) that repeats a
 * condition: an else-branch of a condition its chain tested already, or an if opening the body of an
 * if of the same condition. `before`: the document's lines before the cursor line, where the chain may
 * have begun. Undefined when none does.
 */
export function repeatedConditionCut(lines: readonly string[], before: readonly string[] = []): ConditionCut | undefined {
  const context = before.slice(-CONTEXT_LINES);
  const all = [...context, ...lines];
  // The open chain at each indentation: the conditions its branches tested.
  const chains = new Map<number, Set<string>>();
  let previous: { indent: number; branch: Branch | undefined } | undefined;
  for (let i = 0; i < all.length; i++) {
    const line = all[i]!;
    const code = line.trim();
    if (code === '') continue;
    const indent = line.length - line.trimStart().length;
    const branch = branchOf(line);
    const inCompletion = i >= context.length;
    // A line at an indentation ends the chains nested deeper, and the chain at its own level unless it is a closing brace or continues it.
    for (const level of [...chains.keys()]) {
      if (level > indent || (level === indent && !CLOSER.test(code) && branch?.kind !== 'else')) chains.delete(level);
    }
    if (branch?.kind === 'else') {
      const chain = chains.get(indent);
      if (chain?.has(branch.condition) && inCompletion) return { line: i - context.length, keepChars: branch.closerEnd };
      if (chain) chain.add(branch.condition);
      else chains.set(indent, new Set([branch.condition]));
    } else if (branch) {
      // The first line of the body of an if of the same condition.
      const opens = previous?.branch && previous.branch.condition === branch.condition && indent > previous.indent;
      if (opens && inCompletion) return { line: i - context.length, keepChars: 0 };
      chains.set(indent, new Set([branch.condition]));
    }
    previous = { indent, branch };
  }
  return undefined;
}
