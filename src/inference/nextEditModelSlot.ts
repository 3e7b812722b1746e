// The next-edit model of a loaded pair. draftline.nextEdit.model names either
// the completion target's own file (models/nextEditModel.ts planNextEditModel 'shareTarget': loaded
// once, each task on its own KV sequences of the pair's context) or another file ('separate'),
// loaded here when next edits are first asked for — never at startup — beside the pair: its own
// context and KV sequences, placed as the target is (same gpu, gpuLayers, threads, flash attention),
// and, when its vocabulary is the completion draft's, a context of the draft's own for 'hybrid'.
// A missing or corrupt file is a result with a reason, never an error that reaches completions;
// it is tried again only once the file changes. It unloads with the pair.
import * as fs from 'node:fs';
import * as os from 'node:os';
import { checkVocabularyCompatible, inspectModelFile, type ModelFileInfo } from '../gguf/modelFileCheck';
import { planNextEditModel } from '../models/nextEditModel';
import type { NextEditModelReport } from '../shared/backendInfo';
import type { Token } from '../shared/decoding';
import { AttentionMemo } from './flashAttention';
import type { RuntimeLog } from './llamaRuntime';
import { LlamaSequenceEvaluator } from '../llama/llamaSequenceEvaluator';
import type { SequenceEvaluator } from '../llama/sequenceEvaluator';
import { createContext, disposeContext, gpuLayersFor, type LoadedModel, type LoadedPair, loadModel, type ModelPlacement } from './loadedPair';
import { PromptStates, type SequenceEvaluators } from './promptStates';
import { chooseSequenceBudget, kvBytesPerToken, kvMemory } from './sequenceBudget';

/** What decodes next edits: a loaded model and its prompt states. */
export interface NextEditServing {
  /** Its GGUF identity chooses the format (nextEdit/modelFormat.ts). */
  model: LoadedModel;
  sequenceFor(owner: string, prompt: readonly Token[]): Promise<SequenceEvaluators<SequenceEvaluator>>;
  holds(owner: string, target: SequenceEvaluator): boolean;
  /** Whether its token ids are the target's: the n-gram index of open documents (target tokens) can propose for it. */
  targetVocabulary: boolean;
}

/** Next-edit prompts only (completions have the pair's): one for each of two windows by default. */
export const NEXT_EDIT_SEQUENCES = 2;

type DraftSide = Awaited<ReturnType<typeof createContext>> & { sequences: SequenceEvaluator[] };
type Entry =
  | { kind: 'loaded'; model: LoadedModel; draft: DraftSide | null; states: PromptStates<SequenceEvaluator>; report: NextEditModelReport; released?: boolean }
  | { kind: 'failed'; report: NextEditModelReport };

