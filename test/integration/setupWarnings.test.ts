// Issue #27 item 7: scripts/setup-e2e.sh (which start.sh and the tests run) installs code-server with
// options npm 11 no longer knows but still passes on to install scripts; npm warns about each, which
// read like failures. The script drops exactly those lines: here, npm's real warnings go through the
// script's own filter, and any other warning must survive it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const script = fs.readFileSync(path.join(__dirname, '../../scripts/setup-e2e.sh'), 'utf8');

test("setup-e2e.sh drops npm's warnings about the options it passes on purpose, and no other line", () => {
  const filter = /^\s*EXPECTED_NPM_WARNINGS='([^']+)'/m.exec(script)?.[1];
  assert.ok(filter, 'setup-e2e.sh defines EXPECTED_NPM_WARNINGS');
  assert.match(script, /npm install [^\n]*--unsafe-perm[^\n]*\| sed -E "\$EXPECTED_NPM_WARNINGS"/, 'the code-server install goes through the filter');
  // The same options as the install, on a command that needs no network.
  const npm = spawnSync('npm', ['config', 'get', 'fund', '--unsafe-perm'], {
    encoding: 'utf8',
    env: { ...process.env, npm_config_yes: 'true', npm_config_build_from_source: 'true', npm_config_nodedir: path.dirname(path.dirname(process.execPath)) },
  });
  assert.equal(npm.status, 0, npm.stderr);
  const ours = npm.stderr.split('\n').filter((line) => /Unknown (cli|env) config/.test(line));
  assert.ok(ours.length >= 2, `npm warns about the options (else this test proves nothing):\n${npm.stderr}`);
  const other = 'npm warn deprecated inflight@1.0.6: This module is not supported';
  const filtered = spawnSync('sed', ['-E', filter], { input: `${npm.stderr}${other}\n`, encoding: 'utf8' });
  assert.equal(filtered.status, 0);
  assert.doesNotMatch(filtered.stdout, /Unknown (cli|env) config/, 'no warning about the options we pass on purpose is left');
  assert.ok(filtered.stdout.includes(other), 'other warnings still show');
});

// Issue #41 item 6: code-server prints "File not found: …/vsda/rust/web/vsda_bg.wasm" (and vsda.js) for
// every window: Microsoft's closed signing module, absent from every open-source build and needed by
// nothing. start.sh leaves exactly those lines out of what it prints.
test("start.sh drops code-server's vsda lines, and no other line", () => {
  const start = fs.readFileSync(path.join(__dirname, '../../scripts/start.sh'), 'utf8');
  const noise = /^CODE_SERVER_NOISE='([^']+)'/m.exec(start)?.[1];
  assert.ok(noise, 'start.sh defines CODE_SERVER_NOISE');
  assert.match(
    start,
    /"\$RUN\/workspace" \\\n\s*> >\(grep --line-buffered -v -E "\$CODE_SERVER_NOISE"\) 2>&1 &\nCS_PID=\$!/,
    "code-server's output goes through the filter, and CS_PID stays code-server's",
  );
  const lib = '/root/draftline/.cache/code-server/node_modules/code-server/lib/vscode/node_modules';
  const vsda = [`File not found: ${lib}/vsda/rust/web/vsda_bg.wasm`, `File not found: ${lib}/vsda/rust/web/vsda.js`];
  const kept = ['[2026-11-25T13:57:01.123Z] info  HTTP server listening on http://127.0.0.1:8080/', `File not found: ${lib}/other/missing.js`, 'Error: something else'];
  const filtered = spawnSync('grep', ['-v', '-E', noise], { input: `${[...vsda, ...kept].join('\n')}\n`, encoding: 'utf8' });
  assert.deepEqual(filtered.stdout.trim().split('\n'), kept);
});
