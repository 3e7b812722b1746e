import type { Llama, LlamaGpuType } from '../llama/llamaTypes';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ModelSettings } from '../shared/settings';
import { loadLibraryLock } from '../llama/directDecode';
import type { RuntimeChoice } from '../shared/backendInfo';

export type NodeLlamaCpp = typeof import('node-llama-cpp', { with: { 'resolution-mode': 'import' }});

let libraryPromise: Promise<NodeLlamaCpp> | undefined;

/** node-llama-cpp is ESM-only with top-level await: from CommonJS it can only come in through import(). */
export function loadLibrary(): Promise<NodeLlamaCpp> {
  // Kept as a real dynamic import in the CommonJS bundle (esbuild marks the package external).
  // The library's lock comes with it: the direct decode takes it (llama/directDecode.ts).
  libraryPromise ??= import('node-llama-cpp').then(async (library) => {
    await loadLibraryLock();
    return library;
  });
  return libraryPromise;
}

/**
 * Threads for inference: the library's default (max(cores, 4)) oversubscribes small machines badly,
 * and so does any count above the cores (a completion can take minutes). The extension caps
 * the setting with a message; this keeps any other caller to the cores as well.
 */
export function resolveThreads(requested: number, cores: number): number {
  if (requested > 0) return Math.min(Math.floor(requested), Math.max(1, cores));
  return Math.max(1, Math.min(8, cores - 1));
}

export type RuntimeLog = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

const runtimes = new Map<string, Promise<Llama>>();

/**
 * Gets a llama.cpp binding that never compiles or downloads: prebuilt binaries only. One binding per
 * backend choice for the life of the process: getLlama tests the binary in a child process first
 * (up to seconds on a busy machine), which a model reload or a system-info query need not
 * pay again. Threads are set per context; `maxThreads` is only the binding's cap.
 */
export function getRuntime(settings: Pick<ModelSettings, 'gpu'>, threads: number, log: RuntimeLog): Promise<Llama> {
  const key = settings.gpu;
  let runtime = runtimes.get(key);
  if (!runtime) {
    runtime = createRuntime(settings, Math.max(threads, os.availableParallelism()), log);
    runtimes.set(key, runtime);
    // A failed attempt (e.g. a GPU backend this machine lacks) is not remembered.
    runtime.catch(() => runtimes.delete(key));
  }
  return runtime;
}

/**
 * node-llama-cpp's `gpu` option for draftline.gpu on a platform: which prebuilt binary package it
 * imports (scripts/platforms.mjs lists what each .vsix carries). "cpu" is `false` (the CPU binary),
 * except on macOS arm64, whose only binary is Metal (there is no CPU-only mac-arm64 package:
 * node-llama-cpp would find nothing): there the Metal binary runs with no layer on the GPU
 * (gpuLayersFor gives 0 for "cpu").
 */
export function llamaGpuOption(gpu: ModelSettings['gpu'], platform: NodeJS.Platform = process.platform, arch: string = process.arch): Exclude<ModelSettings['gpu'], 'cpu'> | false {
  if (gpu !== 'cpu') return gpu;
  return platform === 'darwin' && arch === 'arm64' ? 'metal' : false;
}

/** When (process age, ms) the library import and the first binding were ready: the cold-start breakdown. */
export const runtimeMilestones: { libraryAtMs?: number; bindingAtMs?: number } = {};

async function createRuntime(settings: Pick<ModelSettings, 'gpu'>, maxThreads: number, log: RuntimeLog): Promise<Llama> {
  const lib = await loadLibrary();
  runtimeMilestones.libraryAtMs ??= Math.round(process.uptime() * 1000);
  const gpu = llamaGpuOption(settings.gpu);
  try {
    const llama = await lib.getLlama({
      gpu,
      build: 'never',
      skipDownload: true,
      usePrebuiltBinaries: true,
      progressLogs: false,
      maxThreads,
      logLevel: lib.LlamaLogLevel.warn,
      logger: (level, message) => {
        const text = message.trim();
        if (text) log(level === lib.LlamaLogLevel.error || level === lib.LlamaLogLevel.fatal ? 'error' : 'warn', `llama.cpp: ${text}`);
      },
    });
    runtimeMilestones.bindingAtMs ??= Math.round(process.uptime() * 1000);
    return llama;
  } catch (error) {
    if (gpu === 'auto' || gpu === false) throw error;
    throw new Error(`GPU backend "${settings.gpu}" is not available with the installed prebuilt binaries (${(error as Error).message}). Set draftline.gpu to "auto" or "cpu".`);
  }
}

/**
 * What the installed binaries and this machine offer next to what was asked, for the status bar to
 * say why inference runs where it does (e.g. "no GPU found; this package can use Vulkan").
 */
export async function describeRuntimeChoice(settings: Pick<ModelSettings, 'gpu' | 'threads'>, llama: Llama): Promise<RuntimeChoice> {
  const lib = await loadLibrary();
  // The same detection getLlama({gpu: 'auto'}) runs (cached by the library): Vulkan loader, CUDA driver...
  const detected: LlamaGpuType[] = await lib.getLlamaGpuTypes('supported').catch(() => []);
  return {
    requestedGpu: settings.gpu,
    gpuBinaries: installedGpuBinaries(),
    gpuDetected: detected.filter((gpu): gpu is Exclude<LlamaGpuType, false> => gpu !== false),
    gpuDevices: llama.gpu === false ? [] : await llama.getGpuDeviceNames().catch(() => []),
    cores: os.availableParallelism(),
    requestedThreads: settings.threads,
  };
}

/**
 * GPU backends whose prebuilt binary package sits where node-llama-cpp imports it from
 * (node_modules/@node-llama-cpp/<platform>-<gpu>), of node-llama-cpp's exact version, for this OS and CPU.
 */
export function installedGpuBinaries(): string[] {
  try {
    const libDir = path.dirname(path.dirname(require.resolve('node-llama-cpp')));
    const readJson = (file: string) => JSON.parse(fs.readFileSync(file, 'utf8'));
    const version = readJson(path.join(libDir, 'package.json')).version;
    const scope = path.join(libDir, '..', '@node-llama-cpp');
    const found = new Set<string>();
    for (const name of fs.existsSync(scope) ? fs.readdirSync(scope) : []) {
      const gpu = /-(cuda|vulkan|metal)$/.exec(name)?.[1];
      if (!gpu || !fs.existsSync(path.join(scope, name, 'package.json'))) continue;
      const pkg = readJson(path.join(scope, name, 'package.json'));
      const fits = (list: unknown, value: string) => !Array.isArray(list) || list.includes(value);
      if (pkg.version === version && fits(pkg.os, process.platform) && fits(pkg.cpu, process.arch)) found.add(gpu);
    }
    return [...found].sort();
  } catch {
    return [];
  }
}
