// The installed extension's page (Extensions → Draftline → Details) in a real VS Code (code-server +
// chromium): the packaged README's screenshots are shown, with no network. VS Code renders an
// installed extension's README in a webview whose Content-Security-Policy allows `img-src https: data:`
// and gives relative paths no base: a picture the page can show offline is a data: URI.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Frame, Page } from 'playwright-core';
import { closeWorkbench, e2eUnavailableReason, openWorkbench, repoRoot, runCommand, screenshot, sleep, startCodeServer, waitFor, type CodeServer, type Workbench } from '../../testbed/editorHarness';

const ROOT = repoRoot();
const OUT = path.join(ROOT, 'test-output', 'e2e-extension-page');

/**
 * The frame of the README's webview (an iframe.webview of VS Code's, holding the page in #active-frame):
 * the frame that mentions Draftline with the most pictures (other webviews, such as the extension
 * editor's own, hold an image or two).
 */
async function readmeFrame(page: Page): Promise<Frame | undefined> {
  let best: { frame: Frame; images: number } | undefined;
  for (const frame of page.frames()) {
    const images = await frame
      .evaluate(() => {
        const doc = (globalThis as any).document;
        return /Draftline/.test(String(doc.body?.textContent ?? '')) ? Number(doc.querySelectorAll('img').length) : 0;
      })
      .catch(() => 0);
    if (images > (best?.images ?? 0)) best = { frame, images };
  }
  return best && best.images >= 10 ? best.frame : undefined;
}

interface ImageState {
  alt: string;
  src: string;
  naturalWidth: number;
}

describe("the installed extension's page", { skip: e2eUnavailableReason() ?? false }, () => {
  let server: CodeServer;
  let wb: Workbench;

  before(async () => {
    fs.rmSync(OUT, { recursive: true, force: true });
    const workspace = path.join(OUT, 'workspace');
    fs.mkdirSync(workspace, { recursive: true });
    const vsix = path.join(OUT, 'draftline-linux-x64.vsix');
    execFileSync('node', ['scripts/package.mjs', '--target', 'linux-x64', '--out', vsix], { cwd: ROOT, stdio: 'ignore' });
    server = await startCodeServer({ workspaceDir: workspace, outDir: path.join(OUT, 'server'), vsixPaths: [vsix] });
    wb = await openWorkbench(server, { folder: workspace, viewport: { width: 1280, height: 900 } });
  });

  after(async () => {
    await closeWorkbench(wb);
    await server?.stop();
  });

  it('Details shows the README with its screenshots, offline', async () => {
    const page = wb.page;
    // The Extensions view, its search narrowed to what is installed.
    await runCommand(page, 'View: Show Extensions', 60_000);
    await page.locator('.extensions-viewlet .suggest-input-container').click();
    await page.keyboard.type('@installed Draftline', { delay: 10 });
    const row = page.locator('.extensions-viewlet .monaco-list-row', { hasText: 'Draftline' }).first();
    await row.waitFor({ state: 'visible', timeout: 60_000 });
    await row.click();
    // The extension editor opens on Details: the README in a webview.
    const frame = await waitFor(() => readmeFrame(page), { timeoutMs: 60_000, what: "the README's webview on the Details tab" });
    let images: ImageState[] = [];
    try {
      images = await waitFor(
        async () => {
          const now = await frame.evaluate(() =>
            Array.from((globalThis as any).document.querySelectorAll('img')).map((img: any) => ({
              alt: String(img.alt ?? ''),
              src: String(img.getAttribute('src') ?? '').slice(0, 60),
              naturalWidth: Number(img.naturalWidth),
            })),
          );
          images = now;
          return now.length > 0 && now.every((i) => i.naturalWidth > 0) ? now : undefined;
        },
        {
          timeoutMs: 30_000,
          what: 'every picture of the README to be shown (natural width > 0)',
          describe: () =>
            `not shown: ${images
              .filter((i) => i.naturalWidth === 0)
              .map((i) => i.src)
              .join(', ')}\nimg-src errors in the console:\n${wb.consoleErrors.filter((e) => /img-src/.test(e)).join('\n')}`,
        },
      );
    } finally {
      // The first picture in view, for the record (shown or not), with no tooltip over it.
      await page.mouse.move(1220, 720);
      await frame.evaluate(() => (globalThis as any).document.querySelector('img')?.scrollIntoView({ block: 'center' })).catch(() => undefined);
      await sleep(500);
      await screenshot(page, OUT, '01-details-first-picture');
      await frame.evaluate(() => (Array.from((globalThis as any).document.querySelectorAll('img')).at(-1) as any)?.scrollIntoView({ block: 'center' })).catch(() => undefined);
      await sleep(500);
      await screenshot(page, OUT, '02-details-last-pictures');
      fs.writeFileSync(path.join(OUT, 'images.json'), JSON.stringify({ images, consoleErrors: wb.consoleErrors.filter((e) => /img-src|Content Security Policy/i.test(e)) }, null, 2));
    }
    assert.ok(images.length >= 14, `the README's 14 pictures are on the page (${images.length})`);
    assert.deepEqual(
      images.filter((i) => i.naturalWidth === 0),
      [],
      'pictures not shown',
    );
    // The Content-Security-Policy refused none of them.
    assert.deepEqual(
      wb.consoleErrors.filter((e) => /img-src/.test(e)),
      [],
    );
  });
});
