import type { Token } from '../shared/decoding';
import type { PromptTemplate } from './templates';

export interface PromptVocabulary {
  tokenize(text: string): Token[];
  /** Prepended when the model was trained with it. */
  bos: Token | null;
  /** The model's own fill-in-the-middle tokens, from its GGUF metadata; null when it has none. */
  fim: { prefix: Token; suffix: Token; middle: Token } | null;
  /** The model family's template (prompt/templates.ts); without one, `fim` in psm order. */
  template?: PromptTemplate;
}

export interface BuiltPrompt {
  tokens: Token[];
  format: 'fim' | 'prefix-only';
  prefixTokens: number;
  suffixTokens: number;
  /** Tokens of the cursor line's typed text placed after the middle token (0 in the standard layout). */
  middleTokens: number;
}

/**
 * Where the text before the cursor is split in a FIM prompt.
 * - `standard`: `<pre>prefix<suf>suffix<mid>`. A typed character changes the prefix's end, so the
 *   whole suffix after it is evaluated again on every keystroke (most of a keystroke's latency on
 *   a CPU).
 * - `lineAnchored`: the middle starts at the newline that opens the cursor's group of
 *   ANCHOR_LINE_GROUP lines: `<pre>head<suf>suffix<mid>\n  line\n  typed`. Typing within the group
 *   (new lines included) only appends to the prompt, so the KV cache of head and suffix stays
 *   valid and only the new tokens are evaluated: exactly, with no approximate KV reuse. It is a
 *   split the model was trained on (FIM training cuts the middle at random points, so middles of
 *   a few lines that begin with a newline are ordinary); the benchmark measures its quality
 *   against `standard`. Starting at the newline keeps the next line's indentation tokenized as the
 *   model usually sees it. The group is counted from the window's start, which itself moves only
 *   in 512-character steps: the same text gives the same prompt, whatever was typed before.
 */
export type PromptLayout = 'standard' | 'lineAnchored';

/** Lines per anchor group: few enough that the middle stays short, enough that typing rarely leaves the group. */
export const ANCHOR_LINE_GROUP = 8;

/**
 * Splits the spaces and tabs the prefix ends with off it. A prompt ending in a lone whitespace token
 * is rare in training (byte-level BPE merges a space with the word after it, " return"), and small
 * models then tend to end the middle at once: typed "if (x) " gets no ghost text where "if (x)" gets
 * " return 0;". The prompt leaves them out; the completion's start loses them again when the model
 * writes them (see InferenceSession), so the ghost text still continues what the user typed.
 */
export function splitTrailingBlank(prefix: string): { prefix: string; blank: string } {
  const blank = /[ \t]*$/.exec(prefix)![0];
  return { prefix: prefix.slice(0, prefix.length - blank.length), blank };
}

/** Prefix tokens are dropped from the start in steps this big, so typing keeps the same start (KV reuse). */
export const PREFIX_TRIM_STEP = 32;

/** A cursor line longer than this (minified code, a long paste) is not worth anchoring: standard layout. */
export const MAX_MIDDLE_TOKENS = 256;

/** How buildPrompt lays a prompt out, beyond the text and the budget. */
export interface PromptOptions {
  layout?: PromptLayout;
  anchorLines?: number;
  context?: PromptContext;
  /**
   * The document line `prefix` starts on (0-based), when it starts at a line's start. The line
   * groups and the head's cut are then counted in document lines, so neither moves when the
   * window's start moves; without it they are counted from the prefix's start.
   */
  prefixLine?: number;
}

/**
 * The head (the text before the middle) is cut at document lines that are multiples of this when it
 * does not fit: the cut then stays put while the user types, and moves in steps of whole line blocks
 * (a step drops the head's first lines, which the cache follows by a shift: see inference/).
 */
export const HEAD_CUT_LINES = 16;

