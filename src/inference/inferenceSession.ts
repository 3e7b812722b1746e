import type { Llama, LlamaToken } from '../llama/llamaTypes';
import type { LoadedModelsInfo } from '../shared/backendInfo';
import type { AlternativesResult, CompletionRequest, LocalCompletionResult } from '../shared/completion';
import type { Token } from '../shared/decoding';
import { type DecoderStats, emptySpeculationStats } from '../shared/generationStats';
import type { ModelSettings, SpeculationSettings } from '../shared/settings';
import { NgramIndex } from '../ngram';
import { splitTrailingBlank, type PromptLayout, type PromptVocabulary } from '../prompt/fimPrompt';
import type { PromptTemplate } from '../prompt/templates';
import { DraftModelProposer } from '../speculation/draftModelProposer';
import { SpeculationPolicy } from '../speculation/policy';
import { LookaheadPools, LookaheadProposer } from '../speculation/lookaheadPool';
import { proposersFor } from '../speculation/modeProposers';
import { WindowDraftProposer } from '../speculation/windowDraft';
import { decode } from '../speculation/speculativeDecoder';
import { type BudgetClock, clampMaxTokens, requestStops, StopRules } from '../stopping/stopRules';
import { findAlternatives, RecentGreedy } from './completionAlternatives';
import { CompletionPrompts, type PromptRequest } from './completionPrompt';
import { disposeContext, type LoadedModel, type LoadedPair, loadPair, testAbortHook } from './loadedPair';
import type { RuntimeLog } from './llamaRuntime';
import { PromptSequences } from './promptSequences';
import { DEFAULT_OWNER } from './promptStates';
import { WindowDraftContext } from './windowDraftContext';
import { ContextGate } from './contextGate';
import { budgetStartsNow, type DecodeOverrides } from './decodeOverrides';
import { textProposers } from './documentNgrams';
import { NextEditModelSlot, type NextEditServing } from './nextEditModelSlot';
import { SessionNextEdits } from './sessionNextEdits';
import { replaysGraphs } from './treeVerification';

export { gpuLayersFor } from './loadedPair';
export { replaysGraphs } from './treeVerification';
export type { DecodeOverrides } from './decodeOverrides';
export { EXTRA_CONTEXT_KEY } from './completionPrompt';

/** A prompt like a user's: a few lines of code, the cursor inside a function body. */
const WARM_UP_PREFIX = 'export function sum(values: number[]): number {\n  let total = 0;\n  for (const value of values) {\n    total += ';

/** The warm-up's prompt state (freed once it ran). */
const WARM_UP_OWNER = 'warm-up';

export { DEFAULT_SPECULATION } from '../settings/declaredSettings';

/**
 * Everything that runs next to the models: loading, prompt layout, the speculative decoder, the
 * n-gram index of open documents. Lives in the worker process; tests and the benchmark drive it
 * directly.
 */
export class InferenceSession {
  readonly documents: NgramIndex;
  readonly policy: SpeculationPolicy;
  private speculation: SpeculationSettings;
  /**
   * The generation running (completion, alternatives), or null. The session queues nothing: the
   * worker's scheduler (worker/scheduler.ts) starts one at a time, and a direct caller
   * waits for each; a second one while one runs is a scheduling bug and throws.
   */
  private generating: Promise<unknown> | null = null;
  /**
   * Completions first: a next-edit generation evaluates between them (inference/contextGate.ts).
   * Each generation here takes it (`alone`); next edits (`nextEdits`) go through it between evaluations.
   */
  readonly gate = new ContextGate();
  /**
   * Where alternatives may branch off the greedy completion: anywhere in it, or only before its first
   * line with content is complete, so that each alternative shows another first line (the default:
   * branching anywhere mostly picks a later line, and the suggestions then read alike). Bench regime
   * 10 compares both (docs/BENCHMARK.md).
   */
  alternativesScope: 'completion' | 'firstLine' = 'firstLine';
  /** The FIM prompt's layout and extra context (inference/completionPrompt.ts). */
  private readonly prompts: CompletionPrompts;

