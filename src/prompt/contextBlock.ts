import type { ExtraContext, Token } from '../engine/types';
import { chunksWithin, type ContextChunk } from '../context/extraContextRing';
import type { PromptContext } from './fimPrompt';
import type { PromptTemplate } from './templates';

/** Line comment starts by language, for templates without file sections (Continue does the same). */
const LINE_COMMENT: Record<string, string> = {
  python: '#', shellscript: '#', ruby: '#', perl: '#', r: '#', yaml: '#', toml: '#', dockerfile: '#', makefile: '#', powershell: '#', elixir: '#', julia: '#', nim: '#',
  lua: '--', sql: '--', haskell: '--', ada: '--',
  clojure: ';;', lisp: ';;', scheme: ';;',
  erlang: '%', matlab: '%', latex: '%',
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
export function buildPromptContext(template: PromptTemplate, tokenize: (text: string) => Token[], context: Omit<ExtraContext, 'maxTokens'> | undefined, maxTokens: number, languageId?: string): PromptContext {
  const files = context?.files ?? [];
  if (!files.length || maxTokens <= 0) return { beforePrompt: [], afterPrefixToken: [] };
  const { repoName, fileSep } = template.ids;
  if (template.repoLevel && repoName !== undefined && fileSep !== undefined) {
    const head = [repoName, ...tokenize(`${context?.repoName ?? 'repo'}\n`)];
    const current = context?.path ? [fileSep, ...tokenize(`${context.path}\n`)] : [];
    const section = (c: ContextChunk) => [fileSep, ...tokenize(`${c.path}\n${c.text}${c.text.endsWith('\n') ? '' : '\n'}`)];
    const sections = new Map<ContextChunk, Token[]>();
    const cost = (c: ContextChunk) => {
      if (!sections.has(c)) sections.set(c, section(c));
      return sections.get(c)!.length;
    };
    const chosen = chunksWithin(files, maxTokens - head.length - current.length, cost, context?.path);
    if (!chosen.length) return { beforePrompt: [], afterPrefixToken: [] };
    return { beforePrompt: [...head, ...chosen.flatMap((c) => sections.get(c)!), ...current], afterPrefixToken: [] };
  }
  const comment = lineCommentFor(languageId);
  const block = (c: ContextChunk) => tokenize(`${comment} Path: ${c.path}\n${c.text.split('\n').map((line) => (line ? `${comment} ${line}` : comment)).join('\n')}\n`);
  const blocks = new Map<ContextChunk, Token[]>();
  const cost = (c: ContextChunk) => {
    if (!blocks.has(c)) blocks.set(c, block(c));
    return blocks.get(c)!.length;
  };
  const chosen = chunksWithin(files, maxTokens, cost, context?.path);
  return { beforePrompt: [], afterPrefixToken: chosen.flatMap((c) => blocks.get(c)!) };
}
