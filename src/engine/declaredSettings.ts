// The settings as package.json declares them (contributes.configuration): the one place their
// defaults, bounds and scopes are written. The editor reads them through a SettingsReader over its
// configuration; the defaults the engine, the worker and the tests start from are the same reading
// of an empty configuration, so no default is written twice.
// Only `contributes` (a named import): esbuild then bundles that part of package.json alone.
import { contributes } from '../../package.json';
import type { BackendKind, BackendSettings, SpeculationSettings } from '../shared/types';
import type { EngineSettings } from './completionEngine';
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
  };
}

export function engineSettingsFrom(config: SettingsReader, draftAvailable: boolean): EngineSettings {
  return {
    enabled: config.value('enable'),
    speculation: config.value('speculation.enabled'),
    ngramReuse: config.value('speculation.ngramReuse'),
    draftAvailable,
    maxTokens: config.number('maxTokens'),
    maxLines: config.number('maxLines'),
    disabledLanguages: config.value('disabledLanguages'),
    maxDocumentChars: MAX_DOCUMENT_CHARS,
    maxPrefixChars: config.number('maxPrefixChars'),
    maxSuffixChars: config.number('maxSuffixChars'),
  };
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