  readonly llama: Llama;
  readonly target: LoadedModel;
  readonly draft: LoadedModel | null;
  readonly info: LoadedModelsInfo;
  readonly template: PromptTemplate;
  /** The KV sequences of the prompt states (window and task), and the saved states of evicted ones. */
  private readonly kv: PromptSequences;
  /** Next-edit requests and the next-edit model (inference/sessionNextEdits.ts, nextEditModelSlot.ts). */
  readonly nextEdits: SessionNextEdits;

  private constructor(pair: LoadedPair, speculation: SpeculationSettings, log: RuntimeLog) {
    ({ llama: this.llama, target: this.target, draft: this.draft, info: this.info, template: this.template } = pair);
    this.speculation = { ...speculation, graphReplay: replaysGraphs(pair.info) };
    this.policy = new SpeculationPolicy(this.speculation);
    const target = this.target;
    this.documents = new NgramIndex({
      minN: speculation.ngramMinMatch,
      maxN: speculation.ngramMaxMatch,
      tokenize: (text: string): Token[] => target.model.tokenize(text, false),
    });
    this.prompts = new CompletionPrompts(target, this.template, this.documents);
    this.kv = new PromptSequences(pair, log);
    const targetServing: NextEditServing = { model: target, sequenceFor: (o, p) => this.kv.for(o, p), holds: (o, t) => this.kv.states.holds(o, t), targetVocabulary: true };
    const slot = new NextEditModelSlot(pair, targetServing, speculation.maxProposal + 1, log);
    this.nextEdits = new SessionNextEdits(slot, this, () => ({ speculation: this.speculation, policy: this.policy }));
  }

  /**
   * Loads the pair (inference/loadedPair.ts: the GPU when asked and usable, else the CPU) with as
   * many KV sequences as the memory budget allows. `onNativeLoad` is told each model file just
   * before llama.cpp reads it (a native abort then is that file's).
   */
  static async load(settings: ModelSettings, speculation: SpeculationSettings, log: RuntimeLog, onNativeLoad?: (file: string) => void): Promise<InferenceSession> {
    return new InferenceSession(await loadPair(settings, speculation, log, onNativeLoad), speculation, log);
  }

  /** The live KV sequences: whose prompt each holds, its tokens and their bytes (Show Stats); the saved states. */
  sequences(): ReturnType<PromptSequences['report']> {
    return this.kv.report();
  }

  /** Frees the sequences of owners `matches` accepts (a window that went away): others may take them. */
  releaseOwners(matches: (owner: string) => boolean): void {
    this.kv.release(matches);
    this.nextEdits.models.releaseOwners(matches);
  }

  configure(speculation: Partial<SpeculationSettings>): void {
    // The policy holds the same object, so it sees the change at its next step.
    Object.assign(this.speculation, speculation);
  }

  get vocabulary(): PromptVocabulary {
    return this.prompts.vocabulary;
  }

  /** How the FIM prompt is split (see PromptLayout); the benchmark compares both. */
  get promptLayout(): PromptLayout {
    return this.prompts.layout;
  }

  set promptLayout(layout: PromptLayout) {
    this.prompts.layout = layout;
  }

  detokenize(tokens: readonly Token[]): string {
    return this.target.model.detokenize(tokens as readonly LlamaToken[], false);
  }

  /** One generation at a time: the caller waits for the previous one (a second one at once throws). */
  complete(request: CompletionRequest, signal?: AbortSignal, callerOverrides: DecodeOverrides = {}): Promise<LocalCompletionResult> {
    // The time budget counts from the call, the wait for the gate included.
    const overrides = budgetStartsNow(callerOverrides);
    return this.alone(async () => {
      const speculation = overrides.speculation ?? this.speculation;
      const { tokens: prompt, extraContext } = this.prompts.tokens(request, speculation.maxProposal);
      this.prompts.indexExtraContext(request);
      testAbortHook('generation', this.target.info, this.draft?.info);
      const result = await this.decodeAfter(request, prompt, [], signal, overrides);
      if (extraContext) result.stats.extraContext = extraContext;
      if (result.stats.stopReason !== 'abort') this.recentGreedy.remember(prompt, request, result);
      return result;
    });
  }

