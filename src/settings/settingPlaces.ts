// Where a setting is read from and where a command must write it so that it takes effect, for the
// local and the remote windows of VS Code (Remote-SSH, WSL, Dev Containers, Codespaces, code-server).
// Plain TypeScript: the VS Code layer (src/vscode/settings.ts, remoteSettings.ts) passes in what
// vscode.env.remoteName and WorkspaceConfiguration.inspect say.
//
// What VS Code does (1.100, checked in code-server 4.100.3 by test/e2e/remoteSettings.e2e.test.ts):
// - In a remote window the extension runs on the remote machine, and VS Code applies machine-scoped
//   settings there only from the Remote settings (<server data>/Machine/settings.json); a value in the
//   User settings is ignored, with a hover in the settings editor and nothing else. Until VS Code next
//   reads the User settings (any settings write) a value that was there at startup may still apply,
//   then vanishes: the model silently changes back.
// - update(key, value, ConfigurationTarget.Global) of a machine-scoped setting in a remote window
//   writes the Remote settings (inspect then shows it as globalRemoteValue), where it applies.
// - A workspace or folder value wins over a Global write of a window- or resource-scoped setting: a
//   command that writes Global there changes nothing the user sees.
import { type SettingDeclaration, type SettingValues, USER_ONLY_SCOPES } from './settingsReader';

/** The scopes VS Code reads only from the machine the extension runs on (User settings locally, Remote settings in a remote window). */
const MACHINE_SCOPES = new Set(['machine', 'machine-overridable']);

export type WriteTarget = 'global' | 'workspace' | 'workspaceFolder';

/** What inspect() says of a key, with the split VS Code makes in a remote window (not in @types/vscode, present at run time). */
export interface PlacedValues<T = unknown> extends SettingValues<T> {
  /** The value in the User settings of the machine the window is on (a remote window's local side). */
  globalLocalValue?: T;
  /** The value in the Remote settings (a remote window only). */
  globalRemoteValue?: T;
}

export function isMachineScoped(declaration: SettingDeclaration | undefined): boolean {
  return MACHINE_SCOPES.has(declaration?.scope ?? '');
}

/**
 * Where a command writes a setting so that it takes effect: the most specific place that already sets
 * it (a folder's or the workspace's settings would otherwise override the write), else the user
 * settings. A setting Draftline reads from user settings only is always written there: Global, which
 * VS Code writes to the Remote settings for a machine-scoped setting in a remote window.
 */
export function writeTarget(declaration: SettingDeclaration | undefined, values: SettingValues | undefined): WriteTarget {
  if (USER_ONLY_SCOPES.has(declaration?.scope ?? '')) return 'global';
  if (values?.workspaceFolderValue !== undefined) return 'workspaceFolder';
  if (values?.workspaceValue !== undefined) return 'workspace';
  return 'global';
}

/** The settings file a write to `target` lands in, as the settings editor names its tabs. */
export function placeName(target: WriteTarget, declaration: SettingDeclaration | undefined, remoteName: string | undefined): string {
  if (target === 'workspaceFolder') return 'folder settings';
  if (target === 'workspace') return 'workspace settings';
  return remoteName && isMachineScoped(declaration) ? `Remote settings (${remoteName})` : 'user settings';
}

/** One setting a command wrote: what it means to the user, and the place's name (placeName). */
export interface SavedSetting {
  what: string;
  place: string;
}

/**
 * The confirmation of a command that wrote settings: each one where it went. One place is named once
 * ("A and B saved in the user settings"); in a remote window a machine setting and a window setting
 * go to different files, and each is named with its own.
 */
export function savedMessage(saved: readonly SavedSetting[]): string {
  const places = [...new Set(saved.map((s) => s.place))];
  if (places.length === 1) {
    const whats = saved.map((s) => s.what);
    const listed = whats.length <= 2 ? whats.join(' and ') : `${whats.slice(0, -1).join(', ')} and ${whats.at(-1)}`;
    return `Draftline: ${listed} saved in the ${places[0]}`;
  }
  return `Draftline: ${saved.map((s, i) => `${s.what} ${i === 0 ? 'saved ' : ''}in the ${s.place}`).join(', ')}`;
}

export interface IgnoredSetting {
  /** The full key, e.g. draftline.targetModel. */
  key: string;
  /** The value in the User settings that VS Code does not apply in this window. */
  value: unknown;
}

/**
 * The machine-scoped settings a remote window ignores: set in the User settings (as the file says, where
 * the extension can read it, e.g. code-server's; or as inspect() still reports it) and not in the
 * Remote settings. None in a local window.
 */
export function ignoredInRemoteWindow(options: {
  remoteName: string | undefined;
  section: string;
  declarations: Readonly<Record<string, SettingDeclaration>>;
  /** The parsed User settings file, where the extension can read it (undefined: it cannot). */
  userSettingsFile: Record<string, unknown> | undefined;
  inspect: (key: string) => PlacedValues | undefined;
}): IgnoredSetting[] {
  if (!options.remoteName) return [];
  const ignored: IgnoredSetting[] = [];
  for (const [key, declaration] of Object.entries(options.declarations)) {
    if (!key.startsWith(`${options.section}.`) || !isMachineScoped(declaration)) continue;
    const values = options.inspect(key.slice(options.section.length + 1));
    if (values?.globalRemoteValue !== undefined) continue;
    const inFile = options.userSettingsFile?.[key];
    const value = inFile !== undefined ? inFile : values?.globalLocalValue;
    if (value !== undefined) ignored.push({ key, value });
  }
  return ignored;
}

/** The notification for ignored settings: what, why, and where they belong. */
export function ignoredSettingsMessage(remoteName: string, ignored: readonly IgnoredSetting[]): string {
  const keys = ignored.map((s) => s.key);
  const listed = keys.length <= 3 ? keys.join(', ') : `${keys.slice(0, 3).join(', ')} and ${keys.length - 3} more`;
  const verb = keys.length === 1 ? 'is' : 'are';
  return (
    `Draftline: ${listed} ${verb} set in your User settings, which this remote window (${remoteName}) ignores: ` +
    `Draftline runs on the remote machine and VS Code reads its machine settings (models, GPU, backend, threads) from the Remote settings there. ` +
    `Copy to Remote to use ${keys.length === 1 ? 'it' : 'them'}.`
  );
}

/** A line for the log when the window is remote: where Draftline runs and reads its machine settings. */
export function remoteWindowNote(remoteName: string | undefined): string | null {
  if (!remoteName) return null;
  return `remote window (${remoteName}): Draftline and its inference worker run on the remote machine (models and GPU must be there); its machine settings (models, GPU, backend, threads, context size) are read from the Remote settings, not the User settings`;
}

/**
 * JSON with comments and trailing commas (VS Code's settings.json) to a value. Throws on anything else
 * that is not JSON, like JSON.parse.
 */
export function parseJsonc(text: string): unknown {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      // A string, escapes included, copied as it is.
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (c === ',') {
      // A trailing comma: the next significant character closes the object or array.
      let j = i + 1;
      for (;;) {
        while (j < text.length && /\s/.test(text[j]!)) j++;
        if (text[j] === '/' && text[j + 1] === '/') while (j < text.length && text[j] !== '\n') j++;
        else if (text[j] === '/' && text[j + 1] === '*') j = text.indexOf('*/', j + 2) < 0 ? text.length : text.indexOf('*/', j + 2) + 2;
        else break;
      }
      if (text[j] !== '}' && text[j] !== ']') out += c;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out);
}
