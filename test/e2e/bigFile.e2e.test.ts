// Issue #27 item 1, in the real editor: a 3.15 MB minified JavaScript file (10,637 lines), typing a
// statement two thirds into it. A new user saw the first ghost text ~50 s after the last key. Measured
// here (code-server + chromium on 2 cores): the edits reach the extension host seconds late, VS Code
// asks for ghost text tens of seconds after them (its JavaScript service starting and its renderer
// laying out the file keep both cores busy), and the renderer can stay blocked for minutes: VS Code colors
// ghost text by tokenizing the file up to the cursor first (219 s to the ghost text with it, 22 s
// without, on a busy machine). Draftline offers to turn that coloring off (vscode/hugeFileAdvice.ts). Draftline's
// own part is bounded: the provider answers within ANSWER_BOUND_MS of being asked, read from its log
// line (stats/ghostTextTimeline.ts), and the file is neither mirrored nor indexed (documentMirror.ts).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { minifiedJs } from '../../testbed/syntheticText';
import { clickNotificationButton, e2eUnavailableReason, gotoLineEnd, openFile, readGhostText, sleep, typeLikeAPerson, waitFor } from '../../testbed/editorHarness';
import { editorSession } from '../support/editorSession';

const FILE = 'bundle.min.js';
/** Draftline's part (asked → answered: debounce, prompt window, model, post-processing) on a CPU the editor keeps busy; alone it is ~1.5 s (bench/bigFile.ts). */
const ANSWER_BOUND_MS = 15_000;
/** How long the test waits for the ghost text: VS Code's part is not bounded by us (seen: 35 s, and a renderer blocked for minutes). */
const GHOST_DEADLINE_MS = 300_000;
const skip = e2eUnavailableReason();

const asMs = (value: string, unit: string) => Number(value) * (unit === 's' ? 1000 : 1);

describe('a huge minified file in a real VS Code', { skip: skip ?? false }, () => {
  const editor = editorSession({
    name: 'e2e-big-file',
    extension: 'vsix',
    files: { [FILE]: minifiedJs(3_150_000, 10_637) },
    server: { settings: { 'editor.autoClosingBrackets': 'never' } },
  });

  it(`Draftline offers to turn off ghost-text coloring; ghost text comes, and Draftline answers within ${ANSWER_BOUND_MS / 1000} s of being asked`, async () => {
    const { page, server } = editor;
    const started = Date.now();
    await openFile(page, FILE, 180_000);
    const opened = Date.now() - started;
    // Coloring on (the default) is what froze the renderer (hugeFileAdvice.ts): the user takes the offer.
    await clickNotificationButton(page, /Turn Off Ghost-Text Coloring/, 120_000);
    const userSettings = path.join(server.userDataDir, 'User', 'settings.json');
    await waitFor(async () => JSON.parse(fs.readFileSync(userSettings, 'utf8'))['editor.inlineSuggest.syntaxHighlightingEnabled'] === false, {
      timeoutMs: 30_000,
      what: 'editor.inlineSuggest.syntaxHighlightingEnabled: false in the user settings',
      describe: async () => fs.readFileSync(userSettings, 'utf8'),
    });
    // The end of a line two thirds into the file, where the user types a new statement.
    await gotoLineEnd(page, 7_020);
    await typeLikeAPerson(page, 'var sum=list[i];', 80);
    const lastKey = Date.now();
    let ghost = '';
    while (!ghost && Date.now() - lastKey < GHOST_DEADLINE_MS) {
      ghost = await readGhostText(page);
      if (!ghost) await sleep(200);
    }
    const ghostAfterMs = Date.now() - lastKey;
    const log = editor.log();
    const slow = log.split('\n').filter((line) => line.includes('slow ghost text:'));
    console.log(`opened in ${opened} ms; ghost text read ${ghostAfterMs} ms after the last key: ${JSON.stringify(ghost.slice(0, 60))}\n${slow.join('\n')}`);
    assert.ok(ghost, `ghost text within ${GHOST_DEADLINE_MS / 1000} s of the last key`);
    assert.match(log, /ready \d+ ms after activation/, 'the models loaded');
    if (slow.length === 0) {
      // Under SLOW_GHOST_TEXT_MS from the edit to the answer: nothing to attribute.
      return;
    }
    for (const line of slow) {
      const answered = /Draftline answered (?:from the cache |from a prefetch )?in ([\d.]+) (ms|s)/.exec(line);
      assert.ok(answered, `the log line gives Draftline's part: ${line}`);
      const ours = asMs(answered[1]!, answered[2]!);
      assert.ok(ours <= ANSWER_BOUND_MS, `Draftline answered in ${ours} ms of being asked (bound ${ANSWER_BOUND_MS} ms): ${line}`);
    }
  });
});
