import { currentLinePrefix, DEFAULT_TAB_SIZE, indentationWidth, isBlank, type CompletionContext } from './context';

/**
 * A declaration at the start of a statement (a line's start or after `;`): `const x`, `let x`,
 * `var x`, `class x`, optionally exported. Declarations inside parentheses (`for (let i = 0; ...)`)
 * are left out: two loops may each declare their `i`. Functions are left out too: TypeScript's
 * overload signatures and Python's `@overload` / property setters declare one name several times.
 */
const DECLARATION = /(^|;)(\s*)(?:export\s+)?(?:const|let|var|class)\s+([\p{L}_$][\p{L}\p{N}_$]*)/gu;

/**
 * A completion that declares a name it has already declared in the same block is looping (`const
 * total = values[0];` / `const total = values[1];`, `var sum = list[i]; var sum = list[i];`): it
 * ends before the second declaration. The cursor's line counts as the completion's first line
 * (what the user typed before the cursor declares too); a block is the run of lines at or deeper
 * than the declaration's indentation, so `const x` in an `if` and again in its `else` is fine.
 */
export function stopAtRedeclaration(completion: string, ctx: CompletionContext): string {
  const tabSize = ctx.tabSize ?? DEFAULT_TAB_SIZE;
  const linePrefix = currentLinePrefix(ctx);
  /** Names declared so far, each with the indentation of the block it belongs to. */
  const declared = new Map<string, number>();
  let lineStart = 0;
  for (const [index, completionLine] of completion.split('\n').entries()) {
    const line = index === 0 ? linePrefix + completionLine : completionLine;
    const shift = index === 0 ? linePrefix.length : 0;
    if (!isBlank(line)) {
      const indent = indentationWidth(line, tabSize);
      for (const [name, blockIndent] of declared) if (blockIndent > indent) declared.delete(name);
      for (const match of line.matchAll(DECLARATION)) {
        const name = match[3]!;
        if (declared.get(name) === indent) {
          const statementStart = match.index! + match[1]!.length - shift;
          // Never cut into what the user typed: a redeclaration there is theirs.
          if (statementStart >= 0) return completion.slice(0, lineStart + statementStart).trimEnd();
        }
        declared.set(name, indent);
      }
    }
    lineStart += completionLine.length + 1;
  }
  return completion;
}
