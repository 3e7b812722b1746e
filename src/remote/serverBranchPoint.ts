// Where a server's alternatives branch off its greedy completion: the in-process path's
// rules (speculation/branchPoint.ts) over the token probabilities a server reports. Pure functions,
// apart from serverBackend.ts, which sends the requests.
import type { NamedToken, ReportedToken } from './serverApi';

/**
 * How much of a greedy completion an alternative may branch in, as the in-process path's default
 * scope (InferenceSession.alternativesScope 'firstLine'): up to the end of its first line with
 * content, so that each alternative shows another first line: the file's real first line is then
 * among the suggestions more often than when branching anywhere (bench regime 10).
 */
export function branchableLength(text: string): number {
  const firstLine = /\S[^\n]*\n/.exec(text);
  // Tokens that start before the newline, or on it (the token that ends the line may change how it ends).
  return firstLine ? firstLine.index + firstLine[0].length : text.length;
}

/**
 * Where the greedy completion was least certain, by the rules of the in-process path
 * (speculation/branchPoint.ts): the token with the smallest margin between its two most likely
 * tokens (the earliest of equals), among the tokens that start within what the stop rules kept
 * (`keptLength` characters) and offer another usable token: not an end of generation (no text), and
 * one `allows` accepts given the forced text and the greedy text through the same token (the blank
 * the user typed is not rewritten). Its usable other tokens, most likely first, and the greedy
 * tokens before it.
 */
export function branchPoint(
  tokens: readonly ReportedToken[],
  keptLength: number,
  allows: (forcedText: string, greedyText: string) => boolean = () => true,
): { tokenIndex: number; margin: number; before: NamedToken[]; others: NamedToken[] } | null {
  const named = ({ id, text }: NamedToken): NamedToken => (id === undefined ? { text } : { id, text });
  let best: { tokenIndex: number; margin: number; others: NamedToken[] } | null = null;
  let offset = 0;
  let beforeText = '';
  for (let i = 0; i < tokens.length && offset < keptLength; i++) {
    const token = tokens[i];
    const top = token.top;
    if (top.length >= 2) {
      const margin = top[0].logprob - top[1].logprob;
      if (!best || margin < best.margin) {
        // The greedy token by identity (its id where the server gives ids), not by rank: a near-tie may rank another first.
        const same = (t: NamedToken) => (t.id !== undefined && token.id !== undefined ? t.id === token.id : t.text === token.text);
        const others = top.filter((t) => !same(t) && t.text !== '' && allows(beforeText + t.text, beforeText + token.text)).map(named);
        if (others.length > 0) best = { tokenIndex: i, margin, others };
      }
    }
    offset += token.text.length;
    beforeText += token.text;
  }
  return best && { ...best, before: tokens.slice(0, best.tokenIndex).map(named) };
}