/**
 * Lays out a completion prompt within `budget` tokens: fill-in-the-middle with the model's FIM
 * tokens (see PromptLayout), or the prefix alone when it has none. When prefix and suffix do not
 * both fit, the suffix gets at most a quarter of the room; the prefix keeps its end (nearest the
 * cursor). Every share depends on text that typing on the cursor line does not change.
 */
export function buildPrompt(vocab: PromptVocabulary, prefix: string, suffix: string, budget: number, options: PromptOptions = {}): BuiltPrompt {
  const { layout = 'lineAnchored', anchorLines = ANCHOR_LINE_GROUP, context = NO_CONTEXT } = options;
  // Extra context goes first (prompt/contextBlock.ts): its KV stays cached while the user types.
  const head: Token[] = [...(vocab.bos === null ? [] : [vocab.bos]), ...context.beforePrompt];
  budget -= context.afterPrefixToken.length;
  const order = vocab.template?.order ?? (vocab.fim ? 'psm' : 'prefix-only');
  const ids = vocab.template?.ids ?? vocab.fim ?? {};
  if (order === 'prefix-only' || ids.prefix === undefined || ids.suffix === undefined) {
    const prefixTokens = trimStart(vocab.tokenize(prefix), budget - head.length);
    return { tokens: [...head, ...context.afterPrefixToken, ...prefixTokens], format: 'prefix-only', prefixTokens: prefixTokens.length, suffixTokens: 0, middleTokens: 0 };
  }
  if (order === 'suffix-first') {
    // `[SUFFIX]suffix[PREFIX]prefix`: typing appends to the prompt's end already; no anchoring.
    const available = Math.max(0, budget - head.length - 2);
    const { prefixTokens, suffixTokens } = fitShares(vocab.tokenize(prefix), vocab.tokenize(suffix), available);
    return {
      tokens: [...head, ids.suffix, ...suffixTokens, ids.prefix, ...context.afterPrefixToken, ...prefixTokens],
      format: 'fim',
      prefixTokens: prefixTokens.length,
      suffixTokens: suffixTokens.length,
      middleTokens: 0,
    };
  }
  if (ids.middle === undefined) throw new Error('a prefix-suffix-middle template needs a middle token');
  const tokenizeInfilling = vocab.template?.spec.infillingWithoutSpace ? (text: string) => withoutWordStartSpace(vocab, text) : vocab.tokenize;
  const fixed = head.length + 3;
  const room = Math.max(0, budget - fixed);
  const lines = layout === 'standard' ? null : new PrefixLines(prefix, options.prefixLine);
  let anchor = lines ? lines.anchor(anchorLines) : prefix.length;
  let middleTokens = anchor < prefix.length ? tokenizeInfilling(prefix.slice(anchor)) : [];
  if (middleTokens.length > Math.min(MAX_MIDDLE_TOKENS, Math.floor(room / 2))) {
    anchor = prefix.length;
    middleTokens = [];
  }
  // Room for any middle the layout anchors (never more than half the room: a small context, the tiny
  // test pair's 256, keeps room for the rest). Fixed, so the head's share does not move as the middle
  // grows and shrinks with typing.
  const reserve = layout === 'standard' ? 0 : Math.min(Math.floor(room / 2), MAX_MIDDLE_TOKENS);
  const available = Math.max(0, room - reserve);
  const headText = lines ? lines.headText(anchor) : { text: prefix.slice(0, anchor), from: 0 };
  const wholeHead = vocab.tokenize(headText.text);
  const suffixTokens = suffixShare(tokenizeInfilling(suffix), available, wholeHead.length);
  const max = available - suffixTokens.length;
  const prefixTokens = wholeHead.length <= max ? wholeHead : lines ? lines.cutHead(headText.from, anchor, max, vocab.tokenize) : trimStart(wholeHead, max);
  return {
    tokens: [...head, ids.prefix, ...context.afterPrefixToken, ...prefixTokens, ids.suffix, ...suffixTokens, ids.middle, ...middleTokens],
    format: 'fim',
    prefixTokens: prefixTokens.length,
    suffixTokens: suffixTokens.length,
    middleTokens: middleTokens.length,
  };
}

