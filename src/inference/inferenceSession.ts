import type { Llama, LlamaToken } from './llamaTypes';
import {
  type AlternativesResult,
  type CompletionRequest,
  type DecoderStats,
  emptySpeculationStats,
  type GenerationStats,
  type LocalCompletionResult,
  type LoadedModelsInfo,
  type ModelSettings,
  type SpeculationSettings,
  type Token,
} from '../shared/types';
import { NgramIndex, findInSequence } from '../ngram';
import { ANCHOR_LINE_GROUP, buildPrompt, splitTrailingBlank, type PromptLayout, type PromptVocabulary } from '../prompt/fimPrompt';
import type { PromptTemplate } from '../prompt/templates';
import { buildPromptContext } from '../prompt/contextBlock';
import { DraftModelProposer } from '../speculation/draftModelProposer';
import { SpeculationPolicy } from '../speculation/policy';
import type { DraftProposer, NgramProposer, Proposal } from '../speculation/proposers';
import { LookaheadPool } from '../speculation/lookaheadPool';
import { WINDOW_STEP, WindowDraftProposer } from '../speculation/windowDraft';
import { decode, type StepProfile } from '../speculation/speculativeDecoder';
import { chooseBranchPoint } from '../speculation/branchPoint';
import { commonPrefixLength, PROMPT_CHUNK, type RankedNext } from '../speculation/greedyEvaluator';
import { requestStops, StopRules } from '../stopping/stopRules';
import { LlamaSequenceEvaluator } from './llamaSequenceEvaluator';
import type { AttachedThreadpool } from './nativeAddon';
import type { LlamaContext } from './llamaTypes';
import { createContext, disposeContext, type LoadedModel, type LoadedPair, loadPair, testAbortHook } from './loadedPair';
import type { RuntimeLog } from './llamaRuntime';
import { DEFAULT_OWNER, PromptStates, type SequenceEvaluators, type SequenceReport } from './promptStates';
import { kvBytesPerToken } from './sequenceBudget';

export { gpuLayersFor } from './loadedPair';

/** For the benchmark: a proposer of controlled accuracy in place of the draft model, its own policy. */
export interface DecodeOverrides {
  draft?: DraftProposer;
  policy?: SpeculationPolicy;
  /** Where each decode step's time goes (bench/profile.ts). */
  profile?: StepProfile;
  /** The lookahead pool on or off whatever the settings say (the benchmark's side-by-side modes). */
  lookahead?: boolean;
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
}

/** Tokens a window draft's context keeps room for beyond the window (the completion and its proposals). */
const MAX_WINDOW_GENERATION = 320;

/** Greedy completions remembered for alternatives (the most recent requests'). */
const RECENT_GREEDY = 8;

/**
 * Tokens ranked at the branch point beyond those asked for: a candidate whose completion reads as
 * the greedy one (another tokenization of the same text) is skipped for the next.
 */
const ALTERNATIVE_SPARES = 2;

/** Positions evaluated per batch when ranking along a greedy completion (every one an output). */
const RANK_BATCH = 256;

/** Documents whose lookahead pools are kept (the most recently completed in). */
const LOOKAHEAD_DOCUMENTS = 16;

/** What a prompt is laid out from. */
type PromptRequest = Pick<CompletionRequest, 'prefix' | 'suffix' | 'maxTokens' | 'extraContext' | 'languageId'>;

/** A prompt like a user's: a few lines of code, the cursor inside a function body. */
const WARM_UP_PREFIX = 'export function sum(values: number[]): number {\n  let total = 0;\n  for (const value of values) {\n    total += ';

/** The warm-up's prompt state (freed once it ran). */
const WARM_UP_OWNER = 'warm-up';

/** N-gram index keys of extra-context chunks (documents are keyed by their uri). */
export const EXTRA_CONTEXT_KEY = 'extra-context:';

export { DEFAULT_SPECULATION } from '../engine/declaredSettings';

/**
 * Everything that runs next to the models: loading, prompt layout, the speculative decoder, the
 * n-gram index of open documents. Lives in the worker process; tests and the benchmark drive it
 * directly.
 */