  /**
   * Up to `count` alternatives to the greedy completion of `request`: at the position of
   * that completion where the target was least certain (smallest top-two logit margin), the target's
   * greedy continuation after each of the next most likely tokens there, decoded as a completion is
   * (the request's mode: n-grams, draft, lookahead), the KV cache reused up to the branch point.
   * Lossless like a completion: each is plain greedy decoding after greedy[0..i) + its token.
   * One generation at a time, like a completion; the signal stops it between steps (what was done is returned).
   */
  alternatives(request: CompletionRequest, count: number, signal?: AbortSignal, callerOverrides: DecodeOverrides = {}): Promise<AlternativesResult> {
    // One time budget for all of them, from the call (VS Code shows them together).
    const overrides = budgetStartsNow(callerOverrides);
    const speculation = overrides.speculation ?? this.speculation;
    return this.alone(() =>
      findAlternatives(
        {
          scope: this.alternativesScope,
          recentGreedy: this.recentGreedy,
          promptTokens: () => {
            this.prompts.indexExtraContext(request);
            return this.prompts.tokens(request, speculation.maxProposal).tokens;
          },
          decodeAfter: (prompt, forced) => this.decodeAfter(request, prompt, forced, signal, overrides),
          targetSequence: async (prompt) => (await this.kv.for(overrides.owner ?? DEFAULT_OWNER, prompt)).target,
          detokenize: (tokens) => this.detokenize(tokens),
          isEndToken: (token) => this.isEndToken(token),
        },
        request,
        count,
        signal,
      ),
    );
  }

  /**
   * The completion of `request` whose first tokens are `forced` (then greedy, in the request's mode):
   * what an alternative is, for tests that check one against plain decoding.
   */
  completeAfter(request: CompletionRequest, forced: readonly Token[], signal?: AbortSignal, overrides: DecodeOverrides = {}): Promise<LocalCompletionResult> {
    return this.alone(() => this.decodeAfter(request, this.prompts.tokens(request, (overrides.speculation ?? this.speculation).maxProposal).tokens, forced, signal, overrides));
  }

  /**
   * Runs a generation, the only one on the session, with the context to itself (a next-edit
   * generation parks before its next evaluation): a second while one runs throws at once (the
   * scheduler serialises them; overlapping ones would interleave on the same KV sequences). It counts
   * as running from the call, while it waits for the gate too: dispose waits for it.
   */
  private async alone<T>(work: () => Promise<T>): Promise<T> {
    if (this.generating) throw new Error('InferenceSession: a generation started while another was running (a scheduling bug)');
    let ended!: () => void;
    const generation = new Promise<void>((resolve) => (ended = resolve));
    this.generating = generation;
    try {
      const release = await this.gate.pause();
      try {
        return await work();
      } finally {
        release();
      }
    } finally {
      // Before the caller sees the answer: its next generation may start at once.
      if (this.generating === generation) this.generating = null;
      ended();
    }
  }

  /** Greedy completions of recent requests: alternatives are asked for right after the one the user saw. */
  private readonly recentGreedy = new RecentGreedy();

  /** llama.cpp's end-of-generation tokens and the template's stop tokens: a completion ends at one. */
  isEndToken(token: Token): boolean {
    return this.target.model.isEogToken(token as LlamaToken) || this.template.stopIds.has(token);
  }