/** The prefix's lines, numbered as in the document when its first line's number is known. */
class PrefixLines {
  /** Offset in the prefix of each line's first character. */
  private readonly starts: number[] = [0];
  private readonly first: number;

  constructor(
    private readonly prefix: string,
    firstLine: number | undefined,
  ) {
    for (let i = prefix.indexOf('\n'); i >= 0; i = prefix.indexOf('\n', i + 1)) this.starts.push(i + 1);
    this.first = firstLine ?? 0;
  }

  /**
   * Where the middle starts: at the newline that opens the cursor's group of `size` lines (groups
   * counted from document line 1, or from the prefix's second line when the numbers are unknown).
   * Text typed after it, new lines included until the next group starts, only appends to the prompt.
   */
  anchor(size: number): number {
    const cursorLine = this.first + this.starts.length - 1;
    if (cursorLine === 0) return 0;
    const groupStart = Math.floor((cursorLine - 1) / size) * size + 1;
    const index = groupStart - this.first;
    return index <= 0 ? 0 : this.starts[index]! - 1;
  }

  /**
   * The head: prefix[0, end), from the document's start, or from the first line at or after the
   * prefix's start whose number is a multiple of HEAD_CUT_LINES. A window that starts elsewhere in the
   * document moves with the cursor; the head's start then moves only in whole blocks, and only forward.
   */
  headText(end: number): { text: string; from: number } {
    const from = this.first === 0 ? 0 : Math.min(end, this.cutAt(Math.ceil(this.first / HEAD_CUT_LINES) * HEAD_CUT_LINES) ?? end);
    return { text: this.prefix.slice(from, end), from };
  }

  /** The offset in the prefix of a document line's start, if the prefix holds it. */
  private cutAt(line: number): number | undefined {
    return this.starts[line - this.first];
  }

  /**
   * The tokens of prefix[from, end), which do not fit `max`, cut to fit: from the first line whose
   * document number is a multiple of HEAD_CUT_LINES that leaves them within `max` (so the cut moves
   * only in whole blocks), else the last `max` tokens after the last such line.
   */
  cutHead(from: number, end: number, max: number, tokenize: (text: string) => Token[]): Token[] {
    const cuts: number[] = [];
    for (let line = Math.ceil(this.first / HEAD_CUT_LINES) * HEAD_CUT_LINES; ; line += HEAD_CUT_LINES) {
      const at = this.cutAt(line);
      if (at === undefined || at >= end) break;
      if (at > from) cuts.push(at);
    }
    // The fewest tokens dropped: the first cut whose rest fits (fewer tokens the later the cut).
    let low = 0;
    let high = cuts.length;
    let best: Token[] | null = null;
    while (low < high) {
      const mid = (low + high) >> 1;
      const rest = tokenize(this.prefix.slice(cuts[mid]!, end));
      if (rest.length <= max) {
        best = rest;
        high = mid;
      } else low = mid + 1;
    }
    return best ?? trimStart(tokenize(this.prefix.slice(cuts.at(-1) ?? from, end)), max);
  }
}

/** The suffix's share of `available` tokens: all of it when prefix and suffix fit, else at least a quarter, more when the prefix leaves room. */
function suffixShare(suffixTokens: Token[], available: number, prefixLength: number): Token[] {
  return suffixTokens.slice(0, Math.max(Math.floor(available / 4), available - prefixLength));
}

/** The character Meta's CodeLlama tokenizer puts before a text to take SentencePiece's word-start space off it. */
const SPACE_TAKER = '☺';

