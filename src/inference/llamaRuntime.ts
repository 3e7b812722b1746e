import type { Llama } from 'node-llama-cpp' with { 'resolution-mode': 'import' };
import type { ModelSettings } from '../engine/types';

export type NodeLlamaCpp = typeof import('node-llama-cpp', { with: { 'resolution-mode': 'import' } });

let libraryPromise: Promise<NodeLlamaCpp> | undefined;

/** node-llama-cpp is ESM-only with top-level await: from CommonJS it can only come in through import(). */
export function loadLibrary(): Promise<NodeLlamaCpp> {
  // Kept as a real dynamic import in the CommonJS bundle (esbuild marks the package external).
  libraryPromise ??= import('node-llama-cpp');
  return libraryPromise;
}

/** Threads for inference: the library's default (max(cores, 4)) oversubscribes small machines badly. */
export function resolveThreads(requested: number, cores: number): number {
  if (requested > 0) return Math.floor(requested);
  return Math.max(1, Math.min(8, cores - 1));
}

export interface RuntimeLog {
  (level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
}

/** Gets a llama.cpp binding that never compiles or downloads: prebuilt binaries only. */
export async function getRuntime(settings: Pick<ModelSettings, 'gpu'>, threads: number, log: RuntimeLog): Promise<Llama> {
  const lib = await loadLibrary();
  const gpu = settings.gpu === 'cpu' ? false : settings.gpu;
  try {
    return await lib.getLlama({
      gpu,
      build: 'never',
      skipDownload: true,
      usePrebuiltBinaries: true,
      progressLogs: false,
      maxThreads: threads,
      logLevel: lib.LlamaLogLevel.warn,
      logger: (level, message) => {
        const text = message.trim();
        if (text) log(level === lib.LlamaLogLevel.error || level === lib.LlamaLogLevel.fatal ? 'error' : 'warn', `llama.cpp: ${text}`);
      },
    });
  } catch (error) {
    if (gpu === 'auto' || gpu === false) throw error;
    throw new Error(`GPU backend "${settings.gpu}" is not available with the installed prebuilt binaries (${(error as Error).message}). Set draftline.gpu to "auto" or "cpu".`);
  }
}
