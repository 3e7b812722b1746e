// Next-edit suggestions in a real VS Code (issue #38; code-server 4.100.3 + Debian chromium, driven by
// playwright-core): the user types, pauses, and the suggestion shows by its shape: a far rename as a
// "Tab to jump" marker (Tab jumps, Tab applies, the chain goes on to the next use), an insertion as
// ghost text, a deletion and a several-line edit as decorations; Escape and typing remove it, and Tab
// indents when nothing is shown. The answers are recorded (DRAFTLINE_NEXT_EDIT_REPLAY: the document's
// text → the model's proposed text), so the whole editor path runs and nothing depends on a model.
// Screenshots of each rendering go to media/ (dark and light), every step's to test-output/e2e-next-edit/.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { fixture, json, type RecordedRequest, StubServer } from '../support/stubServer';
import {
  e2eUnavailableReason,
  focusEditor,
  openFile,
  placeCursor,
  readGhostText,
  readStatusBarItem,
  runCommand,
  saveActiveFile,
  screenshot,
  screenshotOf,
  sleep,
  waitFor,
} from '../../testbed/editorHarness';
import { editorSession, ROOT, TYPED_AS_IS } from '../support/editorSession';

const MEDIA = path.join(ROOT, 'media');
const EDITOR = '.part.editor .editor-group-container.active .monaco-editor';
const EDITOR_GROUP = '.part.editor .editor-group-container.active';

const comments = (from: number, count: number) => Array.from({ length: count }, (_, i) => `  // step ${from + i}`).join('\n');
/**
 * A rename: `count` on line 2, then its uses on lines 11 and 20: 9 lines apart, far from each other
 * (Tab jumps first), and each in the 21-line window of a request made at the one before.
 */
const RENAME = `export function total(prices: number[]): number {
  let count = 0;
${comments(1, 8)}
  for (const price of prices) count += price;
${comments(9, 8)}
  return count;
}
`;
const renamed = (text: string, line: number) =>
  text
    .split('\n')
    .map((l, i) => (i === line - 1 ? l.replace('count', 'sum') : l))
    .join('\n');
const RENAME_1 = renamed(RENAME, 2);
const RENAME_2 = renamed(RENAME_1, 11);
const RENAME_3 = renamed(RENAME_2, 20);

const INSERT = 'const values = [1, 2, 3];\nconst doubled = values.map\n';
const INSERT_TYPED = 'const values = [1, 2, 3];\nconst doubled = values.map(\n';

const DELETE = `export function area(r: number): number {
  const pi = Math.PI;
  console.log('area', r);
  return pi * r * r
}
`;
const DELETE_TYPED = DELETE.replace('r * r\n', 'r * r;\n');

const BLOCK = `export interface Point {
  x: number
  y: number;
}
`;
const BLOCK_TYPED = BLOCK.replace('x: number\n', 'x: number;\n');

const CASES = [
  { before: RENAME_1, after: RENAME_2 },
  { before: RENAME_2, after: RENAME_3 },
  { before: INSERT_TYPED, after: INSERT_TYPED.replace('map(\n', 'map((value) => value * 2);\n') },
  { before: DELETE_TYPED, after: DELETE_TYPED.replace("  console.log('area', r);\n", '') },
  { before: BLOCK_TYPED, after: BLOCK_TYPED.replace('  y: number;\n', '  y: number;\n  z: number;\n  label?: string;\n') },
];

/**
 * The text the active editor shows, line by line, with what decorations write before and after text
 * (CSS ::before / ::after content: "Tab to jump", the inserted text beside a removed one), spaces plain.
 */
