// The settings as package.json declares them (contributes.configuration): the one place their
// defaults, bounds and scopes are written. The editor reads them through a SettingsReader over its
// configuration; the defaults the engine, the worker and the tests start from are the same reading
// of an empty configuration, so no default is written twice.
// Only `contributes` (a named import): esbuild then bundles that part of package.json alone.
import { contributes } from '../../package.json';
import { resolveModelPath } from '../models/modelPath';
import type { WindowLimits } from '../prompt/documentWindow';
import type { NextEditFormatId } from '../nextEdit/types';
import type { BackendKind, BackendSettings, ModelSettings, SpeculationSettings } from '../shared/settings';
import { type SettingDeclaration, SettingsReader, type SettingsSource } from './settingsReader';

export const SECTION = 'draftline';

export const DECLARATIONS = contributes.configuration.properties as Record<string, SettingDeclaration>;

/** Documents longer than this get no completions (not a setting: beyond it the editor itself struggles). */
export const MAX_DOCUMENT_CHARS = 20_000_000;

export function speculationSettingsFrom(config: SettingsReader, report?: (message: string) => void): SpeculationSettings {
  const ngramMinMatch = config.number('speculation.ngramMinMatch');
  let ngramMaxMatch = config.number('speculation.ngramMaxMatch');
  if (ngramMaxMatch < ngramMinMatch) {
    // The n-gram index refuses max < min: the load would fail on it.
    report?.(`${SECTION}.speculation.ngramMaxMatch (${ngramMaxMatch}) is below ${SECTION}.speculation.ngramMinMatch (${ngramMinMatch}): using ${ngramMinMatch}.`);
    ngramMaxMatch = ngramMinMatch;
  }
  return {
    maxProposal: config.number('speculation.maxProposal'),
    ngramMinMatch,
    ngramMaxMatch,
    draftMinConfidence: config.number('speculation.draftMinConfidence'),
    adaptive: config.value('speculation.adaptive'),
    lookahead: config.value('speculation.lookahead'),
    suffix: config.value('speculation.suffix'),
    verifyShape: config.value('speculation.verifyShape'),
  };
}

/** What the completion engine reads of the settings (engine/completionEngine.ts). */
export interface EngineSettings extends WindowLimits {
  enabled: boolean;
  speculation: boolean;
  ngramReuse: boolean;
  /** True when a usable draft model is loaded. */
  draftAvailable: boolean;
  maxTokens: number;
  maxLines: number;
  /** A completion's time budget in ms (0: none): once spent, it ends with the line in progress (CompletionRequest.timeBudgetMs). */
  timeBudgetMs: number;
  disabledLanguages: string[];
  /** Documents longer than this are not completed in (chars). */
  maxDocumentChars: number;
  /** Compute the completion after an accepted one before it is asked for (draftline.prefetch.enabled). */
  prefetch: boolean;
}

export function engineSettingsFrom(config: SettingsReader, draftAvailable: boolean): EngineSettings {
  return {
    enabled: config.value('enable'),
    speculation: config.value('speculation.enabled'),
    ngramReuse: config.value('speculation.ngramReuse'),
    draftAvailable,
    maxTokens: config.number('maxTokens'),
    maxLines: config.number('maxLines'),
    timeBudgetMs: config.number('timeBudgetMs'),
    disabledLanguages: config.value('disabledLanguages'),
    maxDocumentChars: MAX_DOCUMENT_CHARS,
    maxPrefixChars: config.number('maxPrefixChars'),
    maxSuffixChars: config.number('maxSuffixChars'),
    prefetch: config.value('prefetch.enabled'),
  };
}

export interface ResolvedModelSettings extends ModelSettings {
  /** True when the embedded demo pair is used because nothing is configured. */
  targetIsEmbedded: boolean;
  draftIsEmbedded: boolean;
}

/** The models to load and how, from user/machine settings (model paths resolved against `home`). */
export function modelSettingsFrom(config: SettingsReader, embedded: { target: string; draft: string }, home: string, cores: number, report?: (message: string) => void): ResolvedModelSettings {
  const modelPath = (key: string) => {
    const resolved = resolveModelPath(`${SECTION}.${key}`, (config.value<string>(key) ?? '').trim(), home);
    if (resolved.note) report?.(resolved.note);
    return resolved.path;
  };
  const target = modelPath('targetModel');
  const draft = modelPath('draftModel');
  return {
    targetModel: target || embedded.target,
    // An explicit "none" runs the target alone (n-gram speculation still works).
    draftModel: draft === 'none' ? '' : draft || (target ? '' : embedded.draft),
    targetIsEmbedded: !target,
    draftIsEmbedded: !draft && !target,
    gpu: config.choice<ModelSettings['gpu']>('gpu'),
    gpuLayers: config.numberOrKeyword('gpuLayers', ['auto'] as const),
    threads: config.threads('threads', cores),
    contextSize: config.number('contextSize'),
    kvSequences: config.numberOrKeyword('kvSequences', ['auto'] as const),
    flashAttention: config.choice<NonNullable<ModelSettings['flashAttention']>>('flashAttention'),
    shiftPromptCache: config.value<boolean>('shiftPromptCache') !== false,
    proposesTrees: config.value<boolean>('speculation.suffix') === true,
  };
}

