import * as path from 'node:path';
import * as vscode from 'vscode';
import type { EngineSettings } from '../engine/completionEngine';
import type { ModelSettings, SpeculationSettings } from '../engine/types';
import { embeddedPairPaths } from '../models/embedded';

export const SECTION = 'draftline';

/**
 * Model paths come from user or machine settings only: a cloned repository's workspace settings must
 * not be able to point the extension at a file of its choosing.
 */
function userOnly<T>(config: vscode.WorkspaceConfiguration, key: string): T | undefined {
  const inspected = config.inspect<T>(key);
  return inspected?.globalValue ?? inspected?.defaultValue;
}

export interface ResolvedModelSettings extends ModelSettings {
  /** True when the embedded demo pair is used because nothing is configured. */
  targetIsEmbedded: boolean;
  draftIsEmbedded: boolean;
}

export function embeddedModels(extensionPath: string) {
  return embeddedPairPaths(extensionPath);
}

export function readModelSettings(extensionPath: string): ResolvedModelSettings {
  const config = vscode.workspace.getConfiguration(SECTION);
  const embedded = embeddedModels(extensionPath);
  const target = (userOnly<string>(config, 'targetModel') ?? '').trim();
  const draft = (userOnly<string>(config, 'draftModel') ?? '').trim();
  const gpuLayers = config.get<number | string>('gpuLayers', 'auto');
  return {
    targetModel: target || embedded.target,
    // An explicit "none" runs the target alone (n-gram speculation still works).
    draftModel: draft === 'none' ? '' : draft || (target ? '' : embedded.draft),
    targetIsEmbedded: !target,
    draftIsEmbedded: !draft && !target,
    gpu: config.get('gpu', 'auto'),
    gpuLayers: typeof gpuLayers === 'number' ? gpuLayers : 'auto',
    threads: config.get('threads', 0),
    contextSize: config.get('contextSize', 2048),
  };
}

export function readSpeculationSettings(): SpeculationSettings {
  const config = vscode.workspace.getConfiguration(SECTION);
  return {
    maxProposal: clamp(config.get('speculation.maxProposal', 8), 1, 32),
    ngramMinMatch: clamp(config.get('speculation.ngramMinMatch', 3), 1, 16),
    ngramMaxMatch: clamp(config.get('speculation.ngramMaxMatch', 8), 1, 32),
    draftMinConfidence: Math.min(1, Math.max(0, config.get('speculation.draftMinConfidence', 0.35))),
    adaptive: config.get('speculation.adaptive', true),
  };
}

export function readEngineSettings(draftAvailable: boolean): EngineSettings {
  const config = vscode.workspace.getConfiguration(SECTION);
  return {
    enabled: config.get('enable', true),
    speculation: config.get('speculation.enabled', true),
    ngramReuse: config.get('speculation.ngramReuse', true),
    draftAvailable,
    maxTokens: clamp(config.get('maxTokens', 64), 1, 1024),
    maxLines: clamp(config.get('maxLines', 16), 1, 200),
    disabledLanguages: config.get('disabledLanguages', []),
    maxDocumentChars: 20_000_000,
    maxPrefixChars: clamp(config.get('maxPrefixChars', 3000), 100, 200_000),
    maxSuffixChars: clamp(config.get('maxSuffixChars', 1000), 0, 100_000),
  };
}

export function debounceMs(): number {
  return clamp(vscode.workspace.getConfiguration(SECTION).get('debounceMs', 150), 0, 5000);
}

/** Toggles persist in user settings. */
export async function toggleSetting(key: string): Promise<boolean> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const value = !config.get<boolean>(key, true);
  await config.update(key, value, vscode.ConfigurationTarget.Global);
  return value;
}

function clamp(value: number, min: number, max: number): number {
  return Number.isFinite(value) ? Math.min(max, Math.max(min, value)) : min;
}
