// What the bench measures with, said in every report's header: Draftline's native addon is built
// before a run (a report of node-llama-cpp's own path would measure the slow path, up to several
// times slower a step with a large vocabulary, without saying so), and each loaded model names the
// path its steps ran on (native / direct / library, a persistent threadpool or llama.cpp's own threads).
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { InferenceSession } from '../src/inference/inferenceSession';
import type { LoadedModelsInfo } from '../src/shared/backendInfo';

const ROOT = path.resolve(__dirname, '..');
/** `npm run bench -- --without-native`: node-llama-cpp's own path, measured on purpose. */
export const WITHOUT_NATIVE_FLAG = '--without-native';

/** What building the addon came to: built now (it was missing or stale) and in how long, or already up to date. */
export type NativeBuild = { built: true; seconds: number } | { built: false; shipped?: boolean };

/** How the run got (or went without) the native addon: one line for the report's header. */
export interface NativeAddonState {
  state: 'built' | 'off' | 'unavailable';
  line: string;
}

export interface NativeAddonInputs {
  /** The bench's arguments (WITHOUT_NATIVE_FLAG). */
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  platform: string;
  /** Builds the addon (buildNativeAddon): what it did, or false where it is not built (not Linux); throws why a build failed. */
  build: () => NativeBuild | false | Promise<NativeBuild | false>;
}

/**
 * Builds dist/draftline-native.node if it is missing or stale (cheap when up to date), or refuses the
 * run with the reason and what to do. Measuring without it is a choice said out loud:
 * `--without-native` (or DRAFTLINE_NATIVE_ADDON=off), and then every report's header says so.
 */
export async function prepareNativeAddon(inputs: NativeAddonInputs): Promise<NativeAddonState> {
  prepared = await nativeAddonState(inputs);
  return prepared;
}

/** What prepareNativeAddon found, for the headers of the reports written after it. */
let prepared: NativeAddonState | null = null;

/** prepareNativeAddon for this process: its arguments, environment and platform, the real build. */
export function prepareBenchNative(argv: readonly string[] = process.argv.slice(2)): Promise<NativeAddonState> {
  return prepareNativeAddon({ argv, env: process.env, platform: `${process.platform}-${process.arch}`, build: buildNativeAddon });
}

async function nativeAddonState(inputs: NativeAddonInputs): Promise<NativeAddonState> {
  const addon = path.relative(ROOT, path.join(ROOT, 'dist', 'draftline-native.node'));
  if (inputs.argv.includes(WITHOUT_NATIVE_FLAG) || inputs.env.DRAFTLINE_NATIVE_ADDON === 'off') {
    // The worker and the sessions read this: the addon is left alone even where dist/ has one.
    inputs.env.DRAFTLINE_NATIVE_ADDON = 'off';
    return { state: 'off', line: `Native addon: off on purpose (${WITHOUT_NATIVE_FLAG} or DRAFTLINE_NATIVE_ADDON=off): every model decodes on node-llama-cpp's own path.` };
  }
  let built: NativeBuild | false;
  try {
    built = await inputs.build();
  } catch (error) {
    throw new Error(
      `npm run bench measures Draftline as it ships, with its native addon (${addon}), and it could not be built: ${(error as Error).message}. ` +
        `Fix that (npm run build shows the compiler's output), or run with ${WITHOUT_NATIVE_FLAG} to measure node-llama-cpp's own path on purpose (the report then says so).`,
    );
  }
  if (!built)
    return { state: 'unavailable', line: `Native addon: none on ${inputs.platform} (it is built for Linux x64 only): every model decodes on node-llama-cpp's own path, as Draftline does here.` };
  const how = built.built
    ? `built for this run (it was missing or stale; ${built.seconds.toFixed(0)} s)`
    : built.shipped
      ? 'built where the bench kit was made, shipped with it'
      : 'up to date (built before from the same source)';
  return { state: 'built', line: `Native addon: ${addon}, ${how}.` };
}

/**
 * The addon for this machine, built by scripts/build-native.mjs. The bench kit carries the addon built
 * where the kit was made and no build script (nor the headers it compiles against): there the shipped
 * addon is used, and none is an error.
 */
export async function buildNativeAddon(): Promise<NativeBuild | false> {
  const script = path.join(ROOT, 'scripts', 'build-native.mjs');
  if (!fs.existsSync(script)) {
    const shipped = path.join(ROOT, 'dist', 'draftline-native.node');
    if (!fs.existsSync(shipped)) throw new Error(`neither ${path.relative(ROOT, shipped)} nor its build script (${path.relative(ROOT, script)}) is here`);
    return { built: false, shipped: true };
  }
  // Imported by its path at run time: a bundled bench (the kit's) must not carry the build script inside it.
  const { buildNative, nativeAddonPath } = (await import(pathToFileURL(script).href)) as {
    buildNative: (options: { quiet: boolean }) => boolean;
    nativeAddonPath: string;
  };
  const before = fs.statSync(nativeAddonPath, { throwIfNoEntry: false })?.mtimeMs;
  const started = performance.now();
  if (!buildNative({ quiet: true })) return false;
  const after = fs.statSync(nativeAddonPath, { throwIfNoEntry: false })?.mtimeMs;
  return before !== undefined && before === after ? { built: false } : { built: true, seconds: (performance.now() - started) / 1000 };
}

/** A loaded target's decode path in words: which path reads its tokens, and how llama.cpp threads. */
export function describeDecodePath(info: Pick<LoadedModelsInfo, 'tokenReader' | 'threadpool' | 'threads' | 'nativeAddon'>): string {
  const reader = info.tokenReader ?? 'unknown';
  const pathName = /^(native|direct|library|device)\b/.exec(reader)?.[1] ?? 'unknown';
  const why = info.nativeAddon && !info.nativeAddon.used ? ` (no native addon: ${info.nativeAddon.reason})` : '';
  const threads = info.threadpool ? `threads: ${info.threadpool}` : `${info.threads} thread${info.threads === 1 ? '' : 's'}`;
  return `${pathName}${why}; ${threads}; tokens read: ${reader}`;
}

/** Every model loaded this run, in load order, by name: the header's decode paths. */
const loaded = new Map<string, string>();

/** InferenceSession.load, with the target's decode path kept for the report's header. */
export async function loadBenchSession(...args: Parameters<typeof InferenceSession.load>): Promise<InferenceSession> {
  const session = await InferenceSession.load(...args);
  recordDecodePath(session.info);
  return session;
}

export function recordDecodePath(info: Pick<LoadedModelsInfo, 'target' | 'tokenReader' | 'threadpool' | 'threads' | 'nativeAddon'>): void {
  loaded.set(info.target.name, describeDecodePath(info));
}

/** The header's lines: the addon's state, then each model's decode path (none loaded yet: said so). */
export function decodePathHeader(native: NativeAddonState | null = prepared): string[] {
  const models = [...loaded].map(([name, described]) => `- ${name}: ${described}`);
  return [...(native ? [native.line] : []), 'Decode path per model (the target; its draft runs beside it the same way):', ...(models.length ? models : ['- no model loaded']), ''];
}

/** The decode paths as results.json keeps them. */
export function decodePaths(): Record<string, string> {
  return Object.fromEntries(loaded);
}

/** Forgets the models recorded (tests). */
export function clearDecodePaths(): void {
  loaded.clear();
}