/** The next-edit model and its prompt layout (draftline.nextEdit.*, user/machine settings only). */
export interface NextEditSettings {
  /** A local path (resolved against the home folder), a hub URI or an http(s) URL; '' for none. */
  model: string;
  /** 'auto': the layout the model's metadata and name say (src/nextEdit/modelFormat.ts). */
  format: NextEditFormatId | 'auto';
}

/** The next-edit settings, model path resolved as the completion models' are (`~`, relative paths against `home`). */
export function nextEditSettingsFrom(config: SettingsReader, home: string, report?: (message: string) => void): NextEditSettings {
  const raw = config.value<unknown>('nextEdit.model');
  if (raw !== undefined && raw !== null && typeof raw !== 'string') report?.(`${SECTION}.nextEdit.model is ${JSON.stringify(raw)}, not a path or URI: no next-edit model.`);
  const value = typeof raw === 'string' ? raw.trim() : '';
  const resolved = resolveModelPath(`${SECTION}.nextEdit.model`, value === 'none' ? '' : value, home);
  if (resolved.note) report?.(resolved.note);
  return { model: resolved.path, format: config.choice<NextEditFormatId | 'auto'>('nextEdit.format') };
}

/** What a load is made from: where completions come from and, for the local backend, the models. */
export interface LoadInputs {
  backend: BackendSettings;
  models: ResolvedModelSettings | null;
}

/** Settings a load is made from (the backend, the models and how they run). */
export const RELOAD_KEYS = [
  'backend',
  'server',
  'targetModel',
  'draftModel',
  'gpu',
  'gpuLayers',
  'threads',
  'contextSize',
  'kvSequences',
  'flashAttention',
  'shiftPromptCache',
  // The target's KV context depends on whether a proposer offers trees (ModelSettings.proposesTrees).
  'speculation.suffix',
  'huggingFaceEndpoint',
].map((k) => `${SECTION}.${k}`);

/**
 * Whether a settings change takes a reload: only when a load setting was touched (`affects`, VS
 * Code's ConfigurationChangeEvent.affectsConfiguration) and what the load would be made from now
 * (`wanted`, lazily: it reads every load setting) differs from what the last one was made from.
 * VS Code reports a change for every key a saved settings file mentions, even when its value is the
 * one in effect already, or one Draftline does not read from there (a workspace's threads):
 * reloading then costs the user a pause without completions for nothing. `loaded` is null before any
 * load and after a failed one (saving again retries).
 */
export function reloadOnChange(affects: (key: string) => boolean, loaded: LoadInputs | null, wanted: () => LoadInputs): boolean {
  if (!RELOAD_KEYS.some((key) => affects(key))) return false;
  return loaded === null || !sameJson(loaded, wanted());
}

/** Equal as JSON whatever the key order (settings objects are plain data). */
function sameJson(a: unknown, b: unknown): boolean {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
          )
        : v;
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/**
 * Where completions come from. Every key here is machine-scoped: a workspace's settings cannot
 * switch the backend or point it at a server of their choosing (that would send the user's code there).
 */
export function backendSettingsFrom(config: SettingsReader): BackendSettings {
  return {
    kind: config.choice<BackendKind>('backend'),
    endpoint: (config.value<string>('server.endpoint') ?? '').trim(),
    model: (config.value<string>('server.model') ?? '').trim(),
    caFile: (config.value<string>('server.caFile') ?? '').trim(),
    timeoutMs: config.number('server.timeoutMs'),
    sendExtraContext: config.value<boolean>('server.sendExtraContext'),
    sharedWorker: config.value<boolean>('sharedWorker'),
  };
}

const NOTHING_SET: SettingsSource = { get: () => undefined, inspect: () => undefined };
const defaults = () => new SettingsReader(SECTION, DECLARATIONS, NOTHING_SET);

export const DEFAULT_ENGINE_SETTINGS: EngineSettings = engineSettingsFrom(defaults(), true);
export const DEFAULT_SPECULATION: SpeculationSettings = speculationSettingsFrom(defaults());
/** draftline.debounceMs as declared: the editor's wait before a model call on a cache miss (the bench waits the same). */
export const DEFAULT_DEBOUNCE_MS: number = defaults().number('debounceMs');
