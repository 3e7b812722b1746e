// The loaded pair: the target and draft models, their contexts (one KV sequence per prompt state,
// as many as the memory budget allows: inference/sequenceBudget.ts) and where they were placed
// (CPU or GPU, threads, flash attention). Loading checks the files before llama.cpp reads them and
// falls back to the CPU when a GPU backend fails. InferenceSession decodes on what this loads.
import { cacheCanShift } from '../llama/cacheShift';
import type { Llama, LlamaContext, LlamaModel } from '../llama/llamaTypes';
import * as os from 'node:os';
import type { LoadedModelsInfo, ModelDescription } from '../shared/backendInfo';
import type { ModelSettings, SpeculationSettings } from '../shared/settings';
import { describeLoadTimings } from '../stats/loadTimings';
import { backendExplanation, gpuName } from '../stats/statusText';
import { checkVocabularyCompatible, inspectModelFile, type ModelFileInfo } from '../gguf/modelFileCheck';
import { chooseTemplate, type PromptTemplate } from '../prompt/templates';
import { LlamaSequenceEvaluator } from '../llama/llamaSequenceEvaluator';
import { allowDeviceGreedy, type AttachedThreadpool } from '../llama/nativeAddon';
import type { SequenceEvaluator } from '../llama/sequenceEvaluator';
import type { UnifiedContext } from '../llama/unifiedContext';
import { createUnifiedTarget, type TreeVerificationState, wantsTreeVerification } from './treeVerification';
import { createContext, disposeContext } from './modelContext';
import { timeCompletionWork } from './attentionTiming';
import { AttentionMemo, attentionWorkload, chooseFlashAttention, describeChoice, type FlashAttentionChoice, type FlashAttentionSetting, type ModelRole } from './flashAttention';
import { describeRuntimeChoice, getRuntime, resolveThreads, runtimeMilestones, type RuntimeLog } from './llamaRuntime';
import { chooseSequenceBudget, kvBytesPerToken, kvMemory, type SequenceBudget } from './sequenceBudget';

export interface LoadedModel {
  info: ModelFileInfo;
  model: LlamaModel;
  /** node-llama-cpp's context, or where the target verifies trees Draftline's own (inference/treeVerification.ts). */
  context: LlamaContext | UnifiedContext;
  /**
   * One evaluator per KV sequence of the context (as many as the pair's sequence budget), each a
   * prompt state's (inference/promptStates.ts); `evaluator` is the first, on which a session used
   * by one caller decodes.
   */
  sequences: SequenceEvaluator[];
  evaluator: SequenceEvaluator;
  /** Whether its evaluators verify token trees, or why not. */
  trees: TreeVerificationState;
  /** The context's persistent CPU threadpool (2+ threads), or why it has none. */
  threadpool: AttachedThreadpool | { error: string };
  /** Flash attention as the context was created with it, and why (inference/flashAttention.ts). */
  attention: FlashAttentionChoice;
}

export { createContext, disposeContext } from './modelContext';

/** What loadPair gives the session: the runtime, the models with their contexts, and what the status bar shows. */
export interface LoadedPair {
  llama: Llama;
  target: LoadedModel;
  draft: LoadedModel | null;
  info: LoadedModelsInfo;
  /** The target's prompt template, chosen from its vocabulary (prompt/templates.ts). */
  template: PromptTemplate;
  /** How many KV sequences each context holds, and why. */
  sequences: SequenceBudget;
  /** The settings the pair was loaded with (gpu 'cpu' after a GPU fallback): a model loaded beside it later is placed alike. */
  settings: ModelSettings;
}

/**
 * Loads the pair on the backend asked for. When a GPU backend fails to start or to take a model
 * (a broken driver, too little memory), the pair is loaded on the CPU instead and the reason kept
 * in `info.gpuFallback` for the status bar: completions keep working, and the user is told why
 * they are slower. File problems (missing, corrupt, vocabulary) are not GPU failures: they throw.
 */
export async function loadPair(settings: ModelSettings, speculation: SpeculationSettings, log: RuntimeLog, onNativeLoad?: (file: string) => void): Promise<LoadedPair> {
  try {
    return await loadOn(settings, speculation, log, onNativeLoad);
  } catch (error) {
    if (!(error instanceof GpuFailure)) throw error;
    log('warn', `${error.message}; loading the models on the CPU instead`);
    return loadOn({ ...settings, gpu: 'cpu', gpuLayers: 0, gpuFallback: error.message }, speculation, log, onNativeLoad);
  }
}