  /**
   * One short completion through the real path (target and draft, prompt and a few decode steps),
   * run by the worker right after a load: the first evaluation of a context allocates its compute
   * buffers and touches the weights, which made the first completion after a load take ~1.2 s where
   * later ones took ~0.25 s. The worker does not wait for it to answer the load, and a real request
   * aborts it (it stops at its next step; the work done stays done). Resolves with its duration.
   */
  async warmUp(signal?: AbortSignal): Promise<number> {
    const started = performance.now();
    // A policy of its own: the cold steps' costs must not teach the session's policy that speculation is dear.
    // Its own prompt state, freed after: the first window's prompt then takes a sequence nobody owns.
    const overrides: DecodeOverrides = { policy: new SpeculationPolicy({ ...this.speculation }), lookahead: false, owner: WARM_UP_OWNER };
    try {
      await this.complete({ prefix: WARM_UP_PREFIX, suffix: '\n}\n', maxTokens: 4, mode: this.draft ? 'hybrid' : 'plain', stopAtBlockEnd: false }, signal, overrides);
    } finally {
      this.kv.states.release((owner) => owner === WARM_UP_OWNER);
    }
    return performance.now() - started;
  }

  /** Remembers an accepted completion as n-gram material for later requests. */
  addAccepted(key: string, text: string): void {
    if (text) this.documents.addSequence(key, this.target.model.tokenize(text, false));
  }

  /** Empties both KV caches (the benchmark starts every measured completion cold). */
  async resetCaches(): Promise<void> {
    for (const state of this.kv.states.all()) {
      await state.target.truncate(0);
      await state.draft?.truncate(0);
    }
  }

  /** The prompt tokens a request is decoded from (without the prefix's trailing blank: see splitTrailingBlank). */
  promptFor(request: PromptRequest): Token[] {
    return this.prompts.tokens(request, this.speculation.maxProposal).tokens;
  }

  /** A second context of the target for self-speculation on a KV window (made on first use). */
  private readonly windowContext = new WindowDraftContext();

  /**
   * A draft for one completion: the target itself on a window of about `window` tokens of the prompt
   * (speculation/windowDraft.ts). Measured by the benchmark (bench/windowDraft.ts); not a setting yet.
   */
  async windowDraft(request: CompletionRequest, window: number): Promise<WindowDraftProposer> {
    const evaluator = await this.windowContext.evaluatorFor(this.target, window);
    return new WindowDraftProposer(evaluator, this.speculation.draftMinConfidence, this.promptFor(request).length, window);
  }

  /** The target's outputs after rejected guesses, per document (the 16 most recently completed in): they recur in later completions there. */
  private readonly lookaheadPools = new LookaheadPools(16);

  /** The stop rules of a request, the same for our decoder and the stock baseline (`clock`: its time budget's). */
  stopRulesFor(request: CompletionRequest, clock?: BudgetClock): StopRules {
    // The generated text follows the prompt's prefix, which ends before the typed blank.
    const promptPrefix = splitTrailingBlank(request.prefix).prefix;
    return new StopRules({
      detokenize: (tokens) => this.detokenize(tokens),
      // llama.cpp's end-of-generation set, and the template's own stop tokens (a model that writes
      // <|file_sep|> or a FIM token has left the middle).
      isEndToken: (token) => this.isEndToken(token),
      maxTokens: clampMaxTokens(request.maxTokens),
      ...requestStops(request, promptPrefix, clock),
    });
  }

