// "Use a Local File…" in a real VS Code (code-server + chromium, the extension from this folder): the
// next-edit model's download fails (no route to the hub), the user chooses a file from disk in its
// place. The embedded completion model is refused at once, saying why, with the offer to choose
// another; a file that names a next-edit layout is taken, and from then on every place that names
// the model says "local file, not verified": the picker, the log, Show Stats and the tooltip.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import type { FrameLocator, Page } from 'playwright-core';
import { NEXT_EDIT_CATALOG } from '../../src/models/catalog';
import {
  clickNotificationButton,
  closeQuickInput,
  e2eUnavailableReason,
  gotoLineEnd,
  openFile,
  quickPickRows,
  readNotifications,
  readStatusBarItem,
  runCommand,
  screenshot,
  sleep,
  typeLikeAPerson,
  waitFor,
  waitForNotification,
} from '../../testbed/editorHarness';
import { editorSession, ROOT } from '../support/editorSession';

const STATUS_ID = 'draftline.draftline.status';
const COMPLETION_MODEL = path.join(ROOT, 'models', 'draftline-code-target.gguf');
const SWEEP = NEXT_EDIT_CATALOG.sweep15;

/** Chooses `file` in VS Code's open dialog (code-server's: a quick input holding a path). */
async function chooseInOpenDialog(page: Page, file: string): Promise<void> {
  await waitFor(async () => ((await page.locator('.quick-input-widget').isVisible()) ? true : undefined), { timeoutMs: 30_000, what: 'the open dialog' });
  await sleep(500);
  await page.keyboard.press('Control+A');
  await page.keyboard.type(file, { delay: 5 });
  await sleep(500);
  await page.keyboard.press('Enter');
  await waitFor(async () => ((await page.locator('.quick-input-widget').isVisible()) ? undefined : true), { timeoutMs: 15_000, what: 'the open dialog to close' });
}

/** The text of a page as laid out (a table row per line), as a person reads it. */
async function statsBody(frame: FrameLocator): Promise<string> {
  // biome-ignore lint/performance/useDomNodeTextContent: the text as laid out, cells apart
  return frame.locator('body').innerText({ timeout: 2000 });
}

/** Show Stats' text (its webview's inner frame), read and closed again. */
async function showStatsText(page: Page, expect: RegExp): Promise<string> {
  return waitFor(
    async () => {
      await runCommand(page, 'Draftline: Show Stats');
      const frame = page.locator('iframe.webview.ready').last().contentFrame().locator('iframe#active-frame').contentFrame();
      const read = async () => (await statsBody(frame).catch(() => '')) || undefined;
      const text = await waitFor(read, { timeoutMs: 15_000, what: 'Show Stats' });
      await runCommand(page, 'View: Close Editor');
      return expect.test(text) ? text : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 1000, what: `Show Stats matching ${expect}` },
  );
}