export class InferenceSession {
  readonly documents: NgramIndex;
  readonly policy: SpeculationPolicy;
  private speculation: SpeculationSettings;
  private running: Promise<unknown> = Promise.resolve();
  /**
   * Where alternatives may branch off the greedy completion: anywhere in it, or only before its first
   * line with content is complete, so that each alternative shows another first line (the default).
   * Bench regime 10 compares both (bench/results/2026-11-25T05-04-28/, 80 tasks): branching anywhere,
   * the smallest margin was mostly in a later line (median token 7-8) and 39-43% of the answers showed
   * another first line; first-line scope 84-96%, and on the v3 pair the file's real first line was
   * among the 3 suggestions on 8% of the tasks vs 1% for the greedy one alone (anywhere: 1%), in no
   * more time (only the first line's positions are ranked: median 280 vs 301 ms on v3).
   */
  alternativesScope: 'completion' | 'firstLine' = 'firstLine';
  /** How the FIM prompt is split (see PromptLayout); the benchmark compares both. */
  promptLayout: PromptLayout = 'lineAnchored';

  readonly llama: Llama;
  readonly target: LoadedModel;
  readonly draft: LoadedModel | null;
  readonly info: LoadedModelsInfo;
  readonly template: PromptTemplate;
  /** The KV sequences, one per prompt state (window and task). */
  private readonly states: PromptStates<LlamaSequenceEvaluator>;

  private constructor(pair: LoadedPair, speculation: SpeculationSettings, log: RuntimeLog) {
    ({ llama: this.llama, target: this.target, draft: this.draft, info: this.info, template: this.template } = pair);
    this.speculation = { ...speculation };
    this.policy = new SpeculationPolicy(this.speculation);
    const target = this.target;
    this.documents = new NgramIndex({
      minN: speculation.ngramMinMatch,
      maxN: speculation.ngramMaxMatch,
      tokenize: (text: string): Token[] => target.model.tokenize(text, false),
    });
    this.states = new PromptStates(this.target.sequences, this.draft?.sequences ?? null, kvBytesPerToken(this.target.info), (message) => log('info', message));
  }

  /**
   * Loads the pair (inference/loadedPair.ts: the GPU when asked and usable, else the CPU) with as
   * many KV sequences as the memory budget allows. `onNativeLoad` is told each model file just
   * before llama.cpp reads it (a native abort then is that file's).
   */
  static async load(settings: ModelSettings, speculation: SpeculationSettings, log: RuntimeLog, onNativeLoad?: (file: string) => void): Promise<InferenceSession> {
    return new InferenceSession(await loadPair(settings, speculation, log, onNativeLoad), speculation, log);
  }

  /** The live KV sequences: whose prompt each holds, its tokens and their bytes (Show Stats). */
  sequences(): { sequences: SequenceReport[]; evictions: number } {
    return { sequences: this.states.report(), evictions: this.states.evictions };
  }

  /** Frees the sequences of owners `matches` accepts (a window that went away): others may take them. */
  releaseOwners(matches: (owner: string) => boolean): void {
    this.states.release(matches);
  }

  configure(speculation: Partial<SpeculationSettings>): void {
    // The policy holds the same object, so it sees the change at its next step.
    Object.assign(this.speculation, speculation);
  }

  get vocabulary(): PromptVocabulary {
    const info = this.target.info;
    return {
      tokenize: (text) => this.target.model.tokenize(text, false),
      bos: info.addBos && info.bos !== null ? info.bos : null,
      fim: info.fim,
      template: this.template,
    };
  }

  detokenize(tokens: readonly Token[]): string {
    return this.target.model.detokenize(tokens as readonly LlamaToken[], false);
  }

  /** One generation at a time: a request waits for the previous one (which the caller aborts). */
  complete(request: CompletionRequest, signal?: AbortSignal, overrides: DecodeOverrides = {}): Promise<LocalCompletionResult> {
    const run = this.running.then(() => this.completeNow(request, signal, overrides));
    this.running = run.catch(() => undefined);
    return run;
  }

  /**
   * Up to `count` alternatives to the greedy completion of `request` (issue #32): at the position of
   * that completion where the target was least certain (smallest top-two logit margin), the target's
   * greedy continuation after each of the next most likely tokens there, decoded as a completion is
   * (the request's mode: n-grams, draft, lookahead), the KV cache reused up to the branch point.
   * Lossless like a completion: each is plain greedy decoding after greedy[0..i) + its token.
   * Queued like a completion; the signal stops it between steps (what was done is returned).
   */
  alternatives(request: CompletionRequest, count: number, signal?: AbortSignal, overrides: DecodeOverrides = {}): Promise<AlternativesResult> {
    const run = this.running.then(() => this.alternativesNow(request, count, signal, overrides));
    this.running = run.catch(() => undefined);
    return run;
  }