async function viewText(page: Page): Promise<string> {
  return page.evaluate((sel) => {
    const win = globalThis as any;
    const pseudo = (el: any, which: string) => {
      const content = String(win.getComputedStyle(el, which).content ?? '');
      return content.startsWith('"') ? content.slice(1, -1).replace(/\\"/g, '"').replace(/\\\\/g, '\\') : '';
    };
    const lines: any[] = Array.from(win.document.querySelectorAll(`${sel} .view-lines .view-line`));
    lines.sort((a: any, b: any) => (parseFloat(a.style.top) || 0) - (parseFloat(b.style.top) || 0));
    return lines
      .map((line: any) =>
        (Array.from(line.querySelectorAll('span')) as any[])
          .filter((span: any) => span.children.length === 0)
          .map((span: any) => pseudo(span, '::before') + String(span.textContent ?? '') + pseudo(span, '::after'))
          .join('')
          .replace(/\u00a0/g, ' '),
      )
      .join('\n');
  }, EDITOR);
}

/** What decorations the editor draws now: struck-through text, an SVG image, a gutter arrow. */
async function drawn(page: Page): Promise<{ struck: string[]; images: number; gutterArrows: number }> {
  return page.evaluate((sel) => {
    const doc = (globalThis as any).document;
    const win = globalThis as any;
    const editor = doc.querySelector(sel);
    if (!editor) return { struck: [], images: 0, gutterArrows: 0 };
    const struck: string[] = [];
    let images = 0;
    for (const el of Array.from(editor.querySelectorAll('.view-lines span')) as any[]) {
      const style = win.getComputedStyle(el);
      if (String(style.textDecorationLine).includes('line-through') && el.children.length === 0) struck.push(String(el.textContent).replace(/\u00a0/g, ' '));
      for (const pseudo of ['::before', '::after']) {
        const content = String(win.getComputedStyle(el, pseudo).content ?? '');
        if (content.includes('image/svg+xml')) images++;
      }
      if (String(style.backgroundImage).includes('image/svg+xml') || String(style.content).includes('image/svg+xml')) images++;
    }
    let gutterArrows = 0;
    for (const el of Array.from(editor.querySelectorAll('.margin *')) as any[]) {
      if (String(win.getComputedStyle(el).backgroundImage).includes('data:image/svg')) gutterArrows++;
    }
    return { struck, images, gutterArrows };
  }, EDITOR);
}

/** The workspace: each rendering's file, for the dark theme's run and the light one's. */
const WORKSPACE_FILES: Record<string, string> = { 'insert-asked.ts': INSERT, 'indent.ts': 'function f() {\nreturn 1;\n}\n' };
for (const suffix of ['', '-light']) Object.assign(WORKSPACE_FILES, { [`rename${suffix}.ts`]: RENAME, [`insert${suffix}.ts`]: INSERT, [`delete${suffix}.ts`]: DELETE, [`block${suffix}.ts`]: BLOCK });

/** Waits until Draftline is active in the editor (its status bar item shows). */
const draftlineActive = (page: Page) =>
  waitFor(async () => (await page.locator('[id="draftline.draftline.status"]').count()) > 0 || undefined, { timeoutMs: 90_000, what: 'Draftline active (its status bar item)' });

describe('next-edit suggestions in a real editor (code-server)', { skip: e2eUnavailableReason() ?? false }, () => {
  const editor = editorSession({
    name: 'e2e-next-edit',
    extension: 'development',
    build: true,
    files: WORKSPACE_FILES,
    prepare: ({ out }) => fs.writeFileSync(path.join(out, 'next-edit-answers.json'), JSON.stringify({ cases: CASES }, null, 2)),
    server: () => ({
      env: { DRAFTLINE_NEXT_EDIT_REPLAY: path.join(editor.out, 'next-edit-answers.json') },
      // VS Code binds no key to Trigger Inline Suggestion; users do.
      keybindings: [{ key: 'ctrl+alt+i', command: 'editor.action.inlineSuggest.trigger', when: 'editorTextFocus' }],
      settings: {
        'workbench.colorTheme': 'Default Dark Modern',
        ...TYPED_AS_IS,
        'editor.fontSize': 15,
        // Fill-in-the-middle ghost text off: every suggestion on screen is a next edit.
        'draftline.enable': false,
        'draftline.nextEdit.enabled': true,
        'draftline.targetModel': path.join(ROOT, 'models', 'tiny-code-target.gguf'),
        'draftline.draftModel': path.join(ROOT, 'models', 'tiny-code-draft.gguf'),
      },
    }),
    viewport: { width: 1100, height: 760 },
  });
  const { out: OUT, workspace: WORKSPACE, log } = editor;
  let page: Page;
  let step = 0;
  /** Last keystroke → suggestion on screen, ms, per case. */
  const onScreen: Record<string, number> = {};
  const snap = (name: string) => screenshot(page, OUT, `${String(++step).padStart(2, '0')}-${name}`);
  const file = (name: string) => fs.readFileSync(path.join(WORKSPACE, name), 'utf8');
  /** Polls `probe` every 20 ms from the last keystroke; records how long it took under `label`. */
  const timed = async <T>(label: string, probe: () => Promise<T | undefined | false>, what: string): Promise<T> => {
    const t0 = Date.now();
    const linesBefore = log().split('\n');
    const seen = new Set(linesBefore);
    const value = await waitFor(probe, {
      timeoutMs: 15_000,
      intervalMs: 20,
      what,
      // What the extension logged since the keystroke first: a CI report keeps only the message's head.
      describe: async () => {
        const since = log()
          .split('\n')
          .filter((line) => line && !seen.has(line));
        return `log since the keystroke:\n${since.join('\n') || '(nothing)'}\nview:\n${await viewText(page)}\n${JSON.stringify(await drawn(page))}\nlog before it:\n${linesBefore.slice(-12).join('\n')}`;
      },
    });
    onScreen[label] = Date.now() - t0;
    return value;
  };
  const media = (name: string) => screenshotOf(page, MEDIA, name, [EDITOR_GROUP], { margin: 0, maxHeight: 420 });

  before(async () => {
    page = editor.page;
    await draftlineActive(page);
  });

  after(() => {
    if (Object.keys(onScreen).length) console.log(`last keystroke → next edit on screen (ms, debounce 300 included): ${JSON.stringify(onScreen)}`);
  });

  async function renameAtFirstUse(name: string): Promise<void> {
    await openFile(page, name);
    await placeCursor(page, 2, 12);
    for (let i = 0; i < 5; i++) await page.keyboard.press('Backspace', { delay: 40 });
    await page.keyboard.type('sum', { delay: 60 });
  }

  it('rename: the next use, far, gets a "Tab to jump" marker; Tab jumps, Tab applies (one undo step); the chain reaches the third use', async () => {
    await renameAtFirstUse('rename.ts');
    await timed('far (Tab to jump)', async () => (await viewText(page)).includes('Tab to jump ↓ next edit at line 11') || undefined, 'the Tab-to-jump marker');
    const marker = await drawn(page);
    assert.deepEqual(marker.struck, ['count'], 'the edit is drawn where it is too (line 11 is on screen)');
    assert.ok(marker.gutterArrows >= 1, 'a gutter arrow at the edit');
    await snap('rename-far');
    await media('screenshot-nes-jump-dark');
    await page.keyboard.press('Tab');
    await waitFor(async () => ((await viewText(page)).includes('Tab to apply') && !(await viewText(page)).includes('Tab to jump')) || undefined, {
      timeoutMs: 5000,
      what: 'the jump: "Tab to apply" at the edit',
    });
    const text = await viewText(page);
    assert.match(text, /count\s*sum \+= price/, 'the removed text struck through, the new text beside it');
    await snap('rename-jumped');
    await media('screenshot-nes-inline-dark');
    await page.keyboard.press('Tab');
    await waitFor(async () => (await viewText(page)).includes('for (const price of prices) sum += price;') || undefined, { timeoutMs: 5000, what: 'the edit applied' });
    // The chain: asked again at once, the third use comes up (far again).
    await waitFor(async () => (await viewText(page)).includes('Tab to jump ↓ next edit at line 20') || undefined, { timeoutMs: 10_000, what: 'the chain: the third use proposed' });
    await snap('rename-chain');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await waitFor(async () => (await viewText(page)).includes('return sum;') || undefined, { timeoutMs: 5000, what: 'the third use applied' });
    await saveActiveFile(page);
    assert.equal(file('rename.ts'), RENAME_3);
    // One undo step per applied edit: Ctrl+Z takes back the third use only.
    await page.keyboard.press('Control+Z');
    await saveActiveFile(page);
    assert.equal(file('rename.ts'), RENAME_2);
    await waitFor(() => (/next edit applied: line 11, replace 5 chars with "sum", shown as inline/.test(log()) ? true : undefined), {
      timeoutMs: 10_000,
      what: 'the log line of the applied suggestion',
    });
    assert.match(log(), /next edit applied: line 20, .*chain step 2/);
  });

  it('an insertion at the cursor is ordinary ghost text, and Tab accepts it', async () => {
    await openFile(page, 'insert.ts');
    await placeCursor(page, 2, 27);
    await page.keyboard.type('(', { delay: 60 });
    const ghost = await timed('ghost text', async () => (await readGhostText(page)) || undefined, 'the next edit as ghost text');
    assert.equal(ghost, '(value) => value * 2);');
    await snap('insert-ghost');
    await media('screenshot-nes-ghost-dark');
    await page.keyboard.press('Tab');
    await saveActiveFile(page);
    assert.equal(file('insert.ts'), CASES[2]!.after);
  });

  it('asked for at once (Trigger Inline Suggestion) where nothing else suggests anything, the insertion still shows when it comes', async () => {
    // VS Code asks the providers once per document version and cursor for such a trigger, and a later
    // trigger there (the next edit's own) reuses that empty answer: the provider's call waits instead.
    // The models finishing their load right after a keystroke trigger the same way.
    await openFile(page, 'insert-asked.ts');
    await placeCursor(page, 2, 27);
    await page.keyboard.type('(', { delay: 60 });
    await page.keyboard.press('Control+Alt+I');
    const ghost = await timed('ghost text, asked for at once', async () => (await readGhostText(page)) || undefined, 'the next edit as ghost text');
    assert.equal(ghost, '(value) => value * 2);');
    await page.keyboard.press('Escape');
    await waitFor(async () => !(await readGhostText(page)) || undefined, { timeoutMs: 3000, what: 'Escape hiding the ghost text' });
  });

  it('a deletion is drawn as struck-through text; Escape dismisses it and leaves the file as it was', async () => {
    await openFile(page, 'delete.ts');
    await placeCursor(page, 4, 20);
    await page.keyboard.type(';', { delay: 60 });
    await timed('deletion', async () => (await drawn(page)).struck.join('').includes("console.log('area', r);") || undefined, 'the deletion drawn');
    assert.ok((await viewText(page)).includes('Tab to apply'));
    await snap('delete-shown');
    await media('screenshot-nes-deletion-dark');
    await page.keyboard.press('Escape');
    await waitFor(async () => ((await drawn(page)).struck.length === 0 && !(await viewText(page)).includes('Tab to apply')) || undefined, { timeoutMs: 3000, what: 'Escape removing the suggestion' });
    await page.keyboard.press('Tab'); // nothing shown: Tab indents again (the cursor is at the line's end: two spaces)
    await saveActiveFile(page);
    assert.equal(file('delete.ts'), DELETE_TYPED.replace('r * r;\n', 'r * r;  \n'));
    assert.match(log(), /next edit dismissed \(Escape\): line 3, delete/);
  });

  it('a several-line edit is drawn as an image beside the lines; typing removes it at once', async () => {
    await openFile(page, 'block.ts');
    await placeCursor(page, 2, 12);
    await page.keyboard.type(';', { delay: 60 });
    await timed('block image', async () => (await drawn(page)).images > 0 || undefined, 'the block image');
    await snap('block-shown');
    await media('screenshot-nes-block-dark');
    await page.keyboard.type(' ');
    const t0 = Date.now();
    await waitFor(async () => (await drawn(page)).images === 0 || undefined, { timeoutMs: 1000, intervalMs: 20, what: 'a keystroke removing the image' });
    onScreen['removed by a keystroke'] = Date.now() - t0;
    assert.match(log(), /next edit removed by typing: line 4, insert " {2}z: number;\\n {2}label\?: string;\\n", shown as block/);
  });

  it('Tab indents where no next edit is shown; the status bar tooltip counts the next edits', async () => {
    await openFile(page, 'indent.ts');
    await placeCursor(page, 2, 1);
    await page.keyboard.press('Tab');
    await saveActiveFile(page);
    assert.equal(file('indent.ts'), 'function f() {\n  return 1;\n}\n');
    const item = await readStatusBarItem(page, 'draftline.draftline.status', { hover: true });
    assert.match(item?.tooltip ?? '', /Next edits: \d+ shown, 3 applied, \d+ dismissed · first edit \d+ ms/, item?.tooltip ?? 'no tooltip');
  });

  it('the same renderings in the light theme (the README pictures)', async () => {
    await runCommand(page, 'Preferences: Color Theme');
    await page.keyboard.type('Light Modern', { delay: 10 });
    await sleep(300);
    await page.keyboard.press('Enter');
    await waitFor(async () => !(await page.locator('.monaco-workbench').getAttribute('class'))?.includes('vs-dark') || undefined, { timeoutMs: 10_000, what: 'the light theme' });
    await sleep(500);
    await renameAtFirstUse('rename-light.ts');
    await waitFor(async () => (await viewText(page)).includes('Tab to jump') || undefined, { timeoutMs: 15_000, what: 'the marker (light)' });
    await media('screenshot-nes-jump-light');
    await page.keyboard.press('Tab');
    await waitFor(async () => (await viewText(page)).includes('Tab to apply') || undefined, { timeoutMs: 5000, what: 'the jump (light)' });
    await media('screenshot-nes-inline-light');
    await page.keyboard.press('Escape');
    await openFile(page, 'insert-light.ts');
    await placeCursor(page, 2, 27);
    await page.keyboard.type('(', { delay: 60 });
    await waitFor(async () => (await readGhostText(page)) || undefined, { timeoutMs: 15_000, what: 'ghost text (light)' });
    await media('screenshot-nes-ghost-light');
    await page.keyboard.press('Escape');
    await openFile(page, 'delete-light.ts');
    await placeCursor(page, 4, 20);
    await page.keyboard.type(';', { delay: 60 });
    await waitFor(async () => (await drawn(page)).struck.length > 0 || undefined, { timeoutMs: 15_000, what: 'the deletion (light)' });
    await media('screenshot-nes-deletion-light');
    await page.keyboard.press('Escape');
    await openFile(page, 'block-light.ts');
    await placeCursor(page, 2, 12);
    await page.keyboard.type(';', { delay: 60 });
    await waitFor(async () => (await drawn(page)).images > 0 || undefined, { timeoutMs: 15_000, what: 'the block image (light)' });
    await media('screenshot-nes-block-light');
    await focusEditor(page);
    await page.keyboard.press('Escape');
  });
});

// ------------------------------------------------------------------------------------------------
// The same rename through a remote backend: Draftline's own server path (ServerBackend.nextEdit: the
// Sweep prompt, llama-server's /completion, the output parser) against a stub llama-server whose
// /completion answers as a model that proposes the recorded next text would: the window the prompt
// shows as current/, rewritten as the recorded answer has it.

/** The window a Sweep prompt shows as current (the request's region), or null. */
function sweepCurrentWindow(prompt: string): string | null {
  const m = /<\|file_sep\|>current\/[^\n]*\n([\s\S]*?)\n<\|file_sep\|>updated\//.exec(prompt);
  return m ? m[1]! : null;
}

/** The model's output for a prompt: the recorded answer's lines in place of the window's, or the window unchanged. */
export function recordedSweepOutput(prompt: string, cases: readonly { before: string; after: string }[]): string {
  const window = sweepCurrentWindow(prompt);
  if (window === null) return '';
  for (const c of cases) {
    const at = c.before.indexOf(window);
    if (at === -1) continue;
    const first = c.before.slice(0, at).split('\n').length - 1;
    const count = window.split('\n').length;
    const before = c.before.split('\n');
    const after = c.after.split('\n');
    if (before.length !== after.length) continue;
    return `${after.slice(first, first + count).join('\n')}\n`;
  }
  return `${window}\n`;
}

describe('next-edit suggestions through llama-server (stub), in a real editor', { skip: e2eUnavailableReason() ?? false }, () => {
  let stub: StubServer;
  const editor = editorSession({
    name: 'e2e-next-edit-remote',
    extension: 'development',
    build: true,
    files: { 'rename.ts': RENAME },
    prepare: async () => {
      const final = JSON.parse(fixture('llama-server/completion-continued-41-stream.sse').trim().split('\n\n').at(-1)!.slice(6));
      const sse = (content: string, stop: boolean) =>
        `data: ${JSON.stringify(stop ? { ...final, content, stop: true, stop_type: 'word', stopping_word: '<|file_sep|>' } : { index: 0, content, stop: false })}\n\n`;
      stub = await StubServer.start({
        'GET /health': json(200, fixture('llama-server/health.json')),
        'GET /props': json(200, fixture('llama-server/props.json')),
        'POST /infill': () => json(200, fixture('llama-server/infill.json')),
        'POST /completion': (r: RecordedRequest) => {
          const output = recordedSweepOutput(String(r.json?.prompt ?? ''), CASES);
          const lines = output.match(/[^\n]*\n|[^\n]+$/g) ?? [];
          return { kind: 'stream' as const, contentType: 'text/event-stream', delayMs: 5, events: [...lines.map((l) => sse(l, false)), sse('', true)] };
        },
      });
    },
    server: () => ({
      settings: {
        'editor.tabSize': 2,
        'editor.insertSpaces': true,
        'draftline.enable': false,
        'draftline.nextEdit.enabled': true,
        'draftline.backend': 'llama-server',
        'draftline.server.endpoint': stub.url,
        'draftline.nextEdit.format': 'sweep',
      },
    }),
    viewport: { width: 1100, height: 760 },
  });
  const { out: OUT_REMOTE, log } = editor;
  let page: Page;
  before(async () => {
    page = editor.page;
    await draftlineActive(page);
  });
  after(() => stub?.close());

  it('rename at one use → the next use proposed from /completion → Tab jumps, Tab applies → the chain reaches the third', async () => {
    await waitFor(() => (/connected|llama-server at/i.test(log()) ? true : undefined), { timeoutMs: 60_000, what: 'the llama-server backend connected', describe: () => log() });
    await openFile(page, 'rename.ts');
    await placeCursor(page, 2, 12);
    for (let i = 0; i < 5; i++) await page.keyboard.press('Backspace', { delay: 40 });
    await page.keyboard.type('sum', { delay: 60 });
    await waitFor(async () => (await viewText(page)).includes('Tab to jump ↓ next edit at line 11') || undefined, {
      timeoutMs: 20_000,
      what: 'the next use proposed through the server',
      describe: async () => `view:\n${await viewText(page)}\nlog:\n${log().slice(-3000)}`,
    });
    await screenshot(page, OUT_REMOTE, '01-far');
    await page.keyboard.press('Tab');
    await waitFor(async () => (await viewText(page)).includes('Tab to apply') || undefined, { timeoutMs: 5000, what: 'the jump' });
    await page.keyboard.press('Tab');
    await waitFor(async () => (await viewText(page)).includes('Tab to jump ↓ next edit at line 20') || undefined, {
      timeoutMs: 20_000,
      what: 'the chain: the third use',
      describe: () => log().slice(-3000),
    });
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    await waitFor(async () => (await viewText(page)).includes('return sum;') || undefined, { timeoutMs: 5000, what: 'the third use applied' });
    await saveActiveFile(page);
    assert.equal(fs.readFileSync(path.join(editor.workspace, 'rename.ts'), 'utf8'), RENAME_3);
    assert.ok(stub.to('/completion', 'POST').length >= 2, 'the prompts went to /completion');
  });
});
