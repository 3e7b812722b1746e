// Issue #41 in a real VS Code (code-server + chromium, the extension from this folder, the demo's
// example.ts and embedded models), as the user met it:
// - item 2: typing `if (values.length === 0` with the editor's auto-closing on (VS Code inserts the
//   `)`), the cursor before the `)`: the ghost text is the engine's (the model writes `) return 0;`),
//   and Tab gives the whole line with one `)`.
// - item 1: two kill -9s of the inference worker while it generates do not lock the models out:
//   completions come back after each restart, and nothing is quarantined.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { e2eUnavailableReason, gotoLineEnd, openFile, screenshot, sleep, typeLikeAPerson, waitFor, waitForGhostText } from '../../testbed/editorHarness';
import { editorSession, ROOT } from '../support/editorSession';
import { isAlive } from '../support/processes';
import { directCompletion } from './expected';

/** example.ts's empty line inside average() (scripts/demo-example.sh). */
const AVERAGE_BODY_LINE = 12;
/** What the user of issue #41 typed there; VS Code adds the `)`. */
const TYPED = 'if (values.length === 0';

/** The active editor's line `line` (1-based) as rendered. */
async function editorLine(page: Page, line: number): Promise<string> {
  return page.evaluate((index) => {
    const doc = (globalThis as any).document;
    const view = doc.querySelector('.part.editor .editor-group-container.active .monaco-editor .view-lines');
    const lines: any[] = view ? Array.from(view.querySelectorAll('.view-line')) : [];
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return String(lines[index]?.textContent ?? '').replace(/\u00a0/g, ' ');
  }, line - 1);
}

describe('issue #41 in a real VS Code', { skip: e2eUnavailableReason() ?? false }, () => {
  // Short: a unix socket's path has room for ~100 bytes, and a worktree's test-output may be deep.
  const workerDir = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-e2e41-'));
  const editor = editorSession({
    name: 'e2e-auto-closed',
    extension: 'development',
    prepare: ({ workspace }) => void execFileSync('bash', [path.join(ROOT, 'scripts/demo-example.sh'), workspace]),
    server: {
      // The editor's defaults for auto-closing (the other e2e tests turn it off).
      env: { DRAFTLINE_SHARED_WORKER_DIR: workerDir },
      // Flash attention pinned as in expected.ts (the direct engine this test compares with).
      settings: { 'draftline.flashAttention': 'on', 'draftline.debounceMs': 100, 'draftline.timeBudgetMs': 0, 'editor.tabSize': 2, 'editor.insertSpaces': true, 'editor.detectIndentation': false },
    },
  });
  const { out: OUT, workspace } = editor;
  after(() => fs.rmSync(workerDir, { recursive: true, force: true }));

  it('ghost text before the auto-closed `)`, as the engine gives it; Tab gives the line with one `)`', async () => {
    const { page } = editor;
    await openFile(page, 'example.ts');
    await gotoLineEnd(page, AVERAGE_BODY_LINE);
    await typeLikeAPerson(page, TYPED, 40);
    assert.equal(await editorLine(page, AVERAGE_BODY_LINE), `  ${TYPED})`, 'VS Code auto-closed the paren');
    // The engine called directly on the same document and cursor: here the model writes the closer
    // and the rest of the line (`) return 0;`), which the post-processing used to turn into nothing.
    const source = fs.readFileSync(path.join(workspace, 'example.ts'), 'utf8');
    const cursor = source.indexOf('{\n  \n}') + 4;
    const expected = await directCompletion(`${source.slice(0, cursor)}${TYPED})${source.slice(cursor)}`, cursor + TYPED.length, 'typescript', 2);
    assert.ok(expected.startsWith(')') && expected.length > 1, `the engine shows the closer and more here: ${JSON.stringify(expected)}`);
    const ghost = await waitForGhostText(page, { timeoutMs: 120_000 });
    await screenshot(page, OUT, '01-ghost-before-auto-closed-paren');
    await page.keyboard.press('Tab');
    const line = await waitFor(
      async () => {
        const now = await editorLine(page, AVERAGE_BODY_LINE);
        return now !== `  ${TYPED})` ? now : undefined;
      },
      { timeoutMs: 5000, what: 'the accepted line' },
    );
    await screenshot(page, OUT, '02-accepted');
    // The ghost text replaced the auto-closed `)` (VS Code draws the part after it).
    assert.equal(line, `  ${TYPED}${expected.split('\n')[0]}`, `ghost ${JSON.stringify(ghost)}`);
  });

  it('two kill -9s of the worker while it generates leave the models loaded and serving', async () => {
    const { page } = editor;
    const pairWorker = () => {
      for (const name of fs.readdirSync(workerDir).filter((n) => n.startsWith('pair-') && n.endsWith('.sock.lock'))) {
        const pid = Number(fs.readFileSync(path.join(workerDir, name, 'pid'), 'utf8'));
        if (isAlive(pid)) return pid;
      }
      return undefined;
    };
    for (let kill = 1; kill <= 2; kill++) {
      const pid = await waitFor(async () => pairWorker(), { timeoutMs: 120_000, what: 'the pair’s worker running' });
      // A new line in average(): the next completion starts 100 ms after the last key.
      await page.keyboard.press('End');
      await page.keyboard.press('Enter');
      await typeLikeAPerson(page, 'const n', 60);
      await sleep(130);
      process.kill(pid, 'SIGKILL');
      await waitFor(async () => (isAlive(pid) ? undefined : true), { timeoutMs: 5000, what: `worker ${pid} gone` });
    }
    // Restarted, the models load again (not refused), and ghost text comes back.
    const loads = (text: string) => text.match(/model files: target/g)?.length ?? 0;
    const loadsBefore = loads(editor.log());
    await waitFor(async () => (loads(editor.log()) > loadsBefore ? true : undefined), { timeoutMs: 120_000, what: 'the models loaded again after the restart' });
    // Issue #48 item 4: the ghost text after a restart came seconds late, behind three alternatives
    // nobody asked for (the trigger after the load, and the keystrokes after it, read as Alt+]), and
    // typing on gave none for a minute. Once the models are back, typing gets its ghost text as usual.
    await page.keyboard.press('End');
    await page.keyboard.press('Enter');
    await typeLikeAPerson(page, 'return ', 60);
    await waitForGhostText(page, { timeoutMs: 20_000 });
    await screenshot(page, OUT, '03-serving-after-two-kills');
    const log = editor.log();
    assert.match(log, /the shared inference worker ended \(killed by SIGKILL\)/);
    assert.doesNotMatch(log, /not loaded again until the file changes/);
    assert.doesNotMatch(log, /alternatives: \d+ suggestion/, 'no alternatives computed: Alt+] was never pressed');
  });
});
