// The repository's files speak of Draftline, not of the machines it was built on: no tracked text file
// names a folder of a build machine (/work/…, /root/…, /home/<someone>/…, a folder under /tmp). Paths
// are relative to the repository or taken from arguments. System paths that are the same on every
// machine (/usr/share/vulkan/icd.d, /sys/class/power_supply, /proc/…, /usr/bin/chromium) and the
// made-up examples tests feed their code (/home/me/…, /tmp/x, /tmp/their-ca.pem) are no machine's.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '../..');
const SELF = path.relative(ROOT, __filename).split(path.sep).join('/');

/** Home folder names that stand for anyone: test inputs, documentation examples. */
const PLACEHOLDER_USERS = new Set(['me', 'u', 'user', 'someone', 'you', 'username', 'alice', 'bob']);

/** Not inside a longer path or a URL: what precedes the path's first slash. */
const START = String.raw`(?<![\w.~$/\\-])`;
const SEGMENT = String.raw`[\w.@+-]+`;
const PATTERNS: { re: RegExp; machine: (m: RegExpExecArray) => boolean }[] = [
  // The build machines' working folders and root's home.
  { re: new RegExp(`${START}/(work|root)/${SEGMENT}`, 'g'), machine: () => true },
  // A person's home folder (Linux, macOS), unless it is a placeholder.
  { re: new RegExp(`${START}/(home|Users)/(${SEGMENT})/`, 'g'), machine: (m) => !PLACEHOLDER_USERS.has(m[2]!) },
  // A folder under /tmp (/tmp/lease/…, /tmp/models-aside); a lone example file (/tmp/their-ca.pem) or a
  // one- or two-letter name (/tmp/x) is an example.
  {
    re: new RegExp(`${START}/tmp/(${SEGMENT})(/${SEGMENT})?`, 'g'),
    machine: (m) => {
      const [, name, deeper] = m;
      if (name!.length <= 2) return false;
      return Boolean(deeper) || !/\.\w+$/.test(name!);
    },
  },
];

/** The absolute machine paths in one line of text. */
export function machinePaths(line: string): string[] {
  const found: string[] = [];
  for (const { re, machine } of PATTERNS) {
    for (const m of line.matchAll(re)) if (machine(m as RegExpExecArray)) found.push(m[0]);
  }
  return found;
}

/**
 * Paths that look like a machine's and are not this project's machines', each with why. An entry that
 * no longer matches anything fails the test, so the list cannot grow stale.
 */
const ALLOWED: { file: string; text: string; why: string }[] = [
  { file: 'test/fixtures/remote/ollama/show.json', text: '/root/.ollama/models', why: "Ollama's model store when it runs as root (its Docker image), as `ollama show` prints it" },
  {
    file: 'test/integration/setupWarnings.test.ts',
    text: '/root/draftline/.cache/code-server',
    why: "a made-up code-server log line of a checkout in root's home (the README's setup runs as root), fed to start.sh's filter",
  },
];

function trackedTextFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 26 })
    .split('\0')
    .filter(Boolean);
  return listed.filter((file) => {
    const full = path.join(ROOT, file);
    if (!fs.existsSync(full) || !fs.statSync(full).isFile()) return false;
    const head = Buffer.alloc(8192);
    const fd = fs.openSync(full, 'r');
    const n = fs.readSync(fd, head, 0, head.length, 0);
    fs.closeSync(fd);
    return !head.subarray(0, n).includes(0);
  });
}

describe('machine paths', () => {
  it("the matcher finds a build machine's folders", () => {
    const lines: [string, string[]][] = [
      ['"path": "/work/main/models/draftline-code-target.gguf",', ['/work/main']],
      ['See /work/shared/notes/gguf.md.', ['/work/shared']],
      ["sys.path.insert(0, '/work/shared/models/recipe')", ['/work/shared']],
      ['mv models /tmp/models-aside', ['/tmp/models-aside']],
      ['bash /tmp/lease/draftline-bench-kit/run.sh lease', ['/tmp/lease/draftline-bench-kit']],
      ['"file": "/tmp/before/models/tiny-code-draft.gguf"', ['/tmp/before/models']],
      ['cd /root/draftline && npm test', ['/root/draftline']],
      ['log: /home/jdoe/.cache/draftline/x.log', ['/home/jdoe/']],
      ['(/Users/jdoe/src/draftline)', ['/Users/jdoe/']],
      ['two: /work/a and /tmp/wt-after/models', ['/work/a', '/tmp/wt-after/models']],
    ];
    for (const [line, expected] of lines) assert.deepEqual(machinePaths(line), expected, line);
  });

  it('the matcher passes system paths, examples, relative paths and URLs', () => {
    const lines = [
      'VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json',
      '`/sys/class/power_supply` on Linux',
      '(`/proc/sys/kernel/sched_autogroup_enabled` = 1)',
      "executablePath: '/usr/bin/chromium'",
      '`$TMPDIR/draftline-<uid>/`, mode 0700',
      "sharedWorkerAddress(WORKER, '/tmp/x')",
      "'server.caFile': { workspaceValue: '/tmp/their-ca.pem' }",
      "targetModel: { workspaceValue: '/tmp/other.gguf' }",
      "sharedWorkerAddress(WORKER, '/tmp/' + 'long/'.repeat(20))",
      '/tmp/',
      "nextEditSettingsFrom(settings, '/home/me')",
      "'/home/me/models/sweep.gguf'",
      'https://example.com/work/main/x and https://github.com/root/repo',
      'scripts/work/x.ts, ../work/y, ~/work/z, $HOME/work/w, C:\\work\\v',
      'bench/cache/llama-server/build/bin',
    ];
    for (const line of lines) assert.deepEqual(machinePaths(line), [], line);
  });

  it('no tracked text file names one', (t) => {
    if (!fs.existsSync(path.join(ROOT, '.git'))) {
      t.skip('not a git checkout: which files are tracked is unknown');
      return;
    }
    const found: string[] = [];
    const used = new Set<(typeof ALLOWED)[number]>();
    for (const file of trackedTextFiles()) {
      if (file === SELF) continue; // its made-up lines are the matcher's test above
      const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
      lines.forEach((line, i) => {
        for (const hit of machinePaths(line)) {
          const allowed = ALLOWED.find((a) => a.file === file && line.includes(a.text) && a.text.startsWith(hit));
          if (allowed) used.add(allowed);
          else found.push(`${file}:${i + 1}: ${hit}`);
        }
      });
    }
    assert.deepEqual(found, [], 'absolute paths of a build machine: make them relative to the repository, or arguments');
    assert.deepEqual(
      ALLOWED.filter((a) => !used.has(a)).map((a) => `${a.file}: ${a.text}`),
      [],
      'allowed paths that no longer occur: drop them from ALLOWED',
    );
  });
});
