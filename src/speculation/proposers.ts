import type { ProposalSource, Token } from '../shared/decoding';

/** A guess at the tokens that follow `history`, to be verified by the target. */
export interface Proposal {
  source: ProposalSource;
  tokens: Token[];
  /** N-gram match length that produced it (n-gram source only). */
  matchLength?: number;
  /** Draft model evaluations spent, and their ms when representative of a step (not a prompt catch-up). */
  evaluations?: number;
  generationMs?: number;
  /** Copy source only: it continues a fully accepted copy proposal (a copy run), not a re-synchronisation. */
  inRun?: boolean;
  /** Copy source only: output tokens in a row that agree with where the copy resumes (the re-synchronising suffix and the copy since). */
  agreement?: number;
  /** Copy source only: how many of `tokens` the proposer's own schedule proposes (all when absent); the rest is on offer. */
  scheduled?: number;
}

/** Finds a proposal from text the user already has (prompt, open files, earlier completions). */
export interface NgramProposer {
  find(history: readonly Token[], maxLen: number): Proposal | null;
}

/** Runs the draft model. Reports its time so the policy can weigh it. */
export interface DraftProposer {
  propose(history: readonly Token[], maxLen: number): Promise<Proposal>;
}

/**
 * Copies from the text being rewritten (a next-edit window: speculation/windowCopyProposer.ts). Free
 * to look up; it keeps state between steps, so the decoder tells it how each verified proposal went.
 */
export interface CopyProposer {
  /** The tokens it would copy after `history` (at most maxLen; its own schedule decides how many), or null. */
  find(history: readonly Token[], maxLen: number): Proposal | null;
  /** How its last proposal fared: `proposed` tokens verified (the policy may cut an offer), `accepted` kept. */
  record(proposed: number, accepted: number): void;
}
