import type { ContextChunk, ExtraContext } from '../shared/completion';
import type { Token } from '../shared/decoding';
import { NO_CONTEXT, type PromptContext } from './fimPrompt';
import type { PromptTemplate } from './templates';

/** Line comment starts by language, for templates without file sections (Continue does the same). */
const LINE_COMMENT: Record<string, string> = {
  python: '#',
  shellscript: '#',
  ruby: '#',
  perl: '#',
  r: '#',
  yaml: '#',
  toml: '#',
  dockerfile: '#',
  makefile: '#',
  powershell: '#',
  elixir: '#',
  julia: '#',
  nim: '#',
  lua: '--',
  sql: '--',
  haskell: '--',
  ada: '--',
  clojure: ';;',
  lisp: ';;',
  scheme: ';;',
  erlang: '%',
  matlab: '%',
  latex: '%',
  vb: "'",
};

export function lineCommentFor(languageId: string | undefined): string {
  return (languageId && LINE_COMMENT[languageId]) ?? '//';
}

/**
 * The extra context as prompt tokens within `maxTokens`: repo-level file sections where the
 * template has them (`<|repo_name|>repo\n<|file_sep|>path\ntext\n...<|file_sep|>current\n` before
 * the FIM prefix token, the layout Qwen2.5-Coder and StarCoder2 were trained on), else the chunks as
 * line comments at the start of the prefix (`// Path: a.ts` then each line commented): code a model
 * reads as code. Newest chunks first when not all fit; rendered oldest first, so a new chunk
 * appends and leaves the cached KV of the others valid.
 */
export function buildPromptContext(
  template: PromptTemplate,
  tokenize: (text: string) => Token[],
  context: Omit<ExtraContext, 'maxTokens'> | undefined,
  maxTokens: number,
  languageId?: string,
): PromptContext {
  const files = context?.files ?? [];
  if (!files.length || maxTokens <= 0) return NO_CONTEXT;
  const { repoName, fileSep } = template.ids;
  if (template.repoLevel && repoName !== undefined && fileSep !== undefined) {
    const head = [repoName, ...tokenize(`${context?.repoName ?? 'repo'}\n`)];
    const current = context?.path ? [fileSep, ...tokenize(`${context.path}\n`)] : [];
    const section = (c: ContextChunk) => [fileSep, ...tokenize(`${c.path}\n${c.text}${c.text.endsWith('\n') ? '' : '\n'}`)];
    const chosen = fitChunks(files, maxTokens - head.length - current.length, section, context?.path);
    if (!chosen.length) return NO_CONTEXT;
    return { beforePrompt: [...head, ...chosen.flat(), ...current], afterPrefixToken: [], files: chosen.length };
  }
  const comment = lineCommentFor(languageId);
  const block = (c: ContextChunk) =>
    tokenize(
      `${comment} Path: ${c.path}\n${c.text
        .split('\n')
        .map((line) => (line ? `${comment} ${line}` : comment))
        .join('\n')}\n`,
    );
  const chosen = fitChunks(files, maxTokens, block, context?.path);
  return { beforePrompt: [], afterPrefixToken: chosen.flat(), files: chosen.length };
}

/** Below this many tokens left, a chunk is not cut to fit: a few lines of it say little. */
const MIN_PARTIAL_TOKENS = 48;

/**
 * Rendered chunks within `budget` tokens: the newest first, each whole when it fits; the first that
 * does not is cut to its first lines that do (a 64-line chunk is ~600 tokens, more than a small
 * model's whole budget), and no older chunk follows. Returned oldest first (see ExtraContextRing).
 */
function fitChunks(files: readonly ContextChunk[], budget: number, render: (c: ContextChunk) => Token[], excludePath?: string): Token[][] {
  const chosen: Token[][] = [];
  let left = budget;
  for (let i = files.length - 1; i >= 0 && left > 0; i--) {
    const c = files[i];
    if (c.path === excludePath) continue;
    const whole = render(c);
    if (whole.length <= left) {
      chosen.unshift(whole);
      left -= whole.length;
      continue;
    }
    if (left >= MIN_PARTIAL_TOKENS) {
      const lines = c.text.split('\n');
      // Largest number of leading lines that fits (the cost grows with the lines).
      let lo = 0,
        hi = lines.length - 1,
        best: Token[] | null = null;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        const part = render({ path: c.path, text: lines.slice(0, mid).join('\n') });
        if (part.length <= left) {
          lo = mid;
          best = part;
        } else hi = mid - 1;
      }
      if (best && lo > 0) chosen.unshift(best);
    }
    break;
  }
  return chosen;
}