/** A file's size and time, so a file that changed (downloaded again, fixed) is tried again. */
function stamp(file: string): string {
  try {
    const s = fs.statSync(file);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

const basename = (file: string) => file.split(/[\\/]/).pop() ?? file;
const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MiB`;

export class NextEditModelSlot {
  /** The separate model asked for last (one at a time: another file replaces it). */
  private current: { file: string; stamp: string; entry: Promise<Entry>; settled: boolean } | null = null;
  /** Set once next edits were asked of the target's own file. */
  private shared: NextEditModelReport | null = null;
  private disposed = false;

  constructor(
    private readonly pair: LoadedPair,
    /** The pair's own prompt states, for a next edit of the target (no model configured, or its file). */
    private readonly target: NextEditServing,
    /** Verify batch size a flash-attention measurement times (maxProposal + 1). */
    private readonly verifySize: number,
    private readonly log: RuntimeLog,
  ) {}

  /**
   * What serves a next edit with `file` (a local path; '' or absent: none configured, the target
   * serves). A load runs once, whoever asks meanwhile waits for it; `hooks` are told while
   * this request waits for a load (completions run meanwhile: the request is parked, not decoding).
   */
  async serving(file: string | undefined, hooks: { onPark?(): void; onResume?(): void; onNativeLoad?(file: string): void } = {}): Promise<NextEditServing | { problem: string }> {
    const plan = planNextEditModel(file ?? '', this.pair.target.info.path, { realpath: fs.realpathSync });
    if (plan.kind === 'none') return this.target;
    if (plan.kind === 'shareTarget') {
      this.shared ??= this.note(this.sharedReport());
      return this.target;
    }
    const now = stamp(plan.file);
    if (this.current?.file !== plan.file || this.current.stamp !== now) {
      const previous = this.current;
      const load = async () => {
        // Another file replaces the one loaded before (one next-edit model per pair).
        if (previous) await release(await previous.entry);
        return this.load(plan.file, hooks.onNativeLoad);
      };
      this.note(loadingReport(plan.file));
      const next = { file: plan.file, stamp: now, entry: load(), settled: false };
      next.entry.then((entry) => this.current === next && this.note(entry.report)).catch(() => undefined);
      next.entry.finally(() => (next.settled = true)).catch(() => undefined);
      this.current = next;
    }
    const waits = !this.current.settled;
    if (waits) hooks.onPark?.();
    const entry = await this.current.entry;
    if (waits) hooks.onResume?.();
    if (entry.kind === 'failed') return { problem: `the next-edit model ${basename(plan.file)} could not be loaded: ${entry.report.problem}` };
    const { model, states } = entry;
    return {
      model,
      sequenceFor: async (owner, prompt) => states.acquire(owner, prompt),
      holds: (owner, target) => states.holds(owner, target),
      targetVocabulary: checkVocabularyCompatible(this.pair.target.info, model.info).compatible,
    };
  }

  /** The next-edit model as Show Stats and the diagnostics show it; null before next edits were first asked for. */
  async report(): Promise<NextEditModelReport | null> {
    if (this.current) {
      if (!this.current.settled) return { ...loadingReport(this.current.file) };
      const entry = await this.current.entry;
      return entry.kind === 'loaded' ? { ...entry.report, sequences: entry.states.report().map(({ owner, tokens, bytes }) => ({ owner, tokens, bytes })) } : entry.report;
    }
    return this.shared;
  }

  /** Frees the sequences of owners `matches` accepts (a window that went away). */
  releaseOwners(matches: (owner: string) => boolean): void {
    void this.current?.entry.then((entry) => entry.kind === 'loaded' && entry.states.release(matches));
  }

  /** Unloads it (with the pair); a load under way is unloaded when it ends. */
  async dispose(): Promise<void> {
    this.disposed = true;
    const current = this.current;
    this.current = null;
    if (current) await release(await current.entry);
  }

  /** The load's answer (LoadedModelsInfo, the same object) shows it from now on, to windows that join too. */
  private note(report: NextEditModelReport): NextEditModelReport {
    this.pair.info.nextEditModel = report;
    return report;
  }

  private sharedReport(): NextEditModelReport {
    const { target, info } = this.pair;
    const kv = info.kvSequences ?? { count: target.sequences.length, bytesPerSequence: 0, reason: '' };
    return {
      path: target.info.path,
      name: info.target.name,
      sharesTarget: true,
      state: 'loaded',
      sizeBytes: target.info.fileSize,
      gpuLayers: target.model.gpuLayers,
      contextSize: info.contextSize,
      kvSequences: { ...kv, reason: `the target's (${kv.count}): next edits decode on sequences of their own beside the completions'` },
      draft: info.draft ? `the completion draft ${info.draft.name}` : 'none loaded: the window copy and n-grams',
    };
  }

  private async load(file: string, onNativeLoad?: (file: string) => void): Promise<Entry> {
    const started = performance.now();
    const { llama, settings, info: pairInfo, draft } = this.pair;
    let info: ModelFileInfo;
    try {
      // Checked before llama.cpp reads it: a malformed GGUF can abort the process.
      info = await inspectModelFile(file);
    } catch (error) {
      return this.failed(file, (error as Error).message);
    }
    const contextSize = Math.max(64, Math.min(settings.contextSize, info.contextLength || settings.contextSize));
    const vocabulary = draft ? checkVocabularyCompatible(info, draft.info) : null;
    const withDraft = draft !== null && vocabulary?.compatible === true;
    const onGpu = pairInfo.backend !== 'cpu' && settings.gpuLayers !== 0;
    const budget = chooseSequenceBudget({
      bytesPerToken: kvBytesPerToken(info) + (withDraft ? kvBytesPerToken(draft.info) : 0),
      contextSize,
      ...kvMemory(onGpu, onGpu ? await llama.getVramState() : null, os.freemem()),
      weightBytes: info.fileSize,
      cap: Math.min(NEXT_EDIT_SEQUENCES, typeof settings.kvSequences === 'number' ? settings.kvSequences : NEXT_EDIT_SEQUENCES),
    });
    const placement: ModelPlacement = {
      role: 'target',
      gpuLayers: gpuLayersFor('target', settings, contextSize * budget.sequences),
      sequences: budget.sequences,
      contextSize,
      threads: pairInfo.threads,
      flashAttention: settings.flashAttention ?? 'auto',
      memo: settings.attentionMemoFile ? new AttentionMemo(settings.attentionMemoFile) : undefined,
      verifySize: this.verifySize,
      runtime: `${pairInfo.backend} ${llama.llamaCppRelease.release}`,
      deviceGreedy: settings.deviceGreedy ?? 'auto',
      shiftCache: settings.shiftPromptCache !== false,
    };
    let model: LoadedModel;
    let gpuFallback: string | undefined;
    try {
      onNativeLoad?.(file);
      try {
        model = await loadModel(llama, info, placement);
      } catch (error) {
        if (placement.gpuLayers === 0) throw error;
        // As the pair does: a GPU that cannot take it leaves it on the CPU rather than without next edits.
        gpuFallback = `the GPU could not take it (${(error as Error).message})`;
        this.log('warn', `next-edit model ${basename(file)}: ${gpuFallback}; loading it on the CPU`);
        model = await loadModel(llama, info, { ...placement, gpuLayers: 0 });
      }
    } catch (error) {
      return this.failed(file, (error as Error).message);
    }
    let draftSide: DraftSide | null = null;
    let draftNote = !draft
      ? 'none loaded: the window copy and n-grams'
      : `another vocabulary than the completion draft's (${vocabulary && !vocabulary.compatible ? vocabulary.reason : ''}): the window copy and n-grams`;
    if (withDraft) {
      try {
        // The completion draft's weights, a context of its own: the pair's sequences stay the completions'.
        const created = await createContext(draft.model, {
          contextSize,
          threads: pairInfo.threads,
          batchSize: Math.min(contextSize, 512),
          flashAttention: draft.attention.flashAttention,
          sequences: model.sequences.length,
        });
        draftSide = { ...created, sequences: Array.from({ length: created.context.totalSequences }, () => new LlamaSequenceEvaluator(created.context.getSequence(), draft.model)) };
        draftNote = `the completion draft ${pairInfo.draft?.name ?? basename(draft.info.path)} (same vocabulary)`;
      } catch (error) {
        draftNote = `the completion draft's context could not be created (${(error as Error).message}): the window copy and n-grams`;
      }
    }
    const states = new PromptStates(model.sequences, draftSide?.sequences ?? null, kvBytesPerToken(info), (message) => this.log('info', `next-edit model: ${message}`));
    const loadMs = Math.round(performance.now() - started);
    const report: NextEditModelReport = {
      path: file,
      name: info.name || basename(file),
      sharesTarget: false,
      state: 'loaded',
      sizeBytes: info.fileSize,
      gpuLayers: model.model.gpuLayers,
      contextSize: model.context.contextSize,
      kvSequences: { count: model.sequences.length, bytesPerSequence: budget.bytesPerSequence, reason: budget.reason },
      draft: draftNote,
      ...(gpuFallback ? { gpuFallback } : {}),
      loadMs,
    };
    this.log(
      'info',
      `next-edit model ${report.name} loaded in ${loadMs} ms: ${mib(info.fileSize)} of weights, ${report.gpuLayers > 0 ? `${report.gpuLayers} layers on the GPU` : 'on the CPU'}, context ${report.contextSize}, KV sequences: ${budget.reason}; hybrid drafts with ${draftNote}`,
    );
    const entry: Entry = { kind: 'loaded', model, draft: draftSide, states, report };
    // The pair went while it loaded: it goes too.
    if (this.disposed) await release(entry);
    return entry;
  }

  private failed(file: string, problem: string): Entry {
    this.log('warn', `next-edit model ${file} not loaded: ${problem} (completions are unaffected; tried again when the file changes)`);
    return { kind: 'failed', report: { ...loadingReport(file), state: 'failed', problem } };
  }
}

function loadingReport(file: string): NextEditModelReport {
  return { path: file, name: basename(file), sharesTarget: false, state: 'loading', sizeBytes: 0, gpuLayers: 0, contextSize: 0, kvSequences: { count: 0, bytesPerSequence: 0, reason: '' }, draft: '' };
}

/** Frees a loaded entry: its sequences, the contexts, then the weights (each step tried). */
async function release(entry: Entry | undefined): Promise<void> {
  if (entry?.kind !== 'loaded' || entry.released) return;
  entry.released = true;
  const { model, draft } = entry;
  for (const evaluator of [...(draft?.sequences ?? []), ...model.sequences]) await evaluator.dispose().catch(() => undefined);
  await disposeContext(draft).catch(() => undefined);
  await disposeContext(model).catch(() => undefined);
  await model.model.dispose().catch(() => undefined);
}
