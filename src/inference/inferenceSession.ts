import type { Llama, LlamaContext, LlamaModel, LlamaToken } from './llamaTypes';
import * as os from 'node:os';
import {
  type AlternativesResult,
  type CompletionRequest,
  type DecoderStats,
  emptySpeculationStats,
  type GenerationStats,
  type LocalCompletionResult,
  type LoadedModelsInfo,
  type ModelDescription,
  type ModelSettings,
  type SpeculationSettings,
  type Token,
} from '../shared/types';
import { describeLoadTimings } from '../engine/loadTimings';
import { backendExplanation, gpuName } from '../engine/statusText';
import { checkVocabularyCompatible, inspectModelFile, type ModelFileInfo } from '../gguf/modelFileCheck';
import { NgramIndex, findInSequence } from '../ngram';
import { ANCHOR_LINE_GROUP, buildPrompt, splitTrailingBlank, type PromptLayout, type PromptVocabulary } from '../prompt/fimPrompt';
import { chooseTemplate, type PromptTemplate } from '../prompt/templates';
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
import { type AttachedThreadpool, attachThreadpool } from './nativeAddon';
import { AttentionMemo, attentionWorkload, chooseFlashAttention, describeChoice, type FlashAttentionChoice, type FlashAttentionSetting, type ModelRole, workloadMs } from './flashAttention';
import { describeRuntimeChoice, getRuntime, resolveThreads, runtimeMilestones, type RuntimeLog } from './llamaRuntime';

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

/** N-gram index keys of extra-context chunks (documents are keyed by their uri). */
export const EXTRA_CONTEXT_KEY = 'extra-context:';

export { DEFAULT_SPECULATION } from '../engine/declaredSettings';

interface LoadedModel {
  info: ModelFileInfo;
  model: LlamaModel;
  context: LlamaContext;
  evaluator: LlamaSequenceEvaluator;
  /** The context's persistent CPU threadpool (2+ threads), or why it has none. */
  threadpool: AttachedThreadpool | { error: string };
  /** Flash attention as the context was created with it, and why (inference/flashAttention.ts). */
  attention: FlashAttentionChoice;
}

/**
 * A context and, with 2+ threads, its persistent threadpool: node-llama-cpp's llama.cpp otherwise
 * creates and joins its worker threads for every graph, which made a 2-thread decode step 4-10x
 * slower than a 1-thread one here (src/inference/nativeAddon.ts).
 */
async function createContext(
  model: LlamaModel,
  options: { contextSize: number; threads: number; batchSize: number; flashAttention: boolean | 'auto' },
): Promise<{ context: LlamaContext; threadpool: AttachedThreadpool | { error: string } }> {
  const context = await model.createContext({ ...options, sequences: 1 });
  return { context, threadpool: attachThreadpool(context, options.threads) };
}