/** `onNativeLoad` is told each model file just before llama.cpp reads it (a native abort then is that file's). */
async function loadOn(settings: ModelSettings, speculation: SpeculationSettings, log: RuntimeLog, onNativeLoad?: (file: string) => void): Promise<LoadedPair> {
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
  // The KV sequences (one per prompt state) from the memory they take where the contexts will live.
  const onGpu = backend !== 'cpu' && settings.gpuLayers !== 0;
  const budget = chooseSequenceBudget({
    bytesPerToken: kvBytesPerToken(targetInfo) + (draftInfo ? kvBytesPerToken(draftInfo) : 0),
    contextSize,
    ...kvMemory(onGpu, onGpu ? await llama.getVramState() : null, os.freemem()),
    weightBytes: targetInfo.fileSize + (draftInfo?.fileSize ?? 0),
    cap: settings.kvSequences ?? 'auto',
  });
  const placement = (role: ModelRole): ModelPlacement => ({
    role,
    // The layers that fit next to every sequence's cells.
    gpuLayers: gpuLayersFor(role, settings, contextSize * budget.sequences),
    sequences: budget.sequences,
    contextSize,
    threads,
    flashAttention: settings.flashAttention ?? 'auto',
    memo,
    verifySize: speculation.maxProposal + 1,
    runtime: `${backend} ${llama.llamaCppRelease.release}`,
    deviceGreedy: role === 'target' ? (settings.deviceGreedy ?? 'auto') : 'off',
    treeVerification: role === 'target' ? (settings.treeVerification ?? 'auto') : 'off',
    proposesTrees: settings.proposesTrees ?? speculation.suffix === true,
    shiftCache: settings.shiftPromptCache !== false,
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
  const sequences: SequenceBudget =
    target.sequences.length === budget.sequences
      ? budget
      : { ...budget, sequences: target.sequences.length, reason: `${target.sequences.length}: a context of ${budget.sequences} sequences could not be created (${budget.reason})` };
  log('info', `KV sequences: ${sequences.reason}`);
  // The target's prompt template, chosen from its vocabulary (prompt/templates.ts).
  const template = chooseTemplate({ tokens: targetInfo.tokens, fim: targetInfo.fim });
  const info: LoadedModelsInfo = {
    target: describe(targetInfo),
    draft: draft ? describe(draft.info) : null,
    draftProblem,
    backend,
    gpuLayers: { target: target.model.gpuLayers, draft: draft?.model.gpuLayers ?? 0 },
    contextSize: target.context.contextSize,
    kvSequences: { count: sequences.sequences, bytesPerSequence: sequences.bytesPerSequence, reason: sequences.reason },
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
    tokenReader: describeTokenReader(target.evaluator),
    nativeAddon:
      target.evaluator.path === 'native'
        ? { used: true }
        : { used: false, reason: (target.evaluator instanceof LlamaSequenceEvaluator && target.evaluator.nativeUnavailable) || `the ${target.evaluator.path} path was asked for` },
    treeVerification: target.trees,
    threadpool: 'release' in target.threadpool ? `persistent, ${threads} threads` : threads < 2 ? 'one (no worker threads)' : `llama.cpp's per-graph threads (${target.threadpool.error})`,
    flashAttention: { target: describeChoice(target.attention), draft: draft ? describeChoice(draft.attention) : null },
  };
  log(
    'info',
    `loaded ${info.target.name}${draft ? ` + draft ${info.draft!.name}` : ''} on ${backendExplanation(info)}, context ${info.contextSize}, ${threads} thread(s) in ${Math.round(done - started)} ms (${describeLoadTimings(info.loadTimings!)}); tokens read: ${info.tokenReader}; threads: ${info.threadpool}; flash attention: target ${info.flashAttention!.target}${draft ? `, draft ${info.flashAttention!.draft}` : ''}; token trees: ${treeVerificationText(target.trees)}`,
  );
  return { llama, target, draft, info, template, sequences, settings };
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
export interface ModelPlacement {
  role: ModelRole;
  gpuLayers: GpuLayersOption;
  /** KV sequences of its context (the pair's sequence budget). */
  sequences: number;
  contextSize: number;
  threads: number;
  flashAttention: FlashAttentionSetting;
  memo: AttentionMemo | undefined;
  /** Verify batch size the target's measurement times (maxProposal + 1). */
  verifySize: number;
  runtime: string;
  /** Whether its evaluators read greedy tokens sampled on the device (ModelSettings.deviceGreedy); unset: 'off'. */
  deviceGreedy?: 'auto' | 'on' | 'off';
  /** Whether its evaluators may shift cached tokens into place (ModelSettings.shiftPromptCache); unset: no. */
  shiftCache?: boolean;
  /** Whether it verifies token trees on a context of Draftline's own (ModelSettings.treeVerification); unset: 'off'. */
  treeVerification?: 'auto' | 'on' | 'off';
  /** Whether a proposer in use offers trees (ModelSettings.proposesTrees); 'auto' verifies trees only then. */
  proposesTrees?: boolean;
}

/**
 * Test hook (DRAFTLINE_TEST_HOOKS=1 only): a model whose GGUF general.name starts with
 * `abort-in-load` or `abort-in-gen` ends the process with a native abort while llama.cpp
 * loads it, or while a generation with it evaluates: what a hostile or broken model file, or a GPU
 * out-of-memory GGML_ABORT, does. Returns the loader's progress callback for the load phase.
 */
export function testAbortHook(phase: 'load' | 'generation', ...models: (ModelFileInfo | undefined)[]): (() => void) | undefined {
  const marker = phase === 'load' ? 'abort-in-load' : 'abort-in-gen';
  if (process.env.DRAFTLINE_TEST_HOOKS !== '1' || !models.some((m) => m?.name?.startsWith(marker))) return undefined;
  // The abort comes from inside the native call under way: the loader's progress callback runs
  // while llama.cpp reads the file; for a generation, the next turn of the event loop finds the
  // first evaluation running on llama.cpp's thread.
  if (phase === 'load') return () => process.abort();
  setImmediate(() => process.abort());
  return undefined;
}

export async function loadModel(llama: Llama, info: ModelFileInfo, placement: ModelPlacement): Promise<LoadedModel> {
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
    // Device greedy needs a context created with room for a batch of sampled outputs (allowDeviceGreedy):
    // asked for where it may be used, so a CPU-only machine's contexts stay as node-llama-cpp makes them.
    const deviceGreedy = placement.deviceGreedy ?? 'off';
    // 'auto': CUDA only, the backend it is measured on; Vulkan's software device (llvmpipe) is
    // unstable with it.
    const device = deviceGreedy === 'on' || (deviceGreedy === 'auto' && model.gpuLayers > 0 && llama.gpu === 'cuda') ? allowDeviceGreedy(llama) : { error: 'not asked for' };
    const shift = placement.shiftCache === true && cacheCanShift(model);
    let trees = wantsTreeVerification(placement.treeVerification ?? 'off', llama.gpu, model.gpuLayers, placement.proposesTrees ?? false);
    if (trees.used) {
      const unified = await createUnifiedTarget(model, { ...options, flashAttention: attention.flashAttention, sequences: placement.sequences, shift });
      if (!('error' in unified)) return { info, model, context: unified, threadpool: unified.threadpool, attention, sequences: unified.evaluators, evaluator: unified.evaluators[0]!, trees };
      trees = { used: false, reason: `Draftline's context could not be made (${unified.error})` };
    }
    const { context, threadpool } = await createSequencedContext(model, { ...options, flashAttention: attention.flashAttention }, placement.sequences);
    const evaluatorOptions = { deviceGreedy: 'ok' in device ? deviceGreedy : ('off' as const), shift };
    const sequences = Array.from({ length: context.totalSequences }, () => new LlamaSequenceEvaluator(context.getSequence(), model, undefined, evaluatorOptions));
    return { info, model, context, threadpool, attention, sequences, evaluator: sequences[0]!, trees };
  } catch (error) {
    await model.dispose().catch(() => undefined);
    throw error;
  }
}

/**
 * A context of `sequences` KV sequences, or of one when llama.cpp cannot allocate that many (the
 * budget is an estimate; a GPU's memory may be taken meanwhile): completions then share one
 * sequence rather than fail.
 */
async function createSequencedContext(model: LlamaModel, options: Parameters<typeof createContext>[1], sequences: number): ReturnType<typeof createContext> {
  try {
    return await createContext(model, { ...options, sequences });
  } catch (error) {
    if (sequences <= 1) throw error;
    return createContext(model, { ...options, sequences: 1 });
  }
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

/** Whether the target verifies token trees, or why not, in words (the load log). */
export function treeVerificationText(trees: TreeVerificationState): string {
  return trees.used ? "verified (Draftline's context with one KV stream)" : `not verified (${trees.reason})`;
}

/** How the target's greedy tokens are read, and why not a faster way where one was asked for (Show Stats). */
function describeTokenReader(evaluator: SequenceEvaluator): string {
  if (!(evaluator instanceof LlamaSequenceEvaluator)) return `${evaluator.path}, Draftline's context with one KV stream (token trees verified), direct decode`;
  // How batches reach llama.cpp: straight (the native addon's decode), or through the library's queue and why.
  const decode = evaluator.directDecodeUnavailable ? `, library batch queue (${evaluator.directDecodeUnavailable})` : ', direct decode';
  if (evaluator.path === 'device') return `device (greedy sampled on the device; no logits rows to the host)${decode}`;
  const why = [evaluator.nativeUnavailable && `native reader: ${evaluator.nativeUnavailable}`, evaluator.deviceUnavailable && `device greedy: ${evaluator.deviceUnavailable}`].filter(Boolean);
  return `${why.length ? `${evaluator.path} (${why.join('; ')})` : evaluator.path}${decode}`;
}
