// Alternatives (the suggestions Alt+] / Alt+[ cycle through) in a real VS Code (code-server + chromium,
// the extension from this folder, the embedded models): computed for the user's own Alt+], never for
// the requests the editor makes by itself. After a Tab accept the next ghost text comes from the
// prefetch, and the editor asks again at that very spot with Invoke (Draftline's own trigger), as it
// does for Alt+]: that is no one cycling. And Alt+] there must still compute them: the editor took that
// Invoke's one suggestion for the whole list and asks no more.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { e2eUnavailableReason, focusEditor, gotoLineEnd, openFile, screenshot, sleep, typeLikeAPerson, waitFor, waitForGhostText } from '../../testbed/editorHarness';
import { editorSession, MATH_UTILS, TYPED_AS_IS } from '../support/editorSession';

const FILE = 'mathUtils.ts';
/** Typed at the end of line 10 (the empty line inside average): the embedded pair completes it over several lines. */
const TYPED = 'for (let i = 0; i < values.length; i';
/** Typed there for Alt+]: the embedded pair's suggestions differ on their first line (test/e2e/extension.e2e.test.ts). */
const TYPED_FOR_ALTERNATIVES = 'return ';
const ALTERNATIVES_LINE = /alternatives: \d+ suggestions? /;

describe('alternatives only when the user asks for them', { skip: e2eUnavailableReason() ?? false }, () => {
  const editor = editorSession({
    name: 'e2e-alternatives',
    extension: 'development',
    files: { [FILE]: MATH_UTILS },
    server: { settings: { ...TYPED_AS_IS, 'draftline.debounceMs': 100, 'draftline.prefetch.whileShown': 'chain' } },
  });
  const OUT = editor.out;
  const log = editor.log;
  const norm = (s: string) =>
    s
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n')
      .trimEnd();

  it('Tab, then the prefetched ghost text: no alternatives computed; Alt+] there computes them and cycles', async () => {
    const { page } = editor;
    await openFile(page, FILE);
    await gotoLineEnd(page, 10);
    await typeLikeAPerson(page, TYPED, 40);
    await waitForGhostText(page, { timeoutMs: 120_000, predicate: (g) => g.trim().length > 0 });
    let prefetched = '';
    for (let accept = 1; accept <= 2; accept++) {
      const served = (log().match(/ghost text served from a prefetch/g) ?? []).length;
      await page.keyboard.press('Tab');
      // No keystroke: the next ghost text shows by itself, from the prefetch the accept started.
      await waitFor(async () => ((log().match(/ghost text served from a prefetch/g) ?? []).length > served ? true : undefined), {
        timeoutMs: 60_000,
        intervalMs: 250,
        what: `ghost text served from a prefetch after accept ${accept}`,
        describe: () => log().split('\n').slice(-15).join('\n'),
      });
      prefetched = await waitForGhostText(page, { timeoutMs: 30_000, predicate: (g) => g.trim().length > 0 });
      await screenshot(page, OUT, `0${accept}-prefetched-ghost-text`);
      // Whatever the editor asks at that spot by itself (VS Code after the accept, Draftline's own trigger) has come by now.
      await sleep(3000);
    }
    const lines = () =>
      log()
        .split('\n')
        .filter((l) => /ghost text served from a prefetch|alternatives: /.test(l));
    console.log(lines().join('\n'));
    assert.doesNotMatch(log(), ALTERNATIVES_LINE, `no alternatives computed: Alt+] was never pressed\n${lines().join('\n')}`);
    // Alt+] where the prefetched ghost text is shown: the alternatives are computed now, and the next one shown.
    await page.keyboard.press('Alt+BracketRight');
    const computed = await waitFor(async () => ALTERNATIVES_LINE.exec(log())?.[0], {
      timeoutMs: 60_000,
      intervalMs: 250,
      what: 'the alternatives computed for Alt+] at the prefetched ghost text',
      describe: async () => `ghost text now: ${JSON.stringify(await waitForGhostText(page, { timeoutMs: 1000 }).catch(() => ''))}\n${lines().join('\n')}`,
    });
    const count = Number(/\d+/.exec(computed)![0]);
    if (count >= 2) await waitForGhostText(page, { timeoutMs: 30_000, predicate: (g) => g.trim().length > 0 && norm(g) !== norm(prefetched) });
    await screenshot(page, OUT, '03-alt-bracket-right-at-the-prefetched-ghost-text');
    console.log(`${computed}: ${JSON.stringify([prefetched, await waitForGhostText(page, { timeoutMs: 5000 })])}`);
  });

  it('Alt+] computes them and shows the next suggestion; Alt+[ goes back', async () => {
    const { page } = editor;
    await focusEditor(page);
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(MATH_UTILS);
    await sleep(200);
    await gotoLineEnd(page, 10);
    await typeLikeAPerson(page, TYPED_FOR_ALTERNATIVES, 40);
    const first = await waitForGhostText(page, { timeoutMs: 60_000, predicate: (g) => g.trim().length > 0 });
    const computedBefore = (log().match(new RegExp(ALTERNATIVES_LINE, 'g')) ?? []).length;
    await page.keyboard.press('Alt+BracketRight');
    const second = await waitForGhostText(page, { timeoutMs: 60_000, predicate: (g) => g.trim().length > 0 && norm(g) !== norm(first) });
    await screenshot(page, OUT, '04-alt-bracket-right');
    assert.ok((log().match(new RegExp(ALTERNATIVES_LINE, 'g')) ?? []).length > computedBefore, 'the alternatives were computed for Alt+]');
    await page.keyboard.press('Alt+BracketLeft');
    await waitForGhostText(page, { timeoutMs: 30_000, predicate: (g) => norm(g) === norm(first) });
    console.log(`cycled: ${JSON.stringify([first, second])}`);
  });
});