  /**
   * The completion of `request` whose first tokens are `forced` (then greedy, in the request's mode):
   * what an alternative is, for tests that check one against plain decoding.
   */
  completeAfter(request: CompletionRequest, forced: readonly Token[], signal?: AbortSignal, overrides: DecodeOverrides = {}): Promise<LocalCompletionResult> {
    const run = this.running.then(() => this.decodeAfter(request, this.layoutPrompt(request, overrides.speculation ?? this.speculation).tokens, forced, signal, overrides));
    this.running = run.catch(() => undefined);
    return run;
  }

  /**
   * The greedy completions of recent requests, by prompt and stop rules: alternatives are asked for
   * right after the completion the user saw, whose tokens need not be decoded again.
   */
  private readonly recentGreedy: { key: string; tokens: Token[]; text: string }[] = [];

  /** What decides a completion's tokens besides the model: the prompt and the stop rules. */
  private greedyKey(prompt: readonly Token[], request: CompletionRequest): string {
    const { maxTokens, stop, singleLine, maxLines, stopAtBlockEnd, languageId, tabSize, suffix, prefix } = request;
    // The prefix's end and the suffix decide where a block ends (the prompt may hold only part of them).
    const stops = { maxTokens: clampMaxTokens(maxTokens), stop, singleLine, maxLines, stopAtBlockEnd, ...(stopAtBlockEnd ? { languageId, tabSize, suffix, prefix } : {}) };
    return `${JSON.stringify(stops)}|${prompt.join(',')}`;
  }

  private rememberGreedy(prompt: readonly Token[], request: CompletionRequest, result: LocalCompletionResult): void {
    const key = this.greedyKey(prompt, request);
    const at = this.recentGreedy.findIndex((e) => e.key === key);
    if (at >= 0) this.recentGreedy.splice(at, 1);
    this.recentGreedy.push({ key, tokens: [...result.tokens], text: result.text });
    if (this.recentGreedy.length > RECENT_GREEDY) this.recentGreedy.shift();
  }

  private async alternativesNow(request: CompletionRequest, count: number, signal: AbortSignal | undefined, overrides: DecodeOverrides): Promise<AlternativesResult> {
    const started = performance.now();
    const done = (result: Omit<AlternativesResult, 'totalMs'>): AlternativesResult => ({ ...result, totalMs: performance.now() - started });
    if (count < 1) return done({ completions: [], limitedBy: 'no alternatives asked for' });
    const speculation = overrides.speculation ?? this.speculation;
    const { tokens: prompt } = this.layoutPrompt(request, speculation);
    this.indexExtraContext(request);
    // The greedy completion: remembered from the request the user saw, else decoded (the same tokens).
    let greedy = this.recentGreedy.find((e) => e.key === this.greedyKey(prompt, request));
    if (!greedy) {
      const first = await this.decodeAfter(request, prompt, [], signal, overrides);
      if (first.stats.stopReason === 'abort') return done({ completions: [], limitedBy: 'cancelled' });
      this.rememberGreedy(prompt, request, first);
      greedy = this.recentGreedy.at(-1)!;
    }
    if (greedy.tokens.length === 0) return done({ completions: [], limitedBy: 'the greedy completion is empty' });
    let ranked: RankedNext[] | null;
    const state = this.states.acquire(overrides.owner ?? DEFAULT_OWNER, prompt);
    try {
      ranked = await this.rankAlong(state.target, prompt, greedy.tokens.slice(0, this.branchablePositions(greedy.tokens)), count + ALTERNATIVE_SPARES, signal);
    } catch (error) {
      // As after a failed completion: the library's state is unknown, start the cache afresh.
      await state.target.reset().catch(() => undefined);
      throw error;
    }
    if (!ranked) return done({ completions: [], limitedBy: 'cancelled' });
    const { blank } = splitTrailingBlank(request.prefix);
    // Only the positions ranked (with the first-line scope, those before the first line is complete).
    const branch = chooseBranchPoint(greedy.tokens.slice(0, ranked.length), ranked, {
      isEndToken: (token) => this.isEndToken(token),
      allows: (position, token) => {
        // Where the greedy completion writes the blank the user typed (the ghost text starts after it),
        // an alternative must too: one that does not would rewrite text left of the cursor.
        if (!blank) return true;
        const writesBlank = (text: string) => text.startsWith(blank) || blank.startsWith(text);
        return !writesBlank(this.detokenize(greedy.tokens.slice(0, position + 1))) || writesBlank(this.detokenize([...greedy.tokens.slice(0, position), token]));
      },
    });
    if (!branch) return done({ completions: [], limitedBy: 'the target offers no other token along the greedy completion' });
    const completions: LocalCompletionResult[] = [];
    // Texts already offered: another tokenization of the same text (or an empty one) is no alternative.
    const seen = new Set([greedy.text, '']);
    const forcedPrefix = greedy.tokens.slice(0, branch.tokenIndex);
    for (const token of branch.candidates) {
      if (completions.length >= count) break;
      if (signal?.aborted) break;
      const alternative = await this.decodeAfter(request, prompt, [...forcedPrefix, token], signal, overrides);
      if (alternative.stats.stopReason === 'abort') break;
      if (seen.has(alternative.text)) continue;
      seen.add(alternative.text);
      completions.push(alternative);
    }
    const limitedBy = signal?.aborted
      ? 'cancelled'
      : completions.length < count
        ? `the target's ${branch.candidates.length} next most likely tokens at the branch point gave ${completions.length} distinct completions`
        : undefined;
    return done({ completions, branch: { tokenIndex: branch.tokenIndex, margin: branch.margin }, ...(limitedBy ? { limitedBy } : {}) });
  }

