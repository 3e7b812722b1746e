// The extension-host suite of `npm run test:desktop` (test/desktop/suite.ts), run inside code-server:
// it honours extensionTestsPath in the workbench payload as it does extensionDevelopmentPath.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { chromium } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH, e2eUnavailableReason, repoRoot, startCodeServer, waitFor, type CodeServer } from '../../testbed/editorHarness';

const ROOT = repoRoot();
const OUT = path.join(ROOT, 'test-output', 'e2e-extension-host');

describe('extension-host suite in code-server', { skip: e2eUnavailableReason() ?? false }, () => {
  let server: CodeServer | undefined;
  let browser: Awaited<ReturnType<typeof chromium.launch>> | undefined;
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  it('passes every check of test/desktop/suite.ts', async () => {
    fs.rmSync(OUT, { recursive: true, force: true });
    const workspace = path.join(OUT, 'workspace');
    fs.mkdirSync(workspace, { recursive: true });
    const results = path.join(OUT, 'results.txt');
    execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT, stdio: 'ignore' });
    server = await startCodeServer({ workspaceDir: workspace, outDir: path.join(OUT, 'server'), env: { DRAFTLINE_SUITE_RESULTS: results } });
    const remote = (p: string) => `vscode-remote://127.0.0.1:${server!.port}${p}`;
    const payload = [
      ['extensionDevelopmentPath', remote(ROOT)],
      ['extensionTestsPath', remote(path.join(ROOT, 'dist', 'desktop-suite.js'))],
    ];
    browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
    const page = await browser.newPage();
    await page.goto(`${server.url}/?folder=${encodeURIComponent(workspace)}&payload=${encodeURIComponent(JSON.stringify(payload))}`);
    const text = await waitFor(
      () => {
        const t = fs.existsSync(results) ? fs.readFileSync(results, 'utf8') : '';
        return /^done$|^not ok/m.test(t) ? t : undefined;
      },
      { timeoutMs: 180_000, what: 'the extension-host suite to finish', describe: () => server!.logTail() },
    );
    assert.doesNotMatch(text, /^not ok/m, text);
    assert.equal((text.match(/^ok - /gm) ?? []).length, 6, text);
  });
});
