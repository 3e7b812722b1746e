// What a caller may set for one request beyond the request itself (InferenceSession's complete,
// alternatives and nextEdit): the benchmark's controlled proposers, a window's own settings and its
// prompt state's owner.
import type { SpeculationSettings } from '../shared/settings';
import type { SpeculationPolicy } from '../speculation/policy';
import type { LookupProposer, ModelProposer, Proposer } from '../speculation/proposer';
import type { StepProfile } from '../speculation/speculativeDecoder';
import type { BudgetClock } from '../stopping/stopRules';

/** For the benchmark: a proposer of controlled accuracy in place of the draft model, its own policy. */
export interface DecodeOverrides {
  draft?: ModelProposer;
  /** A next-edit window's copy proposer: used by the 'copy' and 'hybrid' modes (speculation/windowCopyProposer.ts). */
  copy?: LookupProposer;
  /**
   * Sources of the caller's own, proposed from first in any mode but plain (tests and the benchmark:
   * a proposer that offers token trees, say); one per id, none sharing an id with the mode's.
   */
  proposers?: readonly Proposer[];
  policy?: SpeculationPolicy;
  /** Where each decode step's time goes (bench/profile.ts). */
  profile?: StepProfile;
  /** The lookahead pool on or off whatever the settings say (the benchmark's side-by-side modes). */
  lookahead?: boolean;
  /** The n-gram proposer and the suffix proposer on or off whatever the settings say (the benchmark's side-by-side modes; inference/documentNgrams.ts textProposers). */
  ngram?: boolean;
  suffix?: boolean;
  /** Proposers tried after the mode's own (the benchmark's rivals: llama-server's proposers, ported). */
  extraProposers?: readonly LookupProposer[];
  /**
   * Speculation settings of this request in place of the session's (the shared worker passes each
   * window's own, with `policy` the window's own policy over the same object).
   */
  speculation?: SpeculationSettings;
  /**
   * Whose prompt state (KV sequence) the request decodes on: the shared worker names each window's
   * completions apart (inference/promptStates.ts); the default owner's otherwise.
   */
  owner?: string;
  /**
   * The clock of the request's time budget (CompletionRequest.timeBudgetMs) and when the request was
   * taken: performance.now, at the session's call, unless given (tests: a fake clock).
   */
  budgetClock?: BudgetClock;
}

/** `overrides` with the time budget's start fixed now: the alternatives of a request share its budget. */
export function budgetStartsNow(overrides: DecodeOverrides): DecodeOverrides {
  const now = overrides.budgetClock?.now ?? (() => performance.now());
  return { ...overrides, budgetClock: { now, startedAt: overrides.budgetClock?.startedAt ?? now() } };
}
