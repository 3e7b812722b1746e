import * as path from 'node:path';
import * as vscode from 'vscode';
import type { DraftlineController } from './controller';
import { LocalBackend } from '../backend/localBackend';
import { showOtherSuggestion } from './ghostTextTriggers';
import { offerRecommendedPair } from './modelDownloads';
import { pickModel } from './modelPicker';
import { readBackendSettings, toggleSetting, writeSetting } from './settings';
import { SERVER_APIS, serverApiKeyName } from '../remote/servers';
import type { BackendKind } from '../shared/settings';

interface MenuItem extends vscode.QuickPickItem {
  command: string;
  args?: unknown[];
}

/** The walkthrough contributed in package.json (contributes.walkthroughs), as VS Code names it. */
export const WALKTHROUGH_ID = 'draftline.draftline#firstSteps';

const MENU: MenuItem[] = [
  { label: '$(circle-slash) Toggle Completions', command: 'draftline.toggleCompletions' },
  { label: '$(rocket) Toggle Speculation', command: 'draftline.toggleSpeculation' },
  { label: '$(references) Toggle N-gram Reuse', command: 'draftline.toggleNgram' },
  { label: '$(arrow-swap) Toggle Next-Edit Suggestions', command: 'draftline.toggleNextEdits' },
  { label: '$(cloud-download) Get Recommended Models', command: 'draftline.getRecommendedModels' },
  { label: '$(server-process) Select Target Model', command: 'draftline.selectTargetModel' },
  { label: '$(server) Select Draft Model', command: 'draftline.selectDraftModel' },
  { label: '$(edit) Select Next-Edit Model', command: 'draftline.selectNextEditModel' },
  { label: '$(cloud) Select Backend (local or server)', command: 'draftline.selectBackend' },
  { label: '$(graph) Show Stats', command: 'draftline.showStats' },
  { label: '$(output) Show Log', command: 'draftline.showLog' },
  { label: '$(book) Getting Started', command: 'workbench.action.openWalkthrough', args: [WALKTHROUGH_ID, false] },
];

export function registerCommands(controller: DraftlineController): vscode.Disposable[] {
  const { context } = controller;
  const toggle = (key: string, name: string) => async () => {
    const { on, place } = await toggleSetting(key);
    controller.applyLiveSettings();
    vscode.window.setStatusBarMessage(`Draftline: ${name} ${on ? 'on' : 'off'} in the ${place} (mode: ${controller.engine.mode})`, 4000);
  };
  return [
    vscode.commands.registerCommand('draftline.toggleCompletions', toggle('enable', 'completions')),
    vscode.commands.registerCommand('draftline.toggleSpeculation', toggle('speculation.enabled', 'speculation')),
    vscode.commands.registerCommand('draftline.toggleNgram', toggle('speculation.ngramReuse', 'n-gram reuse')),
    vscode.commands.registerCommand('draftline.toggleNextEdits', async () => {
      const { on, place } = await toggleSetting('nextEdit.enabled', false);
      controller.nextEdits.settingsChanged();
      controller.nextEditsToggled();
      vscode.window.setStatusBarMessage(`Draftline: next-edit suggestions ${on ? 'on' : 'off'} in the ${place}`, 4000);
      controller.log.info(`next-edit suggestions ${on ? 'on' : 'off'} (${place})`);
    }),
    // Tab and Escape while Draftline draws a next edit (package.json keybindings, by context keys).
    vscode.commands.registerCommand('draftline.nextEdit.jump', () => controller.nextEdits.jump()),
    vscode.commands.registerCommand('draftline.nextEdit.apply', () => controller.nextEdits.applyShown()),
    vscode.commands.registerCommand('draftline.nextEdit.dismiss', () => controller.nextEdits.dismiss()),
    // Internal: VS Code accepted a next edit drawn as ghost text.
    vscode.commands.registerCommand('draftline.nextEdit.accepted', () => controller.nextEdits.ghostAccepted()),
    // Alt+] / Alt+[ (package.json keybindings, over VS Code's own): the only requests that compute alternatives.
    vscode.commands.registerCommand('draftline.showNextSuggestion', () => showOtherSuggestion(controller.provider, 'next')),
    vscode.commands.registerCommand('draftline.showPreviousSuggestion', () => showOtherSuggestion(controller.provider, 'previous')),
    vscode.commands.registerCommand('draftline.selectTargetModel', () => pickModel(context, 'target', controller.log)),
    vscode.commands.registerCommand('draftline.selectDraftModel', () => pickModel(context, 'draft', controller.log)),
    vscode.commands.registerCommand('draftline.selectNextEditModel', () => pickModel(context, 'nextEdit', controller.log)),
    vscode.commands.registerCommand('draftline.getRecommendedModels', () => offerModelsAgain(controller)),
    vscode.commands.registerCommand('draftline.showStats', async () => {
      // The local worker asked how many windows it serves (a server has none to ask).
      await controller.stats.refreshWorkerStatus(controller.backend);
      controller.stats.show();
    }),
    vscode.commands.registerCommand('draftline.showLog', () => controller.log.show()),
    vscode.commands.registerCommand('draftline.clearModelQuarantine', () => clearModelQuarantine(controller)),
    vscode.commands.registerCommand('draftline.selectBackend', () => selectBackend()),
    vscode.commands.registerCommand('draftline.setServerApiKey', () => setServerApiKey(controller)),
    vscode.commands.registerCommand('draftline.showMenu', async () => {
      const choice = await vscode.window.showQuickPick(MENU, { title: `Draftline (mode: ${controller.engine.mode})` });
      if (choice) await vscode.commands.executeCommand(choice.command, ...(choice.args ?? []));
    }),
    // Internal: the user accepted ghost text; remember it as n-gram material, prefetch the next one.
    vscode.commands.registerCommand('draftline.accepted', (key: string, text: string) => {
      controller.accepted(key, text);
    }),
  ];
}