  /**
   * Greedy decoding of `request` (its mode's speculation, its stop rules) after the prompt and the
   * `forced` tokens, which count as the completion's first tokens: an alternative is the target's
   * greedy continuation after greedy[0..i) + another token, and its stop rules and text are those of
   * the whole completion (tokens can split characters). With no forced tokens, a plain completion.
   */
  private async decodeAfter(
    request: CompletionRequest,
    prompt: readonly Token[],
    forced: readonly Token[],
    signal: AbortSignal | undefined,
    overrides: DecodeOverrides,
  ): Promise<LocalCompletionResult> {
    const speculation = overrides.speculation ?? this.speculation;
    // The owner's KV sequence (and its draft's): its cache holds its previous prompt, whatever others asked since.
    const state = await this.kv.for(overrides.owner ?? DEFAULT_OWNER, prompt);
    const draft = overrides.draft ?? (state.draft ? new DraftModelProposer(state.draft, speculation.draftMinConfidence) : undefined);
    // Without a usable draft, hybrid is n-gram only (with the window copy, when there is one) and draft is plain.
    const mode = request.mode === 'draft' || request.mode === 'hybrid' ? (draft ? request.mode : request.mode === 'hybrid' ? (overrides.copy ? 'hybrid' : 'ngram') : 'plain') : request.mode;
    const stop = this.stopRulesFor(request, overrides.budgetClock);
    const policy = overrides.policy ?? this.policy;
    const { blank } = splitTrailingBlank(request.prefix);
    // The model wrote the blank the user had typed (left out of the prompt): the ghost text starts after it.
    const shown = () => (blank && stop.finalText.startsWith(blank) ? stop.finalText.slice(blank.length) : stop.finalText);
    let forcedStop = false;
    for (const token of forced) forcedStop ||= stop.push(token) !== undefined;
    if (forcedStop) {
      // The forced tokens end the completion themselves (a newline in a single-line request): nothing to decode.
      const stats: DecoderStats = {
        promptTokens: prompt.length + forced.length,
        reusedPromptTokens: 0,
        generatedTokens: stop.tokens.length,
        promptMs: 0,
        timeToFirstTokenMs: 0,
        totalMs: 0,
        stopReason: stop.decision!.reason,
        speculation: emptySpeculationStats(mode),
      };
      return { text: shown(), tokens: [...stop.tokens], stats };
    }
    try {
      const stats = await decode({
        mode,
        target: state.target,
        prompt: forced.length ? [...prompt, ...forced] : prompt,
        stop,
        // The caller's own sources first (DecodeOverrides.proposers), the mode's, then the rivals (extraProposers).
        proposers: [
          ...(overrides.proposers ?? []),
          ...proposersFor(mode, [
            overrides.copy,
            // Beside the draft, a suffix guess is offered only when it is as likely as the draft's typical one.
            ...textProposers(this.documents, request.documentKey, speculation, policy, overrides, mode === 'hybrid' && draft ? { floor: () => policy.acceptance.rate('draft') } : {}),
            (overrides.lookahead ?? speculation.lookahead) ? new LookaheadProposer(this.lookaheadPools.for(request.documentKey)) : undefined,
            draft,
          ]),
          ...(overrides.extraProposers ?? []),
        ],
        policy,
        signal,
        profile: overrides.profile,
      });
      return { text: shown(), tokens: [...stop.tokens], stats };
    } catch (error) {
      // The library's state is unknown after a failed evaluation: start the caches afresh.
      await state.target.reset().catch(() => undefined);
      await state.draft?.reset().catch(() => undefined);
      throw error;
    }
  }

  async dispose(): Promise<void> {
    // A generation still running (aborted, it ends at its next step) must not see its contexts freed.
    await this.generating;
    // Every step is tried: one that fails must not leave the rest loaded (in the shared worker they
    // would stay until it exits). The first failure is reported once all were tried.
    const failures: unknown[] = [];
    const attempt = async (step: () => Promise<void> | undefined) => {
      try {
        await step();
      } catch (error) {
        failures.push(error);
      }
    };
    // Next edits: once the one running ends.
    await attempt(() => this.nextEdits.dispose());
    await attempt(() => this.windowContext.dispose());
    this.kv.dispose();
    for (const evaluator of this.draft?.sequences ?? []) await attempt(() => evaluator.dispose());
    for (const evaluator of this.target.sequences) await attempt(() => evaluator.dispose());
    await attempt(() => disposeContext(this.draft));
    await attempt(() => disposeContext(this.target));
    await attempt(() => this.draft?.model.dispose());
    await attempt(() => this.target.model.dispose());
    if (failures.length) throw failures[0];
  }
}
