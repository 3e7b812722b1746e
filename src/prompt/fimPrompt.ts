import type { Token } from '../engine/types';

export interface PromptVocabulary {
  tokenize(text: string): Token[];
  /** Prepended when the model was trained with it. */
  bos: Token | null;
  /** The model's own fill-in-the-middle tokens, from its GGUF metadata; null when it has none. */
  fim: { prefix: Token; suffix: Token; middle: Token } | null;
}

export interface BuiltPrompt {
  tokens: Token[];
  format: 'fim' | 'prefix-only';
  prefixTokens: number;
  suffixTokens: number;
}

/** Prefix tokens are dropped from the start in steps this big, so typing keeps the same start (KV reuse). */
export const PREFIX_TRIM_STEP = 32;

/**
 * Lays out a completion prompt within `budget` tokens: PSM fill-in-the-middle
 * (`<pre>prefix<suf>suffix<mid>`) with the model's FIM tokens, or the prefix alone when it has none.
 * The suffix gets at most a quarter of the budget; the prefix keeps its end (nearest the cursor).
 */
export function buildPrompt(vocab: PromptVocabulary, prefix: string, suffix: string, budget: number): BuiltPrompt {
  const head: Token[] = vocab.bos === null ? [] : [vocab.bos];
  let prefixTokens = vocab.tokenize(prefix);
  if (!vocab.fim) {
    prefixTokens = trimStart(prefixTokens, budget - head.length);
    return { tokens: [...head, ...prefixTokens], format: 'prefix-only', prefixTokens: prefixTokens.length, suffixTokens: 0 };
  }
  const fixed = head.length + 3;
  const room = Math.max(0, budget - fixed);
  let suffixTokens = vocab.tokenize(suffix);
  const suffixRoom = Math.min(suffixTokens.length, Math.floor(room / 4));
  if (prefixTokens.length + suffixTokens.length > room) {
    suffixTokens = suffixTokens.slice(0, Math.max(suffixRoom, room - prefixTokens.length));
  }
  prefixTokens = trimStart(prefixTokens, room - suffixTokens.length);
  const { prefix: pre, suffix: suf, middle: mid } = vocab.fim;
  return {
    tokens: [...head, pre, ...prefixTokens, suf, ...suffixTokens, mid],
    format: 'fim',
    prefixTokens: prefixTokens.length,
    suffixTokens: suffixTokens.length,
  };
}

/** Keeps at most `max` tokens from the end, cutting in PREFIX_TRIM_STEP steps. */
function trimStart(tokens: Token[], max: number): Token[] {
  if (max <= 0) return [];
  if (tokens.length <= max) return tokens;
  const cut = Math.min(tokens.length, Math.ceil((tokens.length - max) / PREFIX_TRIM_STEP) * PREFIX_TRIM_STEP);
  return tokens.slice(cut);
}