/** The first-run offer of a recommended pair, on demand (the command, the menu, the walkthrough). */
async function offerModelsAgain(controller: DraftlineController): Promise<void> {
  const { backend } = controller;
  if (!(backend instanceof LocalBackend)) {
    void vscode.window.showInformationMessage(
      `Draftline: the recommended models run in Draftline's own worker; completions come from a ${backend.kind} server now. Pick Local first (Draftline: Select Backend).`,
    );
    return;
  }
  await offerRecommendedPair(controller.context, backend.worker, controller.log, { again: true });
}

const BACKENDS: (vscode.QuickPickItem & { backend: BackendKind })[] = [
  { backend: 'local', label: 'Local', description: 'models on this machine, speculative decoding by Draftline' },
  { backend: 'llama-server', label: 'llama-server', description: "llama.cpp's server: the model's FIM template read from it, its own draft model with -md" },
  { backend: 'openai-compatible', label: 'OpenAI-compatible', description: 'vLLM, LM Studio, hosted APIs: /v1/completions' },
  { backend: 'ollama', label: 'Ollama', description: '/api/generate with suffix' },
];

/** Picks the backend, and for a server its endpoint; written to user settings (the controller switches on the change). */
async function selectBackend(): Promise<void> {
  const current = readBackendSettings();
  const choice = await vscode.window.showQuickPick(
    BACKENDS.map((b) => ({ ...b, picked: b.backend === current.kind, detail: b.backend === current.kind ? 'current' : undefined })),
    { title: 'Draftline: where completions are computed' },
  );
  if (!choice) return;
  if (choice.backend !== 'local') {
    const fallback = SERVER_APIS[choice.backend].defaultEndpoint;
    const endpoint = await vscode.window.showInputBox({
      title: `Draftline: ${choice.label} endpoint`,
      prompt: 'Base URL of the server (your code around the cursor is sent there)',
      value: current.kind === choice.backend && current.endpoint ? current.endpoint : fallback,
      validateInput: (value) => (/^https?:\/\/[^/]/.test(value.trim()) ? undefined : 'an http:// or https:// URL'),
    });
    if (endpoint === undefined) return;
    await writeSetting('server.endpoint', endpoint.trim() === fallback ? '' : endpoint.trim());
  }
  const place = await writeSetting('backend', choice.backend);
  vscode.window.setStatusBarMessage(`Draftline: backend ${choice.label}, saved in the ${place}`, 4000);
}

/** Draftline: Clear Model Quarantine. Every quarantined file may load again; the models load now. */
async function clearModelQuarantine(controller: DraftlineController): Promise<void> {
  const entries = controller.quarantine.list();
  if (entries.length === 0) {
    void vscode.window.showInformationMessage('Draftline: no model file is quarantined.');
    return;
  }
  const files = entries.flatMap((e) => Object.keys(e.files));
  controller.quarantine.clear();
  controller.log.info(`model quarantine cleared: ${files.join(', ')}`);
  void vscode.window.showInformationMessage(`Draftline: ${files.map((f) => path.basename(f)).join(', ')} may load again.`);
  await controller.loadModels('model quarantine cleared');
}

/** Stores the API key of the configured endpoint in VS Code's secret storage (never in settings files). */
async function setServerApiKey(controller: DraftlineController): Promise<void> {
  const { context } = controller;
  const settings = readBackendSettings();
  if (settings.kind === 'local') {
    void vscode.window.showInformationMessage('Draftline: the local backend needs no API key. Pick a server first (Draftline: Select Backend).');
    return;
  }
  const endpoint = new URL(settings.endpoint || SERVER_APIS[settings.kind].defaultEndpoint);
  const key = await vscode.window.showInputBox({
    title: `Draftline: API key for ${endpoint.origin}`,
    prompt: 'Sent as "Authorization: Bearer <key>" to this origin only. Empty: remove the stored key.',
    password: true,
    ignoreFocusOut: true,
  });
  if (key === undefined) return;
  const name = serverApiKeyName(endpoint);
  if (key.trim()) await context.secrets.store(name, key.trim());
  else await context.secrets.delete(name);
  if (endpoint.protocol === 'http:' && !['localhost', '127.0.0.1', '[::1]'].includes(endpoint.hostname) && key.trim()) {
    void vscode.window.showWarningMessage(`Draftline: ${endpoint.origin} is plain http: the key and your code cross the network unencrypted. Prefer https.`);
  }
  // Not a setting, so no configuration event: connect again with the new key now.
  await controller.loadModels('API key changed');
}
