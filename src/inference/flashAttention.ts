// Flash attention per model, chosen by measurement for models that run on the CPU.
//
// llama.cpp's CPU flash-attention kernel walks the KV cache one position at a time for every query
// row. For small attention heads (the embedded models' 48-dimension heads) that per-position work
// outweighs the dot products, so a draft token or a verify batch costs several times more with it;
// larger heads are faster with it, and prompt evaluation is faster with it for all (bench/PROFILE.md
// has the figures). node-llama-cpp's default ("auto", which llama.cpp turns on for the CPU) is
// therefore right for one model and badly wrong for another, so a model on the CPU is timed both ways
// at load on the work a completion gives it, and the faster setting kept. The choice is remembered
// per model file, machine and settings once two rounds of measurement agree, so it normally runs once. On a GPU
// llama.cpp's own choice stands. The prompt part of the measurement is sized to a time budget, so a
// large model on the CPU is timed at a shallower depth rather than for tens of seconds.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export type FlashAttentionSetting = 'auto' | 'on' | 'off';
export type ModelRole = 'target' | 'draft';

/** What one completion asks of a model, in the units measured at load. */
export interface AttentionWorkload {
  /** Cached tokens the measurement runs at (attention cost grows with it). */
  depth: number;
  /** Prompt tokens re-evaluated per completion (the edited region after a keystroke). */
  promptTokens: number;
  /** One-token steps per completion (plain decoding; drafting). */
  steps: number;
  /** Verify batches per completion and their size (the target only). */
  verifyBatches: number;
  verifySize: number;
}

/** Measured costs of one setting: prompt evaluation per token, a one-token step, a verify batch. */
export interface AttentionTiming {
  promptMsPerToken: number;
  stepMs: number;
  verifyMs: number;
}

/**
 * The workload a completion gives a model: the target re-evaluates the edited prompt region and
 * decodes in one-token steps and verify batches (the mix regime 1 shows at moderate acceptance);
 * the draft catches up on the same prompt and proposes one token at a time. Measured at half the
 * context (at most 384 tokens, to keep the measurement short), where a real prompt sits.
 */
export function attentionWorkload(role: ModelRole, contextSize: number, verifySize: number): AttentionWorkload {
  const depth = Math.max(16, Math.min(384, Math.floor(contextSize / 2)));
  return role === 'target' ? { depth, promptTokens: 64, steps: 24, verifyBatches: 4, verifySize } : { depth, promptTokens: 64, steps: 32, verifyBatches: 0, verifySize };
}

/** Milliseconds of a completion's work for this model under one setting. */
export function workloadMs(work: AttentionWorkload, timing: AttentionTiming): number {
  return work.promptTokens * timing.promptMsPerToken + work.steps * timing.stepMs + work.verifyBatches * timing.verifyMs;
}

/** The resolved choice: what the context is created with, and why (shown in the load log). */
export interface FlashAttentionChoice {
  /** Passed to node-llama-cpp's createContext: 'auto' leaves it to llama.cpp. */
  flashAttention: boolean | 'auto';
  reason: string;
  /** Completion-workload ms with it on and off, when measured (or remembered). */
  measured?: { onMs: number; offMs: number };
}

/**
 * Keeps flash attention on unless off is faster by more than `margin` (5%): a near tie keeps
 * llama.cpp's default, so two loads of the same model do not flip on noise.
 */
export function pickFlashAttention(onMs: number, offMs: number, margin = 0.05): boolean {
  if (!Number.isFinite(onMs)) return false;
  if (!Number.isFinite(offMs)) return true;
  return !(offMs < onMs * (1 - margin));
}

export function describeChoice(choice: FlashAttentionChoice): string {
  const state = choice.flashAttention === 'auto' ? "llama.cpp's choice" : choice.flashAttention ? 'on' : 'off';
  return `${state} (${choice.reason})`;
}

/** Where and how the choice for one model is remembered. */
export interface AttentionMemoKey {
  modelPath: string;
  role: ModelRole;
  threads: number;
  contextSize: number;
  /** The target's verify batch size (maxProposal + 1): part of the timed workload. */
  verifySize: number;
  /** The backend and llama.cpp release the model runs on: another kernel may give another answer. */
  runtime: string;
}

/**
 * Remembered choices in one small JSON file (VS Code's global storage for the extension). Keys carry
 * the model file's size and modification time, the CPU, the thread count, the context size and
 * the runtime, so a changed file, machine or setting measures again. A missing, unreadable or
 * corrupt file only means measuring again; writes go to a temporary file renamed over the old one.
 */
export class AttentionMemo {
  constructor(private readonly file: string) {}

