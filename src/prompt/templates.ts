import type { ContextChunk } from '../shared/completion';
import type { Token } from '../shared/decoding';

/**
 * Fill-in-the-middle prompt templates per model family, chosen from a model's vocabulary (and its
 * GGUF FIM metadata). A template names the family's special tokens, the order of the parts, the
 * tokens that end a completion, and whether the family has repo-level file sections. The engine's
 * token-level prompts (prompt/fimPrompt.ts) and the text prompts sent to remote servers
 * (renderTextPrompt) come from the same template.
 *
 * Orders:
 * - `psm`: prefix, suffix, middle: `<pre>prefix<suf>suffix<mid>` (then the model writes the middle).
 * - `suffix-first`: Codestral's `[SUFFIX]suffix[PREFIX]prefix`: no middle token, the model continues
 *   the prefix. Typing only appends to such a prompt, so it needs no line anchoring.
 * - `prefix-only`: no FIM tokens: the text before the cursor alone.
 */
export type TemplateFamily = 'qwen2.5-coder' | 'starcoder2' | 'deepseek-coder' | 'codellama' | 'codestral' | 'generic-fim' | 'prefix-only';
export type TemplateOrder = 'psm' | 'suffix-first' | 'prefix-only';

export interface TemplateSpec {
  family: TemplateFamily;
  label: string;
  order: TemplateOrder;
  /**
   * Special token texts as a vocabulary spells them (alternatives: the first present counts); a
   * family is recognised when `prefix`, `suffix` (and `middle` for psm) are all in the vocabulary.
   */
  prefix?: string | readonly string[];
  suffix?: string | readonly string[];
  middle?: string | readonly string[];
  /** The same tokens as text for servers (default: the first spelling above). */
  text?: { prefix: string; suffix: string; middle?: string };
  /** Repo-level prompts: `<repo_name>name` then `<file_sep>path\ncontent` per file (Qwen2.5-Coder, StarCoder2). */
  repoName?: string;
  fileSep?: string;
  /** Token texts that end a completion (besides the model's end-of-generation tokens). */
  stop: readonly string[];
  /**
   * Stop tokens that llama.cpp neither ends a generation at (they are not in its end-of-generation
   * list) nor hides (they are not control tokens), as llama-server writes them in its text stream: a
   * completion read from a server ends where one appears. CodeLlama's ▁<EOT> is an ordinary piece,
   * written " <EOT>"; DeepSeek-Coder's <|EOT|> a user-defined token, written as it is.
   */
  writtenStops?: readonly string[];
  /**
   * Text-prompt spacing (CodeLlama: `<PRE> {prefix} <SUF>{suffix} <MID>`, Meta's reference). Token
   * prompts need none: llama.cpp's SentencePiece tokenizer adds the space before the prefix itself.
   */
  textSpacing?: { afterPrefixToken: string; beforeSuffixToken: string; beforeMiddleToken: string };
  /**
   * The suffix and the middle are tokenized without SentencePiece's word-start space, as the family
   * was trained (CodeLlama: Meta's encode_infilling, `sp.encode("☺" + s)[2:]`). llama.cpp puts that
   * space before every text it tokenizes, so ") {" after <SUF> would become "▁)" and a suffix or middle
   * that starts with a newline would begin with a lone "▁" token the document does not have.
   */
  infillingWithoutSpace?: boolean;
}

/** Most specific first: the first whose tokens are all in the vocabulary is chosen. */
export const TEMPLATE_SPECS: readonly TemplateSpec[] = [
  {
    family: 'qwen2.5-coder',
    label: 'Qwen2.5-Coder (repo-level)',
    order: 'psm',
    prefix: '<|fim_prefix|>',
    suffix: '<|fim_suffix|>',
    middle: '<|fim_middle|>',
    repoName: '<|repo_name|>',
    fileSep: '<|file_sep|>',
    stop: ['<|endoftext|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>', '<|im_end|>', '<|fim_prefix|>', '<|fim_suffix|>', '<|fim_middle|>'],
  },
  {
    family: 'starcoder2',
    label: 'StarCoder2 (repo-level)',
    order: 'psm',
    prefix: '<fim_prefix>',
    suffix: '<fim_suffix>',
    middle: '<fim_middle>',
    repoName: '<repo_name>',
    fileSep: '<file_sep>',
    stop: ['<|endoftext|>', '<file_sep>', '<fim_pad>', '<fim_prefix>', '<fim_suffix>', '<fim_middle>'],
  },
  {
    family: 'deepseek-coder',
    label: 'DeepSeek-Coder',
    order: 'psm',
    prefix: '<｜fim▁begin｜>',
    suffix: '<｜fim▁hole｜>',
    middle: '<｜fim▁end｜>',
    stop: ['<|EOT|>', '<｜end▁of▁sentence｜>', '<｜fim▁begin｜>', '<｜fim▁hole｜>', '<｜fim▁end｜>'],
    writtenStops: ['<|EOT|>'],
  },
  {
    family: 'codellama',
    label: 'CodeLlama',
    order: 'psm',
    // SentencePiece GGUFs spell them with the word-start mark, some conversions without.
    prefix: ['▁<PRE>', '<PRE>'],
    suffix: ['▁<SUF>', '<SUF>'],
    middle: ['▁<MID>', '<MID>'],
    text: { prefix: '<PRE>', suffix: '<SUF>', middle: '<MID>' },
    stop: ['▁<EOT>', '<EOT>', '</s>'],
    writtenStops: [' <EOT>'],
    textSpacing: { afterPrefixToken: ' ', beforeSuffixToken: ' ', beforeMiddleToken: ' ' },
    infillingWithoutSpace: true,
  },
  {
    family: 'codestral',
    label: 'Codestral (suffix first)',
    order: 'suffix-first',
    prefix: '[PREFIX]',
    suffix: '[SUFFIX]',
    stop: ['</s>', '[PREFIX]', '[SUFFIX]', '[MIDDLE]'],
  },
];

