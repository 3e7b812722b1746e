// Issue #41 item 7: scripts/start.sh kept the user's edits of the demo's example.ts from one run to
// the next without saying so. scripts/demo-example.sh (which start.sh runs) keeps them and says so,
// with how to start afresh (DRAFTLINE_DEMO_FRESH=1).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '../..');
const run = (workspace: string, env: NodeJS.ProcessEnv = {}) =>
  execFileSync('bash', [path.join(ROOT, 'scripts/demo-example.sh'), workspace], { encoding: 'utf8', env: { ...process.env, DRAFTLINE_DEMO_FRESH: '', ...env } }).trim();

describe('the demo’s example.ts (scripts/demo-example.sh)', () => {
  it('is written once, keeps the user’s edits and says so, and starts afresh when asked', () => {
    const workspace = path.join(ROOT, 'test-output', `demo-example-${process.pid}`);
    fs.rmSync(workspace, { recursive: true, force: true });
    try {
      const example = path.join(workspace, 'example.ts');
      assert.match(run(workspace), /a new copy/);
      const original = fs.readFileSync(example, 'utf8');
      assert.match(original, /export function average\(values: number\[\]\): number \{\n {2}\n\}\n$/, 'the body to type in, its indentation ready');
      assert.match(run(workspace), /as it comes/);
      fs.appendFileSync(example, '// mine\n');
      const kept = run(workspace);
      assert.match(kept, /keeps your edits from the last run .*DRAFTLINE_DEMO_FRESH=1 bash scripts\/start\.sh starts it afresh/);
      assert.equal(fs.readFileSync(example, 'utf8'), `${original}// mine\n`, 'the edits are still there');
      assert.match(run(workspace, { DRAFTLINE_DEMO_FRESH: '1' }), /started afresh/);
      assert.equal(fs.readFileSync(example, 'utf8'), original);
    } finally {
      fs.rmSync(workspace, { recursive: true, force: true });
    }
  });

  it('is what start.sh makes, and its line is printed with the URL', () => {
    const start = fs.readFileSync(path.join(ROOT, 'scripts/start.sh'), 'utf8');
    assert.match(start, /EXAMPLE_NOTE=\$\(bash scripts\/demo-example\.sh "\$RUN\/workspace"\)/);
    const url = start.indexOf('Draftline is running in VS Code at:');
    assert.ok(url > 0 && start.indexOf('echo "$EXAMPLE_NOTE"', url) > url, 'printed beside the URL, where the user reads');
    assert.ok(!start.includes('example.ts" <<'), 'start.sh writes the file only through demo-example.sh');
  });

  it('start.sh says what each long step does before it starts (the first run spends minutes before the URL)', () => {
    const lines = fs.readFileSync(path.join(ROOT, 'scripts/start.sh'), 'utf8').split('\n');
    for (const command of ['npm install', 'bash scripts/setup-e2e.sh', 'npm run package', '--install-extension']) {
      const at = lines.findIndex((l) => l.includes(command) && !l.trimStart().startsWith('#') && !l.includes('step '));
      assert.ok(at > 0, `start.sh runs ${command}`);
      const before = lines.slice(Math.max(0, at - 3), at).find((l) => /^\s*step /.test(l));
      assert.ok(before, `a step line says what "${command}" does before it runs:\n${lines.slice(Math.max(0, at - 3), at + 1).join('\n')}`);
    }
  });
});
