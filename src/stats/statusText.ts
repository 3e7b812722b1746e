// What the status bar tooltip (and Show Stats) say about the backend, the threads and the acceptance,
// with the reason when a figure would otherwise puzzle: a CPU fallback, "1 thread", an acceptance of "-".
import { SERVED_NAMES } from './servedKind';
import type { StatusSummary } from './statsCollector';
import type { BackendInfo, LoadedModelsInfo, RuntimeChoice } from '../shared/backendInfo';

export type StatusKind = 'loading' | 'ready' | 'busy' | 'off' | 'error';

export interface TooltipState {
  status: { kind: StatusKind; message?: string };
  /** The decode mode the toggles ask for ('' before the engine says). */
  mode: string;
  models: LoadedModelsInfo | null;
  /** A server backend (then `models` is null): where it is and what it said of itself. */
  server?: BackendInfo | null;
  summary: StatusSummary | null;
  /** Next-edit suggestions' line (shown, applied, dismissed, time to the first edit), when any was asked. */
  nextEdits?: string | null;
  /** What is said after a model's name about its file ("local file, not verified"), and the next-edit model's name once resolved. */
  files?: ModelFileNotes;
}

/** Notes on the model files, for the lines that name the models (none: nothing to say). */
export interface ModelFileNotes {
  target?: string;
  draft?: string;
  /** The next-edit model's name, with its note when it has one. */
  nextEdit?: string;
}

const GPU_NAMES: Record<string, string> = { cuda: 'CUDA', vulkan: 'Vulkan', metal: 'Metal', auto: 'The GPU backend' };
export const gpuName = (gpu: string) => GPU_NAMES[gpu] ?? gpu;
const orList = (gpus: string[]) => gpus.map(gpuName).join(' or ');

/** Device names of GPUs that are software rasterizers: ggml runs on them (tests do), but the CPU does the work. */
const SOFTWARE_GPU = /llvmpipe|lavapipe|swiftshader|softpipe/i;

/**
 * Where inference runs and, when that is the CPU, why: the one description the status bar, Show
 * Stats and the worker's load log share, so they cannot disagree (a Vulkan binary that sees no
 * device is the CPU everywhere, not "Vulkan" in the log and "CPU" in the tooltip).
 */
export function backendExplanation(models: Pick<LoadedModelsInfo, 'backend' | 'gpuLayers' | 'runtime' | 'gpuFallback'>): string {
  const r = models.runtime;
  if (models.gpuFallback) return `CPU (${models.gpuFallback})`;
  // A GPU binary that loaded but sees no device (e.g. Vulkan with only a software rasterizer): the CPU does the work.
  if (r && models.backend !== 'cpu' && r.gpuDevices.length === 0) return `CPU (no GPU found: ${gpuName(models.backend)} sees no GPU device)`;
  // macOS arm64's one binary is Metal: draftline.gpu "cpu" runs it with no layer on the GPU (llamaGpuOption).
  if (r?.requestedGpu === 'cpu' && models.gpuLayers.target === 0 && models.gpuLayers.draft === 0) return 'CPU (as set in draftline.gpu)';
  if (models.backend !== 'cpu') {
    const devices = r?.gpuDevices ?? [];
    const on = devices.length > 0 ? ` on ${devices.join(', ')}` : '';
    if (models.gpuLayers.target === 0 && models.gpuLayers.draft === 0) return `${gpuName(models.backend)}${on}, but no layer fits in GPU memory: running on the CPU`;
    const software = devices.some((d) => SOFTWARE_GPU.test(d)) ? ' (a software GPU: the CPU does its work)' : '';
    return `${gpuName(models.backend)}${on}${software}, ${models.gpuLayers.target} + ${models.gpuLayers.draft} layers on the GPU`;
  }
  if (!r) return 'CPU';
  if (r.requestedGpu === 'cpu') return 'CPU (as set in draftline.gpu)';
  if (r.gpuBinaries.length === 0) return 'CPU (a CPU-only package: it has no GPU backend)';
  const usable = r.gpuBinaries.filter((g) => r.gpuDetected.includes(g));
  if (usable.length > 0) return `CPU (no usable GPU found: ${orList(usable)} is installed but did not start)`;
  const otherDetected = r.gpuDetected.filter((g) => !r.gpuBinaries.includes(g));
  if (otherDetected.length > 0) return `CPU (this machine has ${orList(otherDetected)} but no ${orList(r.gpuBinaries)} driver, and this package can use ${orList(r.gpuBinaries)} only)`;
  return `CPU (no GPU found; this package can use ${orList(r.gpuBinaries)})`;
}