/** Any model with FIM token ids in its metadata (or the usual texts) but no known family. */
const GENERIC_FIM: TemplateSpec = {
  family: 'generic-fim',
  label: "fill-in-the-middle (the model's FIM tokens)",
  order: 'psm',
  stop: ['<|endoftext|>', '<|fim_pad|>', '<|file_sep|>', '<file_sep>', '<|EOT|>', '<EOT>', '▁<EOT>'],
};

const PREFIX_ONLY: TemplateSpec = { family: 'prefix-only', label: 'prefix only (no FIM tokens)', order: 'prefix-only', stop: [] };

/** A template with its tokens resolved in one model's vocabulary. */
export interface PromptTemplate {
  spec: TemplateSpec;
  family: TemplateFamily;
  order: TemplateOrder;
  /** Ids of the special tokens (prefix and suffix always for psm/suffix-first; middle for psm). */
  ids: { prefix?: Token; suffix?: Token; middle?: Token; repoName?: Token; fileSep?: Token };
  /** Ids of the stop texts present in the vocabulary. */
  stopIds: ReadonlySet<Token>;
  repoLevel: boolean;
}

export interface TemplateVocabulary {
  /** Token texts by id (GGUF tokenizer.ggml.tokens). */
  tokens: readonly string[];
  /** FIM ids from the GGUF metadata (llama.cpp's own detection), when any. */
  fim: { prefix: Token; suffix: Token; middle: Token } | null;
}

/**
 * The template for a model: the first known family whose special tokens are all in the vocabulary;
 * else the metadata's FIM ids as a generic psm template; else prefix-only.
 */
