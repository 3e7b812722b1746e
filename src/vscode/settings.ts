import * as os from 'node:os';
import * as vscode from 'vscode';
import {
  backendSettingsFrom,
  DECLARATIONS,
  type EngineSettings,
  engineSettingsFrom,
  modelSettingsFrom,
  type NextEditSettings,
  nextEditSettingsFrom,
  type ResolvedModelSettings,
  SECTION,
  speculationSettingsFrom,
} from '../settings/declaredSettings';
import { placeName, type WriteTarget, writeTarget } from '../settings/settingPlaces';
import { type SettingDeclaration, SettingsReader } from '../settings/settingsReader';
import type { SpeculationSettings } from '../shared/settings';
import type { BackendSettings } from '../shared/settings';
import { embeddedPairPaths } from '../models/embedded';
import type { ExtraContextSettings } from './extraContext';
import type { NextEditFormatId } from '../nextEdit/types';

export { SECTION, type NextEditSettings, type ResolvedModelSettings };

/** Where a settings problem goes (the controller logs it and shows one notification). */
export type SettingProblemReport = (message: string) => void;

/**
 * Settings that cost resources or reach the network (model paths, endpoint, backend, threads,
 * context size) are machine-scoped in package.json and read from user or machine settings only: a
 * cloned repository's workspace settings must not be able to choose them.
 */
function settings(report?: SettingProblemReport): SettingsReader {
  return new SettingsReader(SECTION, DECLARATIONS, vscode.workspace.getConfiguration(SECTION), report);
}

export function embeddedModels(extensionPath: string) {
  return embeddedPairPaths(extensionPath);
}

export function readModelSettings(extensionPath: string, report?: SettingProblemReport): ResolvedModelSettings {
  return modelSettingsFrom(settings(report), embeddedModels(extensionPath), os.homedir(), os.availableParallelism(), report);
}

/** The next-edit model (a path resolved against the home folder, a hub URI or URL; '' for none) and its prompt layout. */
export function readNextEditSettings(report?: SettingProblemReport): NextEditSettings {
  return nextEditSettingsFrom(settings(report), os.homedir(), report);
}

export function readSpeculationSettings(report?: SettingProblemReport): SpeculationSettings {
  return speculationSettingsFrom(settings(report), report);
}

export function readEngineSettings(draftAvailable: boolean, report?: SettingProblemReport): EngineSettings {
  return engineSettingsFrom(settings(report), draftAvailable);
}

export function readExtraContextSettings(report?: SettingProblemReport): ExtraContextSettings {
  const config = settings(report);
  return { enabled: config.value('extraContext.enabled'), maxTokens: config.number('extraContext.maxTokens') };
}

/** Whether a prefetch waits while the machine runs on battery (draftline.prefetch.pauseOnBattery). */
export function pauseOnBattery(report?: SettingProblemReport): boolean {
  return settings(report).value<boolean>('prefetch.pauseOnBattery');
}

/** Which shown ghost texts get the one after them prefetched (draftline.prefetch.whileShown). */
export function prefetchWhileShown(report?: SettingProblemReport): 'auto' | 'all' | 'chain' {
  return settings(report).choice<'auto' | 'all' | 'chain'>('prefetch.whileShown');
}

/** How long a shared worker this window starts outlives its last window (draftline.sharedWorkerIdleMinutes). */
export function sharedWorkerIdleMs(report?: SettingProblemReport): number {
  return settings(report).number('sharedWorkerIdleMinutes') * 60_000;
}

export function debounceMs(report?: SettingProblemReport): number {
  return settings(report).number('debounceMs');
}

const TARGETS: Record<WriteTarget, vscode.ConfigurationTarget> = {
  global: vscode.ConfigurationTarget.Global,
  workspace: vscode.ConfigurationTarget.Workspace,
  workspaceFolder: vscode.ConfigurationTarget.WorkspaceFolder,
};

/**
 * Writes a setting where it takes effect (src/settings/settingPlaces.ts: where a workspace already sets it,
 * else the user settings, which are the Remote settings for a machine setting in a remote window).
 * Resolves to the name of that place, for the message that confirms the change.
 */
export async function writeSetting(key: string, value: unknown): Promise<string> {
  const config = vscode.workspace.getConfiguration(SECTION, vscode.window.activeTextEditor?.document.uri);
  return updateWhereItApplies(config, key, value, DECLARATIONS[`${SECTION}.${key}`]);
}

/** `config.update` where the value takes effect (see writeSetting), for any section; resolves to the place's name. */
export async function updateWhereItApplies(config: vscode.WorkspaceConfiguration, key: string, value: unknown, declaration?: SettingDeclaration): Promise<string> {
  const target = writeTarget(declaration, config.inspect(key));
  await config.update(key, value, TARGETS[target]);
  return placeName(target, declaration, vscode.env.remoteName);
}

/** Turns a boolean setting over where it takes effect; resolves to the new value and where it was written. */
export async function toggleSetting(key: string, fallback = true): Promise<{ on: boolean; place: string }> {
  const on = !vscode.workspace.getConfiguration(SECTION, vscode.window.activeTextEditor?.document.uri).get<boolean>(key, fallback);
  return { on, place: await writeSetting(key, on) };
}

/** The backend and, for a server, where it is (user/machine settings only: see package.json). */
export function readBackendSettings(report?: SettingProblemReport): BackendSettings {
  return backendSettingsFrom(settings(report));
}

/** Next-edit suggestions in the editor: on or off, the pause before a request, the prompt format (forced or 'auto'). */
export function readNextEditUiSettings(report?: SettingProblemReport): { enabled: boolean; debounceMs: number; format: NextEditFormatId | 'auto' } {
  const config = settings(report);
  return { enabled: config.value<boolean>('nextEdit.enabled'), debounceMs: config.number('nextEdit.debounceMs'), format: config.choice<NextEditFormatId | 'auto'>('nextEdit.format') };
}