/**
 * Which path runs the target's decode steps and, where Draftline's native addon is not in the package
 * (it is built for Linux x64 only), what node-llama-cpp's own path costs (measured: bench/PROFILE.md,
 * the `direct` vs `native` columns and the threadpool section).
 */
export function decodePathExplanation(models: Pick<LoadedModelsInfo, 'nativeAddon' | 'threads' | 'backend'>): string {
  const addon = models.nativeAddon;
  if (!addon) return "node-llama-cpp's";
  if (addon.used) return `native (Draftline's addon: the target's tokens of a verify batch in one call${models.threads >= 2 && models.backend === 'cpu' ? ', a persistent thread pool' : ''})`;
  const read = "reading the target's tokens takes one call per verified position instead of one per step: slower, the more so with a large vocabulary such as Qwen2.5-Coder's";
  // Without the addon's thread pool, llama.cpp (as node-llama-cpp builds it) makes and joins its threads for every step.
  const threads =
    models.threads >= 2 && models.backend === 'cpu'
      ? `; and llama.cpp starts its ${models.threads} threads anew for every step, which makes a step several times slower than 1 thread on Linux (set draftline.threads to 1 if completions are slow)`
      : '';
  return `node-llama-cpp's own path (${addon.reason}): ${read}${threads}`;
}

/** Whether the target verifies token trees (LoadedModelsInfo.treeVerification), in words. */
export function treeVerificationExplanation(trees: NonNullable<LoadedModelsInfo['treeVerification']>): string {
  if (trees.used) return "verified in one batch where verify batches have a fixed shape (Draftline's KV context with one stream for all sequences)";
  return `chains only: ${trees.reason}`;
}

/** The thread count and where it comes from ("1 (the default: 2 cores − 1, …)"). */
export function threadsExplanation(threads: number, runtime?: Pick<RuntimeChoice, 'cores' | 'requestedThreads'>): string {
  const n = String(threads);
  if (!runtime) return n;
  if (runtime.requestedThreads > 0) return `${n} (as set in draftline.threads)`;
  const { cores } = runtime;
  if (cores <= 1) return `${n} (this machine has 1 core; set draftline.threads to change)`;
  const rule = threads === cores - 1 ? `${cores} cores − 1, leaving a core to the editor` : `${cores} cores − 1, at most 8`;
  return `${n} (the default: ${rule}; set draftline.threads to change)`;
}

/** The acceptance of the last completion, or why there is none. */
export function acceptanceExplanation(summary: StatusSummary | null, mode: string): string {
  if (summary?.acceptance != null) return `${Math.round(summary.acceptance * 100)}% of proposed tokens (last completion)`;
  if (!summary || summary.latencyMs === null) return '- (no completion yet)';
  if (summary.served !== 'computed') return `- (the last completion came ${SERVED_NAMES[summary.served]})`;
  if (mode.startsWith('server')) return "- (the server reported no speculation: llama-server reports its draft model's, when started with -md)";
  if ((summary.mode ?? mode) === 'plain') return '- (plain decoding: speculation off)';
  return '- (no proposals in the last completion: speculation proposes only where it measured that it pays; see Show Stats)';
}

/** The status bar tooltip as Markdown, one paragraph a line. */
export function statusTooltip(state: TooltipState): string {
  const s = state.status;
  const lines = [`**Draftline** — ${s.kind === 'error' ? `error: ${s.message ?? ''}` : s.message ? `${s.kind}: ${s.message}` : s.kind}`, `Mode: ${state.mode || '-'}`];
  const m = state.models;
  const server = state.server?.remote;
  if (server) lines.push(`Server: ${state.server!.kind} at ${server.endpoint} (${server.server})`, `Model: ${state.server!.model}`);
  const note = (text?: string) => (text ? ` (${text})` : '');
  if (m) {
    lines.push(`Target: ${m.target.name}${note(state.files?.target)}`, `Draft: ${m.draft ? `${m.draft.name}${note(state.files?.draft)}` : 'none'}`);
    lines.push(`Backend: ${backendExplanation(m)}`);
    if (m.nativeAddon && !m.nativeAddon.used) lines.push(`Decoding: ${decodePathExplanation(m)}`);
    lines.push(`Threads: ${threadsExplanation(m.threads, m.runtime)}`);
  }
  if (m || server || state.summary) lines.push(`Acceptance: ${acceptanceExplanation(state.summary, state.mode)}`);
  if (state.summary?.tokensPerEvaluation != null) lines.push(`Tokens per target evaluation: ${state.summary.tokensPerEvaluation.toFixed(2)}`);
  if (m && state.files?.nextEdit) lines.push(`Next-edit model: ${state.files.nextEdit}`);
  if (state.nextEdits) lines.push(state.nextEdits);
  lines.push('Click for Draftline commands');
  return lines.join('\n\n');
}
