// llama-server's model-free speculation types, ported line for line from the llama.cpp that the bench
// builds (bench/cache/llama-server/src/common/ngram-map.cpp `common_ngram_simple_draft`, and
// speculative.cpp `common_speculative_impl_ngram_mod` over ngram-mod.cpp), with the defaults
// `--spec-type ngram-simple` / `ngram-mod` run with (common.h). The edits replay (bench/editReplay.ts)
// feeds them the same perfect next-edit output on the same target batches as our window copy
// proposer: the proposers compared alone, without either runtime's overheads. ngram-mod's table and
// its streak of poorly accepted drafts live as long as the server's slot, across requests
// (NgramModState: one for a replay's cases, one for a pair's requests in regime 1). What is not
// ported: the server's reuse of a partial draft carried over between batches.
import type { Token } from '../src/shared/decoding';
import type { SpeculationSettings } from '../src/shared/settings';
import { COPY_MAX_PROPOSAL } from '../src/speculation/copyAcceptance';
import { type AcceptanceModel, type ChainOffer, chainOffer, type LookupProposer } from '../src/speculation/proposer';

/** As the window copy they compete with: proposals up to copyMaxProposal (what the server's slot verifies), its prior. */
const rivalAcceptance = (): AcceptanceModel => ({ prior: 0.75, longest: (settings: SpeculationSettings) => settings.copyMaxProposal ?? COPY_MAX_PROPOSAL });

/** common_params_speculative_ngram_map (ngram_simple): n-gram looked up, m-gram drafted. */
export const NGRAM_SIMPLE_DEFAULTS = { sizeN: 12, sizeM: 48 } as const;
/** common_params_speculative_ngram_mod. */
export const NGRAM_MOD_DEFAULTS = { nMatch: 24, nMax: 64, nMin: 48 } as const;

/**
 * `common_ngram_simple_draft`: the last n tokens (the sampled one last) looked up backwards in the
 * history before them; the m tokens after the latest occurrence are the draft, none when fewer than n.
 * `history` is the decoder's: the server's `tokens` (the prompt and output) then `sampled`.
 */
export function ngramSimpleDraft(history: readonly Token[], sizeN: number = NGRAM_SIMPLE_DEFAULTS.sizeN, sizeM: number = NGRAM_SIMPLE_DEFAULTS.sizeM): Token[] {
  const sampled = history.at(-1);
  const curLen = history.length - 1;
  if (sampled === undefined || curLen <= sizeN + sizeM + 1) return [];
  const pattern = [...history.slice(curLen - sizeN + 1, curLen), sampled];
  let matchPos = 0; // position 0 means no match, as in the source
  for (let j = curLen - sizeN - 1; j > 0; j--) {
    let match = true;
    for (let k = 0; k < pattern.length; k++) {
      if (history[j + k] !== pattern[k]) {
        match = false;
        break;
      }
    }
    if (match) {
      matchPos = j;
      break;
    }
  }
  if (matchPos === 0) return [];
  const copyMax = Math.min(sizeM, curLen - (matchPos + sizeN));
  if (copyMax < sizeN) return [];
  return history.slice(matchPos + sizeN, matchPos + sizeN + copyMax) as Token[];
}

/** `--spec-type ngram-simple` as a proposer: stateless, its draft cut to what the server's slot allows (n_remaining − 1). */
export class NgramSimpleProposer implements LookupProposer {
  readonly id = 'ngram-simple';
  readonly asks = 'lookup';
  readonly acceptanceModel = rivalAcceptance;

  offer(history: readonly Token[], maxLen: number): ChainOffer | null {
    const tokens = ngramSimpleDraft(history).slice(0, maxLen);
    return tokens.length ? chainOffer(tokens) : null;
  }

  record(): void {}
}

/**
 * `--spec-type ngram-mod`: a table from each n_match-gram of the history to the token after it (the
 * latest wins), filled from the prompt at the start and then in chunks of 32; a draft chains lookups
 * from the last n_match tokens, at most n_max, and none when the chain breaks before n_min. Five drafts
 * in a row with under a quarter accepted empty the table. The source's table is a 4M-entry hash modulo
 * its size; a Map keyed by the n-gram is the same table without its (rare) collisions.
 */
export class NgramModProposer implements LookupProposer {
  readonly id = 'ngram-mod';
  readonly asks = 'lookup';
  readonly acceptanceModel = rivalAcceptance;
  private iLast = 0;
  private started = false;
  private lastDraft = 0;

  constructor(
    private readonly promptLength: number,
    /** The slot's table and streak, kept across requests (a new one: a fresh server). */
    private readonly state: NgramModState = new NgramModState(),
    private readonly params: { nMatch: number; nMax: number; nMin: number } = NGRAM_MOD_DEFAULTS,
  ) {}

  private get table(): Map<string, Token> {
    return this.state.table;
  }

  offer(history: readonly Token[], maxLen: number): ChainOffer | null {
    const n = this.params.nMatch;
    if (!this.started) {
      this.started = true;
      this.begin(history.slice(0, this.promptLength));
    }
    this.lastDraft = 0;
    // The server's `prompt` here is its token list without the sampled token (id_last).
    const tokens = history.slice(0, -1);
    const idLast = history.at(-1);
    const curLen = tokens.length;
    if (idLast === undefined || curLen < n) return null;
    if (this.iLast + 32 < curLen) {
      for (let i = this.iLast; i < curLen - n; i++) this.add(tokens, i);
      this.iLast = curLen - n;
    }
    const chain: Token[] = [...tokens.slice(curLen - n + 1), idLast];
    for (let i = 0; i < this.params.nMax; i++) {
      const next = this.table.get(key(chain, i, n));
      if (next === undefined) {
        if (i < this.params.nMin) return null;
        break;
      }
      chain.push(next);
    }
    const draft = chain.slice(n, n + maxLen);
    this.lastDraft = chain.length - n;
    return draft.length ? chainOffer(draft) : null;
  }

  /** `accept`: the fraction of the last draft kept (the whole draft as drafted, before any cut). */
  record(_proposed: number, accepted: number): void {
    if (this.lastDraft <= 0) return;
    if (accepted / this.lastDraft < 0.25) {
      if (++this.state.lowStreak >= 5) {
        this.table.clear();
        this.state.lowStreak = 0;
        this.iLast = 0;
      }
    } else {
      this.state.lowStreak = 0;
    }
  }

  private begin(prompt: readonly Token[]): void {
    const n = this.params.nMatch;
    if (prompt.length < n) return;
    for (let i = 0; i < prompt.length - n; i++) this.add(prompt, i);
    this.iLast = prompt.length - n;
    // The source empties a table filled past a quarter of its 4M entries.
    if (this.table.size > NGRAM_MOD_TABLE_ENTRIES / 4) this.table.clear();
  }

  private add(tokens: readonly Token[], at: number): void {
    this.table.set(key(tokens, at, this.params.nMatch), tokens[at + this.params.nMatch]!);
  }
}

const key = (tokens: readonly Token[], at: number, n: number) => tokens.slice(at, at + n).join(',');

/** Entries of ngram-mod's hash table (common_speculative_impl_ngram_mod's `mod`). */
const NGRAM_MOD_TABLE_ENTRIES = 4 * 1024 * 1024;

/** What an ngram-mod slot keeps from one request to the next: its table and its streak of poorly accepted drafts. */
export class NgramModState {
  readonly table = new Map<string, Token>();
  lowStreak = 0;
}
