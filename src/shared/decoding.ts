// The words of decoding that every side uses: token ids, decode modes, proposal sources, stop reasons.

export type Token = number;

/**
 * How completions are decoded. Every mode but the stock ones yields the target's exact greedy output.
 * 'copy': next-edit windows only, the window copy proposer alone (speculation/windowCopyProposer.ts);
 * 'hybrid' adds it to the n-gram and draft sources when the request has a window to copy.
 */
export type DecodeMode = 'plain' | 'ngram' | 'draft' | 'hybrid' | 'copy';

/**
 * Where a proposal comes from: n-grams of the text, the draft model, the target's own outputs after a
 * rejected guess, or the next-edit window being rewritten (copied from where the output is in it).
 */
export type ProposalSource = 'ngram' | 'draft' | 'lookahead' | 'copy';

/** Why a completion ended. timeBudget: its time was spent, and it ended with the line in progress (stopping/stopRules.ts). */
export type StopReason = 'eos' | 'maxTokens' | 'stopSequence' | 'blockEnd' | 'newline' | 'maxLines' | 'timeBudget' | 'abort' | 'contextFull';
