// The words of decoding that every side uses: token ids, decode modes, proposal sources, stop reasons.

export type Token = number;

/**
 * How completions are decoded. Every mode but the stock ones yields the target's exact greedy output.
 * 'copy': next-edit windows only, the window copy proposer alone (speculation/windowCopyProposer.ts);
 * 'hybrid' adds it to the n-gram and draft sources when the request has a window to copy.
 */
export type DecodeMode = 'plain' | 'ngram' | 'draft' | 'hybrid' | 'copy';

/**
 * Where a proposal comes from: a proposer's id (speculation/proposer.ts). Draftline's own: 'ngram'
 * (n-grams of the text), 'suffix' (every occurrence of the text's ending, merged by frequency), 'draft' (the draft model), 'lookahead' (the target's own outputs after a
 * rejected guess), 'copy' (the next-edit window being rewritten, copied from where the output is in it).
 */
export type SourceId = string;

/** How Show Stats, its charts and the next-edit figures name a source; a source not listed goes by its id. */
const SOURCE_NAMES: Readonly<Record<SourceId, string>> = { ngram: 'n-gram', suffix: 'suffix tree', draft: 'draft model', lookahead: 'lookahead', copy: 'window copy' };

export function sourceName(id: SourceId): string {
  return Object.hasOwn(SOURCE_NAMES, id) ? SOURCE_NAMES[id]! : id;
}

/** Source ids in the order they are shown: the named ones in the table's order, then the others as given. */
export function sourceOrder(ids: Iterable<SourceId>): SourceId[] {
  const named = Object.keys(SOURCE_NAMES);
  const rank = (id: SourceId) => (named.includes(id) ? named.indexOf(id) : named.length);
  return [...new Set(ids)].sort((a, b) => rank(a) - rank(b));
}

/** Why a completion ended. timeBudget: its time was spent, and it ended with the line in progress (stopping/stopRules.ts). */
export type StopReason = 'eos' | 'maxTokens' | 'stopSequence' | 'blockEnd' | 'newline' | 'maxLines' | 'timeBudget' | 'abort' | 'contextFull';
