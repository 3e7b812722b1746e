import type { ProposalSource, Token } from '../shared/types';

/** A guess at the tokens that follow `history`, to be verified by the target. */
export interface Proposal {
  source: ProposalSource;
  tokens: Token[];
  /** N-gram match length that produced it (n-gram source only). */
  matchLength?: number;
  /** Draft model evaluations spent, and their ms when representative of a step (not a prompt catch-up). */
  evaluations?: number;
  generationMs?: number;
}

/** Finds a proposal from text the user already has (prompt, open files, earlier completions). */
export interface NgramProposer {
  find(history: readonly Token[], maxLen: number): Proposal | null;
}

/** Runs the draft model. Reports its time so the policy can weigh it. */
export interface DraftProposer {
  propose(history: readonly Token[], maxLen: number): Promise<Proposal>;
}