  static keyFor(key: AttentionMemoKey): string | null {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(key.modelPath);
    } catch {
      return null;
    }
    const cpu = os.cpus()[0]?.model?.trim() ?? 'cpu';
    return [path.resolve(key.modelPath), stat.size, Math.round(stat.mtimeMs), key.role, cpu, key.threads, key.contextSize, key.verifySize, key.runtime].join('|');
  }

  private read(): Record<string, { onMs: number; offMs: number }> {
    try {
      const parsed = JSON.parse(fs.readFileSync(this.file, 'utf8')) as unknown;
      return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, { onMs: number; offMs: number }>) : {};
    } catch {
      return {};
    }
  }

  get(key: string): { onMs: number; offMs: number } | null {
    const entry = this.read()[key];
    return entry && Number.isFinite(entry.onMs) && Number.isFinite(entry.offMs) && entry.onMs > 0 && entry.offMs > 0 ? { onMs: entry.onMs, offMs: entry.offMs } : null;
  }

  /** Stores one measurement; returns an error message instead of throwing (the choice still holds). */
  set(key: string, value: { onMs: number; offMs: number }): string | null {
    // Two processes (windows without the shared worker) may write at once: each writes its own
    // temporary file and renames it over the memo; the loser's entry is measured again next time.
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      const all = this.read();
      all[key] = value;
      // Bounded: the oldest entries go first once there are more than 64 (models come and go).
      const keys = Object.keys(all);
      for (const old of keys.slice(0, Math.max(0, keys.length - 64))) delete all[old];
      fs.mkdirSync(path.dirname(this.file), { recursive: true });
      fs.writeFileSync(tmp, JSON.stringify(all, null, 1));
      fs.renameSync(tmp, this.file);
      return null;
    } catch (error) {
      try {
        fs.rmSync(tmp, { force: true });
      } catch {
        // Nothing was written there (the folder itself is unusable).
      }
      return (error as Error).message;
    }
  }
}

/** How a model is placed and configured, as far as the choice depends on it. */
export interface AttentionChoiceInput {
  setting: FlashAttentionSetting;
  /** Layers on a GPU: with any, llama.cpp's choice stands (its GPU kernels do not have the CPU's problem). */
  gpuLayers: number;
  /** node-llama-cpp's model.flashAttentionSupported: false for architectures llama.cpp cannot run it on. */
  supported: boolean;
  role: ModelRole;
  memo?: AttentionMemo;
  memoKey?: AttentionMemoKey;
  /** Times the model's workload with flash attention on or off (creates and disposes a context). */
  measure: (flashAttention: boolean) => Promise<number>;
}

/** Resolves the setting for one model: the user's explicit choice, llama.cpp's on a GPU, else measured. */
export async function chooseFlashAttention(input: AttentionChoiceInput): Promise<FlashAttentionChoice> {
  if (input.setting === 'off') return { flashAttention: false, reason: 'draftline.flashAttention' };
  if (!input.supported) return { flashAttention: false, reason: 'not supported by this model' };
  if (input.setting === 'on') return { flashAttention: true, reason: 'draftline.flashAttention' };
  if (input.gpuLayers > 0) return { flashAttention: 'auto', reason: 'on the GPU' };
  const key = input.memo && input.memoKey ? AttentionMemo.keyFor(input.memoKey) : null;
  const remembered = key ? input.memo!.get(key) : null;
  if (remembered) {
    return { flashAttention: pickFlashAttention(remembered.onMs, remembered.offMs), reason: `remembered: ${fmt(remembered.onMs)} ms with, ${fmt(remembered.offMs)} ms without`, measured: remembered };
  }
  // Measured one after the other, each on its own context that is disposed before the next is
  // created, so memory never holds two KV caches of a large model. Two rounds in opposite orders
  // (on, off, then off, on), each setting's best time kept: a window starting up or a test running
  // beside it can skew one round several times over. The answer is remembered
  // only when both rounds pick the same setting; otherwise it holds for this load and the next
  // load measures again.
  const problems: string[] = [];
  const time = (flashAttention: boolean) =>
    input.measure(flashAttention).catch((error: unknown) => {
      problems.push(`${flashAttention ? 'with' : 'without'}: ${error instanceof Error ? error.message : String(error)}`);
      return Number.POSITIVE_INFINITY;
    });
  const on1 = await time(true);
  const off1 = await time(false);
  if (!Number.isFinite(on1) && !Number.isFinite(off1)) return { flashAttention: 'auto', reason: `measurement failed (${problems.join('; ')})` };
  const bothRan = Number.isFinite(on1) && Number.isFinite(off1);
  const off2 = bothRan ? await time(false) : off1;
  const on2 = bothRan ? await time(true) : on1;
  const measured = { onMs: Math.min(on1, on2), offMs: Math.min(off1, off2) };
  const agree = pickFlashAttention(on1, off1) === pickFlashAttention(on2, off2);
  let reason = `measured: ${fmt(measured.onMs)} ms with, ${fmt(measured.offMs)} ms without, a completion's work`;
  if (problems.length > 0) reason += ` (${problems.join('; ')})`;
  if (key && Number.isFinite(measured.onMs) && Number.isFinite(measured.offMs)) {
    const problem = agree ? input.memo!.set(key, measured) : 'the two rounds disagreed (a busy machine?): measured again next load';
    if (problem) reason += `; not remembered: ${problem}`;
  }
  return { flashAttention: pickFlashAttention(measured.onMs, measured.offMs), reason, measured };
}

function fmt(ms: number): string {
  return Number.isFinite(ms) ? ms.toFixed(ms < 10 ? 1 : 0) : '-';
}
