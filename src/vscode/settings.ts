import * as os from 'node:os';
import * as vscode from 'vscode';
// Only `contributes` (a named import): esbuild then bundles that part of package.json alone.
import { contributes } from '../../package.json';
import type { EngineSettings } from '../engine/completionEngine';
import { SettingsReader, type SettingDeclaration } from '../engine/settingsReader';
import type { BackendKind, ModelSettings, SpeculationSettings } from '../shared/types';
import type { BackendSettings } from '../remote/serverBackend';
import { embeddedPairPaths } from '../models/embedded';
import { resolveModelPath } from '../models/modelPath';
import type { ExtraContextSettings } from './extraContext';

export const SECTION = 'draftline';

/** Where a settings problem goes (the controller logs it and shows one notification). */
export type SettingProblemReport = (message: string) => void;

/** The bounds, defaults and scopes declared in package.json: the one place they are written. */
const DECLARATIONS = contributes.configuration.properties as Record<string, SettingDeclaration>;

/**
 * Settings that cost resources or reach the network (model paths, endpoint, backend, threads,
 * context size) are machine-scoped in package.json and read from user or machine settings only: a
 * cloned repository's workspace settings must not be able to choose them.
 */
function settings(report?: SettingProblemReport): SettingsReader {
  return new SettingsReader(SECTION, DECLARATIONS, vscode.workspace.getConfiguration(SECTION), report);
}

export interface ResolvedModelSettings extends ModelSettings {
  /** True when the embedded demo pair is used because nothing is configured. */
  targetIsEmbedded: boolean;
  draftIsEmbedded: boolean;
}

export function embeddedModels(extensionPath: string) {
  return embeddedPairPaths(extensionPath);
}

export function readModelSettings(extensionPath: string, report?: SettingProblemReport): ResolvedModelSettings {
  const config = settings(report);
  const embedded = embeddedModels(extensionPath);
  const modelPath = (key: string) => {
    const resolved = resolveModelPath(`${SECTION}.${key}`, (config.value<string>(key) ?? '').trim(), os.homedir());
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
    threads: config.threads('threads', os.availableParallelism()),
    contextSize: config.number('contextSize'),
  };
}

export function readSpeculationSettings(report?: SettingProblemReport): SpeculationSettings {
  const config = settings(report);
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
  };
}

export function readEngineSettings(draftAvailable: boolean, report?: SettingProblemReport): EngineSettings {
  const config = settings(report);
  return {
    enabled: config.value('enable'),
    speculation: config.value('speculation.enabled'),
    ngramReuse: config.value('speculation.ngramReuse'),
    draftAvailable,
    maxTokens: config.number('maxTokens'),
    maxLines: config.number('maxLines'),
    disabledLanguages: config.value('disabledLanguages'),
    maxDocumentChars: 20_000_000,
    maxPrefixChars: config.number('maxPrefixChars'),
    maxSuffixChars: config.number('maxSuffixChars'),
  };
}

export function readExtraContextSettings(report?: SettingProblemReport): ExtraContextSettings {
  const config = settings(report);
  return { enabled: config.value('extraContext.enabled'), maxTokens: config.number('extraContext.maxTokens') };
}

export function debounceMs(report?: SettingProblemReport): number {
  return settings(report).number('debounceMs');
}

/** Toggles persist in user settings. */
export async function toggleSetting(key: string): Promise<boolean> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const value = !config.get<boolean>(key, true);
  await config.update(key, value, vscode.ConfigurationTarget.Global);
  return value;
}

/** The backend and, for a server, where it is (user/machine settings only: see package.json). */
export function readBackendSettings(report?: SettingProblemReport): BackendSettings {
  const config = settings(report);
  return {
    kind: config.choice<BackendKind>('backend'),
    endpoint: (config.value<string>('server.endpoint') ?? '').trim(),
    model: (config.value<string>('server.model') ?? '').trim(),
    caFile: (config.value<string>('server.caFile') ?? '').trim(),
    timeoutMs: config.number('server.timeoutMs'),
    sendExtraContext: config.value<boolean>('server.sendExtraContext'),
  };
}
