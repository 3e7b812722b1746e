// `npm run test:desktop`: the extension-host suite in a desktop VS Code that @vscode/test-electron
// downloads (so not in our offline CI; the real-editor test there is test/e2e on code-server).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

async function main() {
  const { runTests } = await import('@vscode/test-electron');
  const root = path.resolve(__dirname, '../..');
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-desktop-'));
  await runTests({
    extensionDevelopmentPath: root,
    extensionTestsPath: path.join(root, 'dist', 'desktop-suite.js'),
    launchArgs: [workspace, '--disable-extensions', '--disable-workspace-trust'],
  });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