describe('Use a Local File… checks the file for its role', { skip: e2eUnavailableReason() ?? false }, () => {
  const editor = editorSession({
    name: 'e2e-local-model-file',
    extension: 'development',
    files: { 'main.ts': 'export function sum(values: number[]): number {\n  let total = 0;\n  \n}\n' },
    prepare: () => {
      fs.mkdirSync(path.dirname(renamed), { recursive: true });
      fs.copyFileSync(COMPLETION_MODEL, renamed);
    },
    server: {
      settings: {
        // No route to the hub: the download fails at once, as on the machine of issue #55.
        'draftline.huggingFaceEndpoint': 'http://nonexistent.invalid/',
        'draftline.nextEdit.model': SWEEP.uri,
        'draftline.nextEdit.enabled': true,
        'draftline.debounceMs': 100,
        'editor.autoClosingBrackets': 'never',
      },
    },
  });
  const { out: OUT, log } = editor;
  /** A file that names Sweep's layout (by its file name): the embedded model under Sweep's file name. */
  const renamed = path.join(OUT, 'elsewhere', 'sweep-next-edit-1.5b.q8_0.v2.gguf');

  it('the completion model chosen for next edits is refused at once; a next-edit file is taken, named a local file, not verified', async () => {
    const { page } = editor;
    await openFile(page, 'main.ts');
    // Next edits are asked for after an edit once the models serve.
    await waitFor(() => (/ready \d+ ms after activation/.test(log()) ? true : undefined), { timeoutMs: 120_000, intervalMs: 500, what: 'the models loaded' });
    await gotoLineEnd(page, 3);
    await typeLikeAPerson(page, ' let n = 0;', 40);
    await waitForNotification(page, /the next-edit model .* is not downloaded yet/, 60_000);
    await clickNotificationButton(page, /^Download$/);
    await waitForNotification(page, /Cannot download from nonexistent\.invalid/, 60_000);
    await clickNotificationButton(page, /^Use a Local File…$/);
    await chooseInOpenDialog(page, COMPLETION_MODEL);
    // Said at once, with what is wrong and another try.
    const refused = await waitForNotification(page, /draftline-code-target\.gguf is not a next-edit model/, 20_000).catch(async (e: Error) => {
      await screenshot(page, OUT, '01-completion-model-taken');
      const lines = log()
        .split('\n')
        .filter((l) => /download|next-edit|next edit|no suggestion/.test(l));
      throw new Error(`${e.message}\nnotifications: ${JSON.stringify(await readNotifications(page))}\nlog:\n${lines.slice(-12).join('\n')}`);
    });
    assert.match(refused, /names no next-edit prompt layout Draftline knows/);
    await screenshot(page, OUT, '01-completion-model-refused');
    assert.match(log(), /model file refused: draftline-code-target\.gguf is not a next-edit model/);
    await clickNotificationButton(page, /^Choose Another File$/);
    await chooseInOpenDialog(page, renamed);
    // Taken for Sweep's URI: a local file, not verified, in the log...
    const taken = await waitFor(async () => (/next-edit model file: .*sweep-next-edit-1\.5b\.q8_0\.v2\.gguf, local file, not verified/.exec(log()) ?? undefined)?.[0], {
      timeoutMs: 60_000,
      intervalMs: 500,
      what: 'the next-edit model file taken, in the log',
      describe: () => log().split('\n').slice(-12).join('\n'),
    });
    console.log(taken);
    assert.match(log(), new RegExp(`download: ${SWEEP.uri.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} now resolves to .*sweep-next-edit-1\\.5b\\.q8_0\\.v2\\.gguf \\(local file, not verified\\)`));
    // ...in the picker (not "downloaded"),
    await runCommand(page, 'Draftline: Select Next-Edit Model');
    const rows = await waitFor(
      async () => {
        const r = await quickPickRows(page);
        return r.some((x) => x.includes('Sweep Next-Edit')) ? r : undefined;
      },
      { timeoutMs: 15_000, what: 'the next-edit model picker' },
    );
    await screenshot(page, OUT, '02-picker');
    const sweepRow = rows.find((r) => r.includes('Sweep Next-Edit'))!;
    assert.match(sweepRow, /local file, not verified/, sweepRow);
    assert.doesNotMatch(sweepRow, /— downloaded/, sweepRow);
    await closeQuickInput(page);
    // ...in Show Stats,
    const stats = await showStatsText(page, /Next-edit file/);
    assert.match(stats, /Next-edit file:? +local file, not verified/, stats);
    // ...and in the status bar's tooltip.
    const tooltip = await waitFor(
      async () => {
        const item = await readStatusBarItem(page, STATUS_ID, { hover: true });
        return item?.tooltip?.includes('Next-edit model') ? item.tooltip : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 500, what: 'the tooltip naming the next-edit model' },
    );
    assert.match(tooltip, /Next-edit model: sweep-next-edit-1\.5b\.q8_0\.v2 \(local file, not verified\)/, tooltip);
    await screenshot(page, OUT, '03-tooltip');
  });
});
