// Prompt states: which KV sequence a prompt decodes on. Each owner (one window's completion prompt,
// later its next-edit prompt) keeps a sequence of its own while the budget allows, so that a
// keystroke in one window re-evaluates only what changed in that window's prompt, whatever another
// window asked in between. When every sequence is owned, the least recently used one is taken
// (llama-server's slots: one sequence each, longest common prefix first, else least recently used).
import type { Token } from '../shared/decoding';
import { commonPrefixLength } from '../speculation/greedyEvaluator';

/** The owner of requests that name none (tests, the benchmark, a session with one caller). */
export const DEFAULT_OWNER = '';

/** What the choice of a sequence needs to know of one. */
export interface SequenceSlot {
  /** Who decodes on it now; null when nobody does (never used, or its owner went away). */
  owner: string | null;
  /** The tokens its KV cache holds. */
  tokens: readonly Token[];
  /** When it was last used (a counter: larger is later). */
  lastUsed: number;
}

export interface SlotChoice {
  index: number;
  /** The owner whose sequence is taken, when it had one. */
  evicted: string | null;
  /** Tokens of the prompt that the chosen sequence's cache holds already. */
  reusable: number;
}

/**
 * The sequence a prompt of `owner` decodes on: its own; else, among sequences nobody owns, the one
 * whose cache shares the longest start with the prompt (a never-used one if none shares any); else
 * the least recently used one, whose owner loses it.
 */
export function chooseSlot(slots: readonly SequenceSlot[], owner: string, prompt: readonly Token[]): SlotChoice {
  if (slots.length === 0) throw new Error('no KV sequence to decode on');
  const own = slots.findIndex((s) => s.owner === owner);
  if (own >= 0) return { index: own, evicted: null, reusable: commonPrefixLength(slots[own]!.tokens, prompt) };
  let best = -1;
  let bestShared = -1;
  for (const [i, slot] of slots.entries()) {
    if (slot.owner !== null) continue;
    const shared = commonPrefixLength(slot.tokens, prompt);
    if (shared > bestShared) {
      best = i;
      bestShared = shared;
    }
  }
  if (best >= 0) return { index: best, evicted: null, reusable: bestShared };
  let oldest = 0;
  for (const [i, slot] of slots.entries()) if (slot.lastUsed < slots[oldest]!.lastUsed) oldest = i;
  return { index: oldest, evicted: slots[oldest]!.owner, reusable: commonPrefixLength(slots[oldest]!.tokens, prompt) };
}

/** The evaluators a prompt state decodes with: its target sequence, and the draft's. */
export interface SequenceEvaluators<E> {
  target: E;
  /** The draft's sequence paired with it (or a shared one when the draft has fewer), null without a draft. */
  draft: E | null;
}

/** A live sequence as Show Stats lists it. */
export interface SequenceReport {
  index: number;
  owner: string | null;
  tokens: number;
  bytes: number;
}

/** One prompt state's sequence, its evaluators and its bookkeeping. */
interface PromptState<E> extends SequenceSlot, SequenceEvaluators<E> {}

/**
 * The pair's KV sequences as prompt states: `acquire` gives an owner its sequence (taking one if it
 * has none), `release` frees an owner's (a window that went away), `report` lists them.
 */
export class PromptStates<E extends { readonly tokens: readonly Token[] }> {
  private readonly states: PromptState<E>[];
  private clock = 0;
  /** Sequences taken from an owner that still had one (the budget was full). */
  evictions = 0;

  constructor(
    targets: readonly E[],
    drafts: readonly E[] | null,
    private readonly bytesPerToken: number,
    private readonly log: (message: string) => void = () => undefined,
  ) {
    if (targets.length === 0) throw new Error('no KV sequence to decode on');
    this.states = targets.map((target, i) => ({
      target,
      // A draft with fewer sequences shares its first: its proposer syncs to each prompt (slower, still lossless).
      draft: drafts && drafts.length > 0 ? (drafts[i] ?? drafts[0]!) : null,
      owner: null,
      lastUsed: 0,
      get tokens() {
        return target.tokens;
      },
    }));
  }

  get size(): number {
    return this.states.length;
  }

  /**
   * The sequence `owner`'s prompt decodes on, now its own and the most recently used; `taken` says
   * whether it was not the owner's before, `evicted` whose it was (its cache still holds that
   * owner's prompt: the caller may save it first).
   */
  acquire(owner: string, prompt: readonly Token[]): SequenceEvaluators<E> & { taken: boolean; evicted: string | null } {
    const choice = chooseSlot(this.states, owner, prompt);
    const state = this.states[choice.index]!;
    const taken = state.owner !== owner;
    if (taken) {
      if (choice.evicted !== null) {
        this.evictions++;
        this.log(
          `KV sequence ${choice.index} (${state.tokens.length} tokens of ${describeOwner(choice.evicted)}) given to ${describeOwner(owner)}: all ${this.states.length} sequences were in use and it was the least recently used`,
        );
      }
      state.owner = owner;
    }
    state.lastUsed = ++this.clock;
    return { target: state.target, draft: state.draft, taken, evicted: choice.evicted };
  }

  /** Frees the sequences of every owner `matches` accepts (their caches stay, for a prompt that shares them). */
  release(matches: (owner: string) => boolean): void {
    for (const state of this.states) if (state.owner !== null && matches(state.owner)) state.owner = null;
  }

  /** Whether `owner` holds the sequence whose target evaluator is `target` (another owner may have taken it). */
  holds(owner: string, target: E): boolean {
    return this.states.some((s) => s.owner === owner && s.target === target);
  }

  /** Every sequence's evaluators (to empty or dispose them all). */
  all(): readonly SequenceEvaluators<E>[] {
    return this.states;
  }

  report(): SequenceReport[] {
    return this.states.map((s, index) => ({ index, owner: s.owner, tokens: s.tokens.length, bytes: Math.round(s.tokens.length * this.bytesPerToken) }));
  }
}

/** An owner as the log names it. */
export function describeOwner(owner: string): string {
  return owner === DEFAULT_OWNER ? 'the default prompt' : owner;
}