export function chooseTemplate(vocab: TemplateVocabulary): PromptTemplate {
  const ids = new Map<string, Token>();
  vocab.tokens.forEach((text, id) => {
    if (!ids.has(text)) ids.set(text, id);
  });
  const id = (text: string | readonly string[] | undefined) => {
    for (const t of text === undefined ? [] : typeof text === 'string' ? [text] : text) {
      const found = ids.get(t);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  for (const spec of TEMPLATE_SPECS) {
    const prefix = id(spec.prefix),
      suffix = id(spec.suffix),
      middle = id(spec.middle);
    if (prefix === undefined || suffix === undefined || (spec.order === 'psm' && middle === undefined)) continue;
    // A family with file sections always has their tokens: without them it is another model that
    // borrowed the FIM tokens (the embedded pairs use Qwen's FIM texts alone): generic.
    if ((spec.repoName && !ids.has(spec.repoName)) || (spec.fileSep && !ids.has(spec.fileSep))) continue;
    // A family's metadata ids, when present, must agree with its texts (else: another model's tokens reused).
    if (vocab.fim && spec.order === 'psm' && (vocab.fim.prefix !== prefix || vocab.fim.suffix !== suffix || vocab.fim.middle !== middle)) continue;
    const repoName = spec.repoName === undefined ? undefined : ids.get(spec.repoName);
    const fileSep = spec.fileSep === undefined ? undefined : ids.get(spec.fileSep);
    return resolved(spec, { prefix, suffix, middle: spec.order === 'psm' ? middle : undefined, repoName, fileSep }, ids);
  }
  if (vocab.fim) return resolved(GENERIC_FIM, { ...vocab.fim }, ids);
  return resolved(PREFIX_ONLY, {}, ids);
}

function resolved(spec: TemplateSpec, found: PromptTemplate['ids'], ids: Map<string, Token>): PromptTemplate {
  const tokenIds = Object.fromEntries(Object.entries(found).filter(([, v]) => v !== undefined)) as PromptTemplate['ids'];
  const stopIds = new Set<Token>();
  for (const text of spec.stop) {
    const t = ids.get(text);
    if (t !== undefined) stopIds.add(t);
  }
  // The template's own structure tokens never start a completion's text: a model that writes one has
  // left the middle.
  for (const t of [tokenIds.prefix, tokenIds.suffix, tokenIds.middle, tokenIds.repoName, tokenIds.fileSep]) if (t !== undefined) stopIds.add(t);
  return { spec, family: spec.family, order: spec.order, ids: tokenIds, stopIds, repoLevel: tokenIds.repoName !== undefined && tokenIds.fileSep !== undefined };
}

export interface TextPromptParts {
  prefix: string;
  suffix: string;
  /** Repo name for repo-level templates (e.g. the workspace folder's name). */
  repoName?: string;
  /** Path of the file being completed (repo-level templates name it). */
  path?: string;
  /** Other files, placed first. */
  files?: readonly ContextChunk[];
  /**
   * Text of the middle already written (psm only): the end of the text before the cursor when the
   * prompt is line-anchored (prompt/fimPrompt.ts), after the middle token; `prefix` is then the rest.
   */
  middle?: string;
}

/**
 * The prompt as text, for servers that tokenize it themselves (OpenAI-compatible /v1/completions
 * without `suffix`, Ollama with `raw`). Repo-level templates get `<repo_name>name\n<file_sep>path\n
 * text\n...<file_sep>path\n<pre>...`; other templates get the extra files as a comment-free
 * preamble of `path\ntext` blocks before the FIM prefix token (a neutral layout no family was
 * trained against, kept short by the caller's budget).
 */
export function renderTextPrompt(spec: TemplateSpec, parts: TextPromptParts): string {
  const files = parts.files ?? [];
  let head = '';
  if (spec.repoName && spec.fileSep && (files.length || parts.path)) {
    head = `${spec.repoName}${parts.repoName ?? 'repo'}\n`;
    for (const f of files) head += `${spec.fileSep}${f.path}\n${f.text}${f.text.endsWith('\n') ? '' : '\n'}`;
    if (parts.path) head += `${spec.fileSep}${parts.path}\n`;
  } else {
    for (const f of files) head += `${f.path}\n${f.text}${f.text.endsWith('\n') ? '' : '\n'}\n`;
  }
  const s = spec.textSpacing ?? { afterPrefixToken: '', beforeSuffixToken: '', beforeMiddleToken: '' };
  const spelled = (t: string | readonly string[] | undefined) => (t === undefined ? undefined : typeof t === 'string' ? t : t[0]);
  const pre = spec.text?.prefix ?? spelled(spec.prefix);
  const suf = spec.text?.suffix ?? spelled(spec.suffix);
  const mid = spec.text?.middle ?? spelled(spec.middle);
  switch (spec.order) {
    case 'prefix-only':
      return head + parts.prefix;
    case 'suffix-first':
      return `${head}${suf}${parts.suffix}${pre}${parts.prefix}`;
    case 'psm':
      if (!pre || !suf || !mid) throw new Error(`the ${spec.label} template needs its token texts to render text`);
      // The space after the prefix token is the prefix's own word-start space: none when it is empty
      // (a line-anchored prompt of one line), or CodeLlama reads a lone "▁" token there.
      return `${head}${pre}${parts.prefix ? s.afterPrefixToken : ''}${parts.prefix}${s.beforeSuffixToken}${suf}${parts.suffix}${s.beforeMiddleToken}${mid}${parts.middle ?? ''}`;
  }
}

/** The spec of a family (for remote backends, which have no vocabulary to detect from). */
export function templateSpec(family: TemplateFamily): TemplateSpec {
  if (family === 'generic-fim') return { ...GENERIC_FIM, prefix: '<|fim_prefix|>', suffix: '<|fim_suffix|>', middle: '<|fim_middle|>' };
  if (family === 'prefix-only') return PREFIX_ONLY;
  const spec = TEMPLATE_SPECS.find((s) => s.family === family);
  if (!spec) throw new Error(`unknown template family "${family}"`);
  return spec;
}

/**
 * The family of a server's model from its name (a server gives no vocabulary to look at), e.g.
 * "Qwen/Qwen2.5-Coder-7B" or "qwen2.5-coder:1.5b-base". Unknown names get prefix-only: a wrong FIM
 * template would have the model continue the template's tokens as text.
 */
export function guessTemplateFamily(modelName: string): TemplateFamily {
  const name = modelName.toLowerCase();
  if (/qwen/.test(name)) return 'qwen2.5-coder';
  if (/starcoder/.test(name)) return 'starcoder2';
  if (/deepseek/.test(name)) return 'deepseek-coder';
  if (/code-?llama/.test(name)) return 'codellama';
  if (/codestral/.test(name)) return 'codestral';
  return 'prefix-only';
}