/**
 * `text` tokenized without the word-start space a SentencePiece tokenizer puts before it (Meta's
 * encode_infilling): after SPACE_TAKER, whose tokens are then dropped. A tokenizer that does not
 * tokenize SPACE_TAKER apart from what follows gets the text tokenized as it is.
 */
function withoutWordStartSpace(vocab: PromptVocabulary, text: string): Token[] {
  if (text === '') return [];
  const taker = vocab.tokenize(SPACE_TAKER);
  const tokens = vocab.tokenize(SPACE_TAKER + text);
  return taker.length > 0 && taker.every((t, i) => tokens[i] === t) ? tokens.slice(taker.length) : vocab.tokenize(text);
}

/**
 * Prefix and suffix within `available` tokens: when both do not fit, the suffix gets at most a
 * quarter of the room and the prefix keeps its end (nearest the cursor), cut in PREFIX_TRIM_STEP steps.
 */
function fitShares(prefixTokens: Token[], suffixTokens: Token[], available: number): { prefixTokens: Token[]; suffixTokens: Token[] } {
  if (prefixTokens.length + suffixTokens.length > available) {
    const suffixShare = Math.min(suffixTokens.length, Math.floor(available / 4));
    suffixTokens = suffixTokens.slice(0, Math.max(suffixShare, available - prefixTokens.length));
  }
  return { prefixTokens: trimStart(prefixTokens, available - suffixTokens.length), suffixTokens };
}

/**
 * Extra context tokens (prompt/contextBlock.ts): repo-level file sections before the FIM structure
 * (`beforePrompt`), or a comment block at the start of the prefix (`afterPrefixToken`). Both are
 * taken from the budget before the file's own text.
 */
export interface PromptContext {
  beforePrompt: Token[];
  afterPrefixToken: Token[];
  /** How many files (chunks) the tokens show (Show Stats). */
  files: number;
}

export const NO_CONTEXT: PromptContext = { beforePrompt: [], afterPrefixToken: [], files: 0 };

/**
 * Where the middle starts: at the newline that opens the cursor's group of `lines` lines (see
 * PrefixLines.anchor). Text typed after it, new lines included until the next group starts, only
 * appends to the prompt.
 */
export function anchorOf(prefix: string, lines: number, prefixLine?: number): number {
  return new PrefixLines(prefix, prefixLine).anchor(lines);
}

/**
 * A cursor line group longer than this many characters is not anchored in a text prompt (about
 * MAX_MIDDLE_TOKENS tokens of code: a text prompt is tokenized by the server, so characters stand in
 * for the tokens buildPrompt counts).
 */
export const MAX_MIDDLE_CHARS = 4 * MAX_MIDDLE_TOKENS;

/**
 * The line-anchored split (see PromptLayout) for a prompt sent as text: `head` before the prefix
 * token, `middle` after the middle token. The same split as buildPrompt's, so a server that
 * tokenizes the text with the model's special tokens (llama.cpp, vLLM, Ollama's raw mode: each piece
 * between two special tokens is tokenized on its own, as buildPrompt tokenizes them) evaluates the
 * same tokens as the local path, and its prompt cache keeps all but the typed end.
 */
export function anchoredSplit(prefix: string, anchorLines = ANCHOR_LINE_GROUP, prefixLine?: number): { head: string; middle: string } {
  const anchor = anchorOf(prefix, anchorLines, prefixLine);
  if (prefix.length - anchor > MAX_MIDDLE_CHARS) return { head: prefix, middle: '' };
  return { head: prefix.slice(0, anchor), middle: prefix.slice(anchor) };
}

/** Keeps at most `max` tokens from the end, cutting in PREFIX_TRIM_STEP steps. */
function trimStart(tokens: Token[], max: number): Token[] {
  if (max <= 0) return [];
  if (tokens.length <= max) return tokens;
  const cut = Math.min(tokens.length, Math.ceil((tokens.length - max) / PREFIX_TRIM_STEP) * PREFIX_TRIM_STEP);
  return tokens.slice(cut);
}