/** Frees the context, then its threadpool (llama.cpp's CPU backend holds on to it until then). */
async function disposeContext(c: { context: LlamaContext; threadpool: AttachedThreadpool | { error: string } } | null | undefined): Promise<void> {
  if (!c) return;
  await c.context.dispose();
  if ('release' in c.threadpool) c.threadpool.release();
}

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
  /** How the FIM prompt is split (see PromptLayout); the benchmark compares both. */
  promptLayout: PromptLayout = 'lineAnchored';

  private constructor(
    readonly llama: Llama,
    readonly target: LoadedModel,
    readonly draft: LoadedModel | null,
    readonly info: LoadedModelsInfo,
    readonly template: PromptTemplate,
    speculation: SpeculationSettings,
  ) {
    this.speculation = { ...speculation };
    this.policy = new SpeculationPolicy(this.speculation);
    this.documents = new NgramIndex({
      minN: speculation.ngramMinMatch,
      maxN: speculation.ngramMaxMatch,
      tokenize: (text: string): Token[] => target.model.tokenize(text, false),
    });
  }

  /**
   * Loads the pair on the backend asked for. When a GPU backend fails to start or to take a model
   * (a broken driver, too little memory), the pair is loaded on the CPU instead and the reason kept
   * in `info.gpuFallback` for the status bar: completions keep working, and the user is told why
   * they are slower. File problems (missing, corrupt, vocabulary) are not GPU failures: they throw.
   */
  static async load(settings: ModelSettings, speculation: SpeculationSettings, log: RuntimeLog, onNativeLoad?: (file: string) => void): Promise<InferenceSession> {
    try {
      return await InferenceSession.loadOn(settings, speculation, log, onNativeLoad);
    } catch (error) {
      if (!(error instanceof GpuFailure)) throw error;
      log('warn', `${error.message}; loading the models on the CPU instead`);
      return InferenceSession.loadOn({ ...settings, gpu: 'cpu', gpuLayers: 0, gpuFallback: error.message }, speculation, log, onNativeLoad);
    }
  }

  /** `onNativeLoad` is told each model file just before llama.cpp reads it (a native abort then is that file's). */
  private static async loadOn(settings: ModelSettings, speculation: SpeculationSettings, log: RuntimeLog, onNativeLoad?: (file: string) => void): Promise<InferenceSession> {
    const started = performance.now();
    const threads = resolveThreads(settings.threads, os.availableParallelism());
    // The binding (library import, binary test in a child process) is the slowest part of a cold
    // start and needs no model: it loads while the GGUF headers are checked.
    const runtime = getRuntime(settings, threads, log);
    runtime.catch(() => undefined);
    // Check files before the native loader sees them: a malformed GGUF can abort the process.
    const targetInfo = await inspectModelFile(settings.targetModel);
    let draftInfo: ModelFileInfo | null = null;
    let draftProblem: string | null = null;
    if (settings.draftModel) {
      try {
        draftInfo = await inspectModelFile(settings.draftModel);
        const compatible = checkVocabularyCompatible(targetInfo, draftInfo);
        if (!compatible.compatible) {
          draftProblem = `Draft model ${basename(settings.draftModel)} cannot be used with ${basename(settings.targetModel)}: ${compatible.reason}. Speculation uses n-gram reuse only.`;
          draftInfo = null;
        }
      } catch (error) {
        draftProblem = `Draft model not used: ${(error as Error).message}`;
        draftInfo = null;
      }
      if (draftProblem) log('warn', draftProblem);
    }
    const inspected = performance.now();
    const llama = await runtime.catch((error: Error) => {
      throw settings.gpu !== 'cpu' ? new GpuFailure(`${gpuName(settings.gpu)} did not start (${error.message})`) : error;
    });
    const runtimeReady = performance.now();
    const contextSize = Math.max(64, Math.min(settings.contextSize, targetInfo.contextLength || settings.contextSize));
    const backend = llama.gpu === false ? 'cpu' : llama.gpu;
    const memo = settings.attentionMemoFile ? new AttentionMemo(settings.attentionMemoFile) : undefined;
    const placement = (role: ModelRole): ModelPlacement => ({
      role,
      gpuLayers: gpuLayersFor(role, settings, contextSize),
      contextSize,
      threads,
      flashAttention: settings.flashAttention ?? 'auto',
      memo,
      verifySize: speculation.maxProposal + 1,
      runtime: `${backend} ${llama.llamaCppRelease.release}`,
    });
    // The draft first: it is small, and only worth running if it is as fast as it can be (all on
    // the GPU when there is one); the target then takes the GPU memory that is left.
    let draft: LoadedModel | null = null;
    if (draftInfo) {
      try {
        onNativeLoad?.(draftInfo.path);
        draft = await loadModel(llama, draftInfo, placement('draft'));
      } catch (error) {
        draftProblem = `Draft model failed to load: ${(error as Error).message}`;
        log('warn', draftProblem);
      }
    }
    const draftLoaded = performance.now();
    let target: LoadedModel;
    try {
      onNativeLoad?.(targetInfo.path);
      target = await loadModel(llama, targetInfo, placement('target'));
    } catch (error) {
      await draft?.evaluator.dispose().catch(() => undefined);
      await disposeContext(draft).catch(() => undefined);
      await draft?.model.dispose().catch(() => undefined);
      if (backend !== 'cpu') throw new GpuFailure(`${gpuName(backend)} failed to load ${basename(settings.targetModel)}: ${(error as Error).message}`);
      throw error;
    }
    const done = performance.now();
    // The target's prompt template, chosen from its vocabulary (prompt/templates.ts).
    const template = chooseTemplate({ tokens: targetInfo.tokens, fim: targetInfo.fim });
    const info: LoadedModelsInfo = {
      target: describe(targetInfo),
      draft: draft ? describe(draft.info) : null,
      draftProblem,
      backend,
      gpuLayers: { target: target.model.gpuLayers, draft: draft?.model.gpuLayers ?? 0 },
      contextSize: target.context.contextSize,
      threads,
      promptFormat: targetInfo.fim ? 'fim' : 'prefix-only',
      promptTemplate: template.spec.label,
      loadTimings: {
        workerAgeMs: Math.round(process.uptime() * 1000 - (done - started)),
        inspectMs: round1(inspected - started),
        runtimeMs: round1(runtimeReady - inspected),
        draftMs: round1(draftLoaded - runtimeReady),
        targetMs: round1(done - draftLoaded),
        totalMs: round1(done - started),
        ...runtimeMilestones,
      },
      // Why this backend and thread count: the status bar explains a CPU fallback and the default threads.
      runtime: await describeRuntimeChoice(settings, llama),
      ...(settings.gpuFallback ? { gpuFallback: settings.gpuFallback } : {}),
      tokenReader: target.evaluator.nativeUnavailable ? `${target.evaluator.path} (native reader: ${target.evaluator.nativeUnavailable})` : target.evaluator.path,
      nativeAddon: target.evaluator.path === 'native' ? { used: true } : { used: false, reason: target.evaluator.nativeUnavailable ?? `the ${target.evaluator.path} path was asked for` },
      threadpool: 'release' in target.threadpool ? `persistent, ${threads} threads` : threads < 2 ? 'one (no worker threads)' : `llama.cpp's per-graph threads (${target.threadpool.error})`,
      flashAttention: { target: describeChoice(target.attention), draft: draft ? describeChoice(draft.attention) : null },
    };
    log(
      'info',
      `loaded ${info.target.name}${draft ? ` + draft ${info.draft!.name}` : ''} on ${backendExplanation(info)}, context ${info.contextSize}, ${threads} thread(s) in ${Math.round(done - started)} ms (${describeLoadTimings(info.loadTimings!)}); tokens read: ${info.tokenReader}; threads: ${info.threadpool}; flash attention: target ${info.flashAttention!.target}${draft ? `, draft ${info.flashAttention!.draft}` : ''}`,
    );
    return new InferenceSession(llama, target, draft, info, template, speculation);
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
    try {
      ranked = await this.rankAlong(prompt, greedy.tokens, count + ALTERNATIVE_SPARES, signal);
    } catch (error) {
      // As after a failed completion: the library's state is unknown, start the cache afresh.
      await this.target.evaluator.reset().catch(() => undefined);
      throw error;
    }
    if (!ranked) return done({ completions: [], limitedBy: 'cancelled' });
    const { blank } = splitTrailingBlank(request.prefix);
    const branch = chooseBranchPoint(greedy.tokens, ranked, {
      isEndToken: (token) => this.isEndToken(token),
      // Where the greedy completion writes the blank the user typed (the ghost text starts after it),
      // an alternative must too: one that does not would rewrite text left of the cursor.
      allows: blank
        ? (position, token) => {
            const writesBlank = (text: string) => text.startsWith(blank) || blank.startsWith(text);
            return !writesBlank(this.detokenize(greedy.tokens.slice(0, position + 1))) || writesBlank(this.detokenize([...greedy.tokens.slice(0, position), token]));
          }
        : undefined,
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
   * The top `top` tokens and margin at each position of the greedy completion `greedy` after
   * `prompt` (ranked[j] predicts greedy[j]): the prompt's cached KV is reused, the last prompt token
   * and greedy[0..n-1) are evaluated again with an output at every position, in batches (the abort
   * checked in between). Null when aborted. The cache then holds prompt + greedy[0..n-1).
   */
  private async rankAlong(prompt: readonly Token[], greedy: readonly Token[], top: number, signal: AbortSignal | undefined): Promise<RankedNext[] | null> {
    const evaluator = this.target.evaluator;
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
    const overrides: DecodeOverrides = { policy: new SpeculationPolicy({ ...this.speculation }), lookahead: false };
    await this.complete({ prefix: WARM_UP_PREFIX, suffix: '\n}\n', maxTokens: 4, mode: this.draft ? 'hybrid' : 'plain', stopAtBlockEnd: false }, signal, overrides);
    return performance.now() - started;
  }

  /** Remembers an accepted completion as n-gram material for later requests. */
  addAccepted(key: string, text: string): void {
    if (text) this.documents.addSequence(key, this.target.model.tokenize(text, false));
  }

  /** Empties both KV caches (the benchmark starts every measured completion cold). */
  async resetCaches(): Promise<void> {
    await this.target.evaluator.truncate(0);
    await this.draft?.evaluator.truncate(0);
  }

  /** The prompt tokens a request is decoded from (without the prefix's trailing blank: see splitTrailingBlank). */
  promptFor(request: PromptRequest): Token[] {
    return this.layoutPrompt(request).tokens;
  }

  /** The prompt's tokens and what its extra context showed (for the completion's stats). */
  private layoutPrompt(request: PromptRequest, speculation = this.speculation): { tokens: Token[]; extraContext: GenerationStats['extraContext'] } {
    const maxTokens = clampMaxTokens(request.maxTokens);
    const budget = this.target.evaluator.capacity - maxTokens - speculation.maxProposal - 2;
    if (budget < 8) throw new Error(`context size ${this.target.evaluator.capacity} is too small for ${maxTokens} new tokens`);
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
    const draft = overrides.draft ?? (this.draft ? new DraftModelProposer(this.draft.evaluator, speculation.draftMinConfidence) : undefined);
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
        target: this.target.evaluator,
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
      await this.target.evaluator.reset().catch(() => undefined);
      await this.draft?.evaluator.reset().catch(() => undefined);
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
    await attempt(() => this.draft?.evaluator.dispose());
    await attempt(() => this.target.evaluator.dispose());
    await attempt(() => disposeContext(this.draft));
    await attempt(() => disposeContext(this.target));
    await attempt(() => this.draft?.model.dispose());
    await attempt(() => this.target.model.dispose());
    if (failures.length) throw failures[0];
  }
}

/** A GPU backend that did not start or could not take the target: the session loads on the CPU instead. */
class GpuFailure extends Error {}

export type GpuLayersOption = number | { fitContext: { contextSize: number } };

/**
 * node-llama-cpp's gpuLayers for one model. "auto" fits as many layers as the free GPU memory holds
 * next to a context of the size we will create (node-llama-cpp's own "auto" reserves one of the
 * model's whole training context, 32k tokens for Qwen2.5-Coder: far fewer layers). A number set by
 * the user is the target's; the draft then fits what it can, or stays off the GPU with 0.
 */
export function gpuLayersFor(role: 'target' | 'draft', settings: Pick<ModelSettings, 'gpu' | 'gpuLayers'>, contextSize: number): GpuLayersOption {
  if (settings.gpu === 'cpu') return 0;
  if (settings.gpuLayers === 'auto' || (role === 'draft' && settings.gpuLayers > 0)) return { fitContext: { contextSize } };
  return settings.gpuLayers;
}

/** How a model's context is set up beyond its file: thread count, flash attention and where choices are remembered. */
interface ModelPlacement {
  role: ModelRole;
  gpuLayers: GpuLayersOption;
  contextSize: number;
  threads: number;
  flashAttention: FlashAttentionSetting;
  memo: AttentionMemo | undefined;
  /** Verify batch size the target's measurement times (maxProposal + 1). */
  verifySize: number;
  runtime: string;
}

/**
 * Test hook (DRAFTLINE_TEST_HOOKS=1 only): a model whose GGUF general.name starts with
 * `abort-in-load` or `abort-in-gen` ends the process with a native abort while llama.cpp
 * loads it, or while a generation with it evaluates: what a hostile or broken model file, or a GPU
 * out-of-memory GGML_ABORT, does. Returns the loader's progress callback for the load phase.
 */
function testAbortHook(phase: 'load' | 'generation', ...models: (ModelFileInfo | undefined)[]): (() => void) | undefined {
  const marker = phase === 'load' ? 'abort-in-load' : 'abort-in-gen';
  if (process.env.DRAFTLINE_TEST_HOOKS !== '1' || !models.some((m) => m?.name?.startsWith(marker))) return undefined;
  // The abort comes from inside the native call under way: the loader's progress callback runs
  // while llama.cpp reads the file; for a generation, the next turn of the event loop finds the
  // first evaluation running on llama.cpp's thread.
  if (phase === 'load') return () => process.abort();
  setImmediate(() => process.abort());
  return undefined;
}

async function loadModel(llama: Llama, info: ModelFileInfo, placement: ModelPlacement): Promise<LoadedModel> {
  const abortInLoad = testAbortHook('load', info);
  const model = await llama.loadModel({ modelPath: info.path, gpuLayers: placement.gpuLayers, ...(abortInLoad ? { onLoadProgress: abortInLoad } : {}) });
  const options = { contextSize: placement.contextSize, threads: placement.threads, batchSize: Math.min(placement.contextSize, 512) };
  const work = attentionWorkload(placement.role, placement.contextSize, placement.verifySize);
  try {
    const attention = await chooseFlashAttention({
      setting: placement.flashAttention,
      gpuLayers: model.gpuLayers,
      supported: model.flashAttentionSupported,
      role: placement.role,
      memo: placement.memo,
      memoKey: { modelPath: info.path, role: placement.role, threads: placement.threads, contextSize: placement.contextSize, verifySize: placement.verifySize, runtime: placement.runtime },
      measure: (flashAttention) => timeCompletionWork(model, info, { ...options, flashAttention }, work),
    });
    const { context, threadpool } = await createContext(model, { ...options, flashAttention: attention.flashAttention });
    return { info, model, context, threadpool, attention, evaluator: new LlamaSequenceEvaluator(context.getSequence(), model) };
  } catch (error) {
    await model.dispose().catch(() => undefined);
    throw error;
  }
}

/** Prompt evaluation a measurement may spend per setting: sets its depth for models slow on this machine. */
const PROMPT_BUDGET_MS = 500;

/**
 * Times a completion's work for one model and flash-attention setting on a context of its own:
 * the prompt up to the workload's depth, one-token steps, verify batches (inference/flashAttention.ts).
 * Token ids are arbitrary valid ones: attention and matrix costs do not depend on them. The depth
 * shrinks to what PROMPT_BUDGET_MS of prompt evaluation reaches (a 1.5B model on two cores gets ~50
 * tokens, the embedded models the full depth) and always leaves room for the steps and a batch.
 */
async function timeCompletionWork(
  model: LlamaModel,
  info: ModelFileInfo,
  options: { contextSize: number; threads: number; batchSize: number; flashAttention: boolean },
  work: ReturnType<typeof attentionWorkload>,
): Promise<number> {
  // Medians of 10 steps and 5 batches: single steps on a busy 2-core machine vary by ±30%.
  const STEPS = 10;
  const VERIFIES = work.verifyBatches > 0 ? 5 : 0;
  const WARM_UP = 16;
  const created = await createContext(model, options);
  try {
    const evaluator = new LlamaSequenceEvaluator(created.context.getSequence(), model);
    try {
      const room = evaluator.capacity - STEPS - (VERIFIES > 0 ? work.verifySize : 0);
      if (room < WARM_UP) throw new Error(`a ${evaluator.capacity}-token context leaves no room to measure`);
      const span = Math.max(1, Math.min(info.vocabSize || 256, 4096) - 1);
      const tokens = (count: number, from: number) => Array.from({ length: count }, (_, i) => ((from + i) % span) as Token);
      // Warm-up, also the estimate of a prompt token's cost: the first evaluation after a load pages
      // in the weights and plans the graph, and whichever setting runs first must not pay for it.
      let t = performance.now();
      await evaluator.append(tokens(WARM_UP, 0), 1);
      const estimate = (performance.now() - t) / WARM_UP;
      await evaluator.truncate(0);
      const depth = Math.max(WARM_UP, Math.min(work.depth, room, Math.floor(PROMPT_BUDGET_MS / Math.max(estimate, 1e-3))));
      t = performance.now();
      for (let at = 0; at < depth; at += options.batchSize) await evaluator.append(tokens(Math.min(options.batchSize, depth - at), at), 0);
      const promptMsPerToken = (performance.now() - t) / depth;
      const timed = async (count: number, keep: boolean) => {
        const base = evaluator.tokens.length;
        t = performance.now();
        await evaluator.append(tokens(count, base), count);
        const ms = performance.now() - t;
        if (!keep) await evaluator.truncate(base);
        return ms;
      };
      const steps: number[] = [];
      for (let i = 0; i < STEPS; i++) steps.push(await timed(1, true));
      const verifies: number[] = [];
      for (let i = 0; i < VERIFIES; i++) verifies.push(await timed(work.verifySize, false));
      return workloadMs(work, { promptMsPerToken, stepMs: middle(steps), verifyMs: verifies.length ? middle(verifies) : 0 });
    } finally {
      await evaluator.dispose().catch(() => undefined);
    }
  } finally {
    // A context whose dispose fails keeps its threadpool (freeing a pool a live context may still
    // use could deadlock llama.cpp); disposeContext releases it only after a clean dispose.
    await disposeContext(created).catch(() => undefined);
  }
}

function middle(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Longest completion a request may ask for. */
function clampMaxTokens(maxTokens: number): number {
  return Math.max(1, Math.min(maxTokens, 1024));
}

function describe(info: ModelFileInfo): ModelDescription {
  return {
    path: info.path,
    name: info.name || basename(info.path),
    sizeBytes: info.fileSize,
    contextLength: info.contextLength,
    vocabSize: info.vocabSize,
    hasFim: info.fim !== null,
  };
}

function round1(ms: number): number {
  return Math.round(ms * 10) / 10;
}

function basename(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}