  /**
   * How many of the greedy completion's first positions a branch may replace: all of them, or with
   * the first-line scope those up to the token that completes the first line with content (that
   * token included: another one there changes how the line ends). Only these are ranked.
   */
  private branchablePositions(greedy: readonly Token[]): number {
    if (this.alternativesScope !== 'firstLine') return greedy.length;
    for (let position = 1; position < greedy.length; position++) {
      if (/\S[^\n]*\n/.test(this.detokenize(greedy.slice(0, position)))) return position;
    }
    return greedy.length;
  }

  /**
   * The top `top` tokens and margin at each position of the greedy completion `greedy` after
   * `prompt` (ranked[j] predicts greedy[j]): the prompt's cached KV is reused, the last prompt token
   * and greedy[0..n-1) are evaluated again with an output at every position, in batches (the abort
   * checked in between). Null when aborted. The cache then holds prompt + greedy[0..n-1).
   */
  private async rankAlong(evaluator: LlamaSequenceEvaluator, prompt: readonly Token[], greedy: readonly Token[], top: number, signal: AbortSignal | undefined): Promise<RankedNext[] | null> {
    const keep = Math.min(commonPrefixLength(evaluator.tokens, prompt), prompt.length - 1);
    await evaluator.truncate(keep);
    for (let at = keep; at < prompt.length - 1; at += PROMPT_CHUNK) {
      if (signal?.aborted) return null;
      await evaluator.append(prompt.slice(at, Math.min(at + PROMPT_CHUNK, prompt.length - 1)), 0);
    }
    const input = [prompt[prompt.length - 1], ...greedy.slice(0, -1)];
    // Every position of a batch is an output: batches within the context's batch size.
    const batch = Math.max(1, Math.min(RANK_BATCH, evaluator.capacity));
    const ranked: RankedNext[] = [];
    for (let at = 0; at < input.length; at += batch) {
      if (signal?.aborted) return null;
      const chunk = input.slice(at, at + batch);
      ranked.push(...(await evaluator.appendRanked(chunk, chunk.length, top)));
    }
    return ranked;
  }

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
      this.states.release((owner) => owner === WARM_UP_OWNER);
    }
    return performance.now() - started;
  }

  /** Remembers an accepted completion as n-gram material for later requests. */
  addAccepted(key: string, text: string): void {
    if (text) this.documents.addSequence(key, this.target.model.tokenize(text, false));
  }

  /** Empties both KV caches (the benchmark starts every measured completion cold). */
  async resetCaches(): Promise<void> {
    for (const state of this.states.all()) {
      await state.target.truncate(0);
      await state.draft?.truncate(0);
    }
  }

  /** The prompt tokens a request is decoded from (without the prefix's trailing blank: see splitTrailingBlank). */
  promptFor(request: PromptRequest): Token[] {
    return this.layoutPrompt(request).tokens;
  }

  /** The prompt's tokens and what its extra context showed (for the completion's stats). */
  private layoutPrompt(request: PromptRequest, speculation = this.speculation): { tokens: Token[]; extraContext: GenerationStats['extraContext'] } {
    const maxTokens = clampMaxTokens(request.maxTokens);
    // Every sequence holds the same number of cells.
    const capacity = this.target.evaluator.capacity;
    const budget = capacity - maxTokens - speculation.maxProposal - 2;
    if (budget < 8) throw new Error(`context size ${capacity} is too small for ${maxTokens} new tokens`);
    const extra = request.extraContext;
    // The file's own text matters most: other files get at most a third of the prompt.
    const context = extra ? buildPromptContext(this.template, this.tokenizeChunk, extra, Math.min(extra.maxTokens, Math.floor(budget / 3)), request.languageId) : undefined;
    const tokens = buildPrompt(this.vocabulary, splitTrailingBlank(request.prefix).prefix, request.suffix, budget, this.promptLayout, ANCHOR_LINE_GROUP, context).tokens;
    const extraContext = context?.files ? { files: context.files, tokens: context.beforePrompt.length + context.afterPrefixToken.length, repoLevel: context.beforePrompt.length > 0 } : undefined;
    return { tokens, extraContext };
  }

  /**
   * The extra context's chunks go into the n-gram index too (as llama.vscode's do), under their own
   * keys: they stay there after their files are closed, as long as the ring keeps them. Indexed only
   * when a chunk's text changed since the last request.
   */
  private indexExtraContext(request: CompletionRequest): void {
    for (const file of request.extraContext?.files ?? []) {
      const key = `${EXTRA_CONTEXT_KEY}${file.path}`;
      if (this.documents.documentText(key) !== file.text) this.documents.setDocument(key, file.text);
    }
  }

  /** A second context of the target for self-speculation on a KV window (made on first use). */
  private windowContext: { context: LlamaContext; threadpool: AttachedThreadpool | { error: string }; evaluator: LlamaSequenceEvaluator; size: number } | null = null;

  /**
   * A draft for one completion: the target itself on a window of about `window` tokens of the prompt
   * (speculation/windowDraft.ts). Measured by the benchmark (bench/windowDraft.ts); not a setting yet.
   */
  async windowDraft(request: CompletionRequest, window: number): Promise<WindowDraftProposer> {
    const size = window + WINDOW_STEP + MAX_WINDOW_GENERATION;
    if (!this.windowContext || this.windowContext.size < size) {
      await this.windowContext?.evaluator.dispose();
      await disposeContext(this.windowContext);
      const { context, threadpool } = await createContext(this.target.model, {
        contextSize: size,
        threads: this.target.context.currentThreads,
        batchSize: Math.min(size, 512),
        flashAttention: this.target.attention.flashAttention,
      });
      this.windowContext = { context, threadpool, evaluator: new LlamaSequenceEvaluator(context.getSequence(), this.target.model), size };
    }
    return new WindowDraftProposer(this.windowContext.evaluator, this.speculation.draftMinConfidence, this.promptFor(request).length, window);
  }

  /** The target's outputs after rejected guesses, per document: they recur in later completions there. */
  private readonly lookaheadPools = new Map<string, LookaheadPool>();

  private lookaheadPool(documentKey: string | undefined): LookaheadPool {
    const key = documentKey ?? '';
    let pool = this.lookaheadPools.get(key);
    if (pool) this.lookaheadPools.delete(key);
    else pool = new LookaheadPool();
    this.lookaheadPools.set(key, pool);
    if (this.lookaheadPools.size > LOOKAHEAD_DOCUMENTS) this.lookaheadPools.delete(this.lookaheadPools.keys().next().value as string);
    return pool;
  }

  /** Tokens of extra-context text, cached: the same chunks come with every keystroke. */
  private readonly chunkTokens = new Map<string, Token[]>();
  private readonly tokenizeChunk = (text: string): Token[] => {
    let tokens = this.chunkTokens.get(text);
    if (!tokens) {
      tokens = this.target.model.tokenize(text, false) as Token[];
      if (this.chunkTokens.size >= 128) this.chunkTokens.delete(this.chunkTokens.keys().next().value!);
      this.chunkTokens.set(text, tokens);
    }
    return tokens;
  };

  /** The stop rules of a request, the same for our decoder and the stock baseline. */
  stopRulesFor(request: CompletionRequest): StopRules {
    // The generated text follows the prompt's prefix, which ends before the typed blank.
    const promptPrefix = splitTrailingBlank(request.prefix).prefix;
    return new StopRules({
      detokenize: (tokens) => this.detokenize(tokens),
      // llama.cpp's end-of-generation set, and the template's own stop tokens (a model that writes
      // <|file_sep|> or a FIM token has left the middle).
      isEndToken: (token) => this.isEndToken(token),
      maxTokens: clampMaxTokens(request.maxTokens),
      ...requestStops(request, promptPrefix),
    });
  }

  private async completeNow(request: CompletionRequest, signal: AbortSignal | undefined, overrides: DecodeOverrides): Promise<LocalCompletionResult> {
    const speculation = overrides.speculation ?? this.speculation;
    const { tokens: prompt, extraContext } = this.layoutPrompt(request, speculation);
    this.indexExtraContext(request);
    testAbortHook('generation', this.target.info, this.draft?.info);
    const result = await this.decodeAfter(request, prompt, [], signal, overrides);
    if (extraContext) result.stats.extraContext = extraContext;
    if (result.stats.stopReason !== 'abort') this.rememberGreedy(prompt, request, result);
    return result;
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
    const state: SequenceEvaluators<LlamaSequenceEvaluator> = this.states.acquire(overrides.owner ?? DEFAULT_OWNER, prompt);
    const draft = overrides.draft ?? (state.draft ? new DraftModelProposer(state.draft, speculation.draftMinConfidence) : undefined);
    // Without a usable draft, hybrid is n-gram only and draft is plain.
    const mode = request.mode === 'draft' || request.mode === 'hybrid' ? (draft ? request.mode : request.mode === 'hybrid' ? 'ngram' : 'plain') : request.mode;
    const stop = this.stopRulesFor(request);
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
        ngram: this.ngramProposer(request.documentKey, speculation),
        draft,
        policy: overrides.policy ?? this.policy,
        signal,
        profile: overrides.profile,
        lookahead: (overrides.lookahead ?? speculation.lookahead) ? this.lookaheadPool(request.documentKey) : undefined,
      });
      return { text: shown(), tokens: [...stop.tokens], stats };
    } catch (error) {
      // The library's state is unknown after a failed evaluation: start the caches afresh.
      await state.target.reset().catch(() => undefined);
      await state.draft?.reset().catch(() => undefined);
      throw error;
    }
  }

  private ngramProposer(documentKey: string | undefined, speculation: SpeculationSettings): NgramProposer {
    const { ngramMinMatch: minN, ngramMaxMatch: maxN } = speculation;
    return {
      find: (history, maxLen): Proposal | null => {
        // The prompt and the generation so far first (most local), then the open documents.
        const local = findInSequence(history, { minN, maxN, maxLen });
        const global = this.documents.lookup(history, maxLen, { preferKey: documentKey });
        const best = !local ? global : !global ? local : global.n > local.n ? global : local;
        if (!best || best.n < 1) return null;
        return { source: 'ngram', tokens: best.tokens, matchLength: best.n };
      },
    };
  }

  async dispose(): Promise<void> {
    // A generation still running (aborted, it ends at its next step) must not see its contexts freed.
    await this.running;
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
    await attempt(() => this.windowContext?.evaluator.dispose());
    await attempt(() => disposeContext(this.windowContext));
    for (const evaluator of this.draft?.sequences ?? []) await attempt(() => evaluator.dispose());
    for (const evaluator of this.target.sequences) await attempt(() => evaluator.dispose());
    await attempt(() => disposeContext(this.draft));
    await attempt(() => disposeContext(this.target));
    await attempt(() => this.draft?.model.dispose());
    await attempt(() => this.target.model.dispose());
    if (failures.length) throw failures[0];
  }
}

/** Longest completion a request may ask for. */
function clampMaxTokens(maxTokens: number): number {
  return Math.max(1, Math.min(maxTokens, 1024));
}
