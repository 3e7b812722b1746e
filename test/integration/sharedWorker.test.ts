// The inference worker every window shares (worker/sharedWorker.ts, workerMain.ts in shared mode),
// through the real WorkerClient and dist/worker.js: a second window finds its models loaded, the
// windows' documents stay apart, two windows starting at once get one worker, a stale socket is
// replaced, a crash reaches every window and they come back on one worker, and it leaves when idle.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, afterEach, describe, it } from 'node:test';
import type { CompletionRequest } from '../../src/shared/completion';
import { readFrames, writeFrame } from '../../src/worker/frames';
import type { WorkerDiagnostics } from '../../src/worker/protocol';
import { ensurePrivateDirectory, sharedWorkerAddress } from '../../src/worker/sharedWorker';
import { WorkerClient } from '../../src/worker/workerClient';
import { isAlive } from '../support/processes';
import { ROOT, tinyModels, WORKER, workerMissing } from '../support/tinyWorker';

const skip = workerMissing;
const TMP = path.join(ROOT, 'test-output', 'shared-worker');
const MODELS = tinyModels();
const SPECULATION = { maxProposal: 5, ngramMinMatch: 2, ngramMaxMatch: 8, draftMinConfidence: 0.4, adaptive: true, lookahead: false };
const request = (prefix: string, over: Partial<CompletionRequest> = {}): CompletionRequest => ({ prefix, suffix: '\n}\n', maxTokens: 16, mode: 'hybrid', ...over });
const PREFIX = 'export function sum(values: number[]): number {\n  let total = 0;\n  for (let i = 0; i < values.length; i';

const until = async (condition: () => boolean, timeoutMs: number, what: string) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.ok(condition(), `timed out: ${what}`);
};

describe('message frames', () => {
  it('come through whatever the chunking, and a frame that is not a message closes the stream', () => {
    const messages = [
      { v: 2, type: 'log', message: 'a' },
      { big: 'x'.repeat(70_000), n: [1, 2, 3] },
      { undefinedKept: undefined, map: new Map([[1, 2]]) },
    ];
    const bytes: Buffer[] = [];
    const sink = new PassThrough();
    sink.on('data', (b: Buffer) => bytes.push(b));
    for (const m of messages) writeFrame(sink, m);
    const all = Buffer.concat(bytes);
    for (const step of [1, 3, 4, 5, 1000, all.length]) {
      const stream = new PassThrough();
      const got: unknown[] = [];
      readFrames(
        stream,
        (m) => got.push(m),
        (e) => assert.fail(e),
      );
      for (let i = 0; i < all.length; i += step) stream.write(all.subarray(i, i + step));
      assert.deepEqual(got, messages, `chunks of ${step}`);
    }
    const stream = new PassThrough();
    const errors: Error[] = [];
    const got: unknown[] = [];
    readFrames(
      stream,
      (m) => got.push(m),
      (e) => errors.push(e),
    );
    stream.write(Buffer.from([3, 0, 0, 0, 0xff, 0xfe, 0xfd]));
    stream.write(all);
    assert.equal(errors.length, 1);
    assert.deepEqual(got, [], 'nothing after a bad frame');
  });
});

describe('the shared worker directory', () => {
  it('is made private, and one that others can enter is refused', () => {
    const dir = path.join(TMP, 'dirs', `d${process.pid}`);
    fs.rmSync(dir, { recursive: true, force: true });
    ensurePrivateDirectory(dir);
    assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
    fs.chmodSync(dir, 0o755);
    assert.throws(() => ensurePrivateDirectory(dir), /open to other users \(mode 755\)/);
    fs.chmodSync(dir, 0o700);
    ensurePrivateDirectory(dir);
  });

  it('names the socket after the worker build, so two builds never share a worker', () => {
    const other = path.join(TMP, 'other-worker.js');
    fs.mkdirSync(TMP, { recursive: true });
    fs.writeFileSync(other, '// another build\n');
    const a = sharedWorkerAddress(WORKER, '/tmp/x');
    const b = sharedWorkerAddress(other, '/tmp/x');
    assert.notEqual(a.socketPath, b.socketPath);
    assert.equal(sharedWorkerAddress(WORKER, '/tmp/x').socketPath, a.socketPath);
    assert.throws(() => sharedWorkerAddress(WORKER, `/tmp/${'long/'.repeat(20)}`), /too long for a unix socket/);
  });
});

async function diagnosticsWhen(c: WorkerClient, ok: (d: WorkerDiagnostics) => boolean, what: string): Promise<WorkerDiagnostics> {
  let d = await c.request('diagnostics', {});
  for (const deadline = Date.now() + 5000; !ok(d) && Date.now() < deadline; d = await c.request('diagnostics', {})) {
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(ok(d), `${what}: ${JSON.stringify(d)}`);
  return d;
}

describe('shared inference worker', { skip }, () => {
  let run = 0;
  const clients: WorkerClient[] = [];
  const dirs: string[] = [];
  /** A fresh directory (so a fresh worker) per test. */
  const freshAddress = () => {
    const dir = path.join(TMP, `w${process.pid}-${run++}`);
    fs.rmSync(dir, { recursive: true, force: true });
    dirs.push(dir);
    return sharedWorkerAddress(WORKER, dir);
  };
  const client = (address: ReturnType<typeof sharedWorkerAddress>, logs: string[] = [], extra: { onCrash?: () => void; onRestart?: () => void } = {}) => {
    const c = new WorkerClient({
      workerPath: WORKER,
      shared: address,
      env: { DRAFTLINE_TEST_HOOKS: '1', DRAFTLINE_SHARED_IDLE_MS: '400' },
      backoff: { initialMs: 100, maxMs: 400, stableAfterMs: 60_000 },
      log: (_level, message) => logs.push(message),
      ...extra,
    });
    clients.push(c);
    return c;
  };
  afterEach(async () => {
    const pids = clients.map((c) => c.pid).filter((p): p is number => p !== undefined);
    for (const c of clients.splice(0)) c.dispose();
    // Each test's worker leaves when idle (400 ms): wait for it, so no test inherits another's.
    await until(() => pids.every((p) => !isAlive(p)), 10_000, 'the idle shared worker exits');
  });
  after(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a second window finds the models loaded; the windows complete alike and keep their documents apart', async () => {
    const address = freshAddress();
    const logsA: string[] = [];
    const logsB: string[] = [];
    const a = client(address, logsA);
    const infoA = await a.request('load', { models: MODELS, speculation: SPECULATION });
    assert.equal(infoA.sharedWith, undefined, 'the first window loaded them');
    assert.ok(
      logsA.some((l) => l.startsWith('shared inference worker started')),
      logsA.join('\n'),
    );
    assert.equal(fs.statSync(address.socketPath).mode & 0o777, 0o600, 'the socket is the user’s alone');

    const b = client(address, logsB);
    const infoB = await b.request('load', { models: MODELS, speculation: SPECULATION });
    assert.ok(
      logsB.some((l) => l.startsWith('connected to the shared inference worker')),
      logsB.join('\n'),
    );
    assert.equal(a.pid, b.pid, 'one worker process');
    assert.equal(infoB.sharedWith, 1, 'the second window joined the loaded models');
    assert.equal(infoB.target.name, infoA.target.name);
    let d = await b.request('diagnostics', {});
    assert.equal(d.clients, 2);
    assert.equal(d.loadedModels, 1, 'loaded once');

    const fromA = await a.request('complete', { request: request(PREFIX, { mode: 'plain' }) });
    const fromB = await b.request('complete', { request: request(PREFIX, { mode: 'hybrid' }) });
    assert.ok(fromA.text.length > 0);
    assert.equal(fromB.text, fromA.text, 'one target, lossless in either window');

    // The same file open in both windows; closing it in one leaves the other's copy indexed.
    a.notify({ kind: 'documentOpen', key: 'file:///same.ts', text: 'const alpha = 1;\n'.repeat(50) });
    b.notify({ kind: 'documentOpen', key: 'file:///same.ts', text: 'const beta = 2;\n'.repeat(50) });
    // (Two connections: their messages are not ordered with each other, so the checks wait.)
    d = await diagnosticsWhen(b, (x) => x.index?.documents === 2, 'one document a window');
    a.notify({ kind: 'documentClose', key: 'file:///same.ts' });
    d = await diagnosticsWhen(b, (x) => x.index?.documents === 1, "B's copy stays");
    b.notify({ kind: 'documentClose', key: 'file:///same.ts' });
    await diagnosticsWhen(b, (x) => x.index?.documents === 0, 'closed in both');

    // A window that closes takes its documents along; the other goes on.
    a.notify({ kind: 'documentOpen', key: 'file:///a-only.ts', text: 'let gamma = 3;\n'.repeat(20) });
    await diagnosticsWhen(b, (x) => x.index?.documents === 1, "A's document indexed");
    a.dispose();
    d = await diagnosticsWhen(b, (x) => x.clients === 1, 'A gone');
    assert.equal(d.index?.documents, 0, "A's documents left with it");
    assert.equal(d.loadedModels, 1);
    const again = await b.request('complete', { request: request(PREFIX, { mode: 'plain' }) });
    assert.equal(again.text, fromA.text);

    // Other models: a pair of their own, and the old one unloads once nobody uses it.
    const other = await b.request('load', { models: { ...MODELS, contextSize: 512 }, speculation: SPECULATION });
    assert.equal(other.sharedWith, undefined);
    d = await b.request('diagnostics', {});
    assert.equal(d.loadedModels, 1, 'the unused pair was unloaded');
  });

  it('three windows starting at once get one worker, also over a dead worker’s lock and socket', async () => {
    for (const stale of [false, true]) {
      const address = freshAddress();
      if (stale) {
        // What a worker killed by a native abort leaves: its lock (a pid that no longer runs) and socket file.
        ensurePrivateDirectory(address.dir);
        const dead = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(address.socketPath)}, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
        await new Promise<void>((resolve) => dead.stdout!.once('data', () => resolve()));
        fs.mkdirSync(`${address.socketPath}.lock`);
        fs.writeFileSync(`${address.socketPath}.lock/pid`, String(dead.pid));
        dead.kill('SIGKILL');
        await new Promise((r) => dead.once('exit', r));
      }
      const windows = [client(address), client(address), client(address)];
      await Promise.all(windows.map((w) => w.start()));
      assert.equal(new Set(windows.map((w) => w.pid)).size, 1, `one worker (stale lock: ${stale})`);
      assert.equal((await windows[0].request('diagnostics', {})).clients, 3);
      assert.equal(fs.readFileSync(`${address.socketPath}.lock/pid`, 'utf8'), String(windows[0].pid), 'the lock names the worker that serves');
      for (const w of windows) w.dispose();
    }
  });

  it('a reloaded window finds the models its previous self left loaded; other models replace them', async () => {
    const address = freshAddress();
    const first = client(address);
    await first.request('load', { models: MODELS, speculation: SPECULATION });
    const pid = first.pid;
    first.dispose();
    const reloaded = client(address);
    await diagnosticsWhen(reloaded, (d) => d.clients === 1, 'the first connection gone');
    assert.equal(reloaded.pid, pid, 'the same worker, still up');
    const info = await reloaded.request('load', { models: MODELS, speculation: SPECULATION });
    assert.equal(info.sharedWith, 0, 'kept, not loaded again');
    assert.ok((await reloaded.request('complete', { request: request(PREFIX) })).text.length > 0);
    await reloaded.request('load', { models: { ...MODELS, contextSize: 512 }, speculation: SPECULATION });
    assert.equal((await reloaded.request('diagnostics', {})).loadedModels, 1, 'the kept pair made room');
  });

  it('a worker that cannot start is a clear error, and the next start tries again', async () => {
    fs.mkdirSync(TMP, { recursive: true });
    const broken = path.join(TMP, 'broken-worker.js');
    const tries = path.join(TMP, `broken-tries-${process.pid}`);
    fs.rmSync(tries, { force: true });
    fs.writeFileSync(broken, `require('fs').appendFileSync(${JSON.stringify(tries)}, 'x'); console.error('cannot load the binding'); process.exit(3);\n`);
    const address = { ...freshAddress(), ...sharedWorkerAddress(broken, path.join(TMP, `broken-${process.pid}`)) };
    dirs.push(address.dir);
    const c = new WorkerClient({ workerPath: broken, shared: address });
    clients.push(c);
    await assert.rejects(c.start(), /did not start \(exited with code 3\); its log: .*cannot load the binding/);
    await assert.rejects(c.start(), /did not start/);
    assert.equal(fs.readFileSync(tries, 'utf8'), 'xx', 'a second start is a second try, not the first one’s rejection again');
    assert.equal(c.pid, undefined);
  });

  it('replaces the socket a killed worker left behind', async () => {
    const address = freshAddress();
    ensurePrivateDirectory(address.dir);
    const squatter = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(address.socketPath)}, () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => squatter.stdout!.once('data', () => resolve()));
    squatter.kill('SIGKILL');
    await new Promise((r) => squatter.once('exit', r));
    assert.ok(fs.existsSync(address.socketPath), 'a stale socket file');
    await assert.rejects(new Promise((resolve, reject) => net.connect(address.socketPath).once('connect', resolve).once('error', reject)), /ECONNREFUSED/);
    const a = client(address);
    await a.request('load', { models: MODELS, speculation: SPECULATION });
    assert.ok((await a.request('complete', { request: request(PREFIX) })).text.length > 0);
  });

  it('a crash reaches every window; they come back on one new worker with the models loaded once', async () => {
    const address = freshAddress();
    const events: string[] = [];
    const a = client(address, [], { onCrash: () => events.push('a crash'), onRestart: () => events.push('a restart') });
    const b = client(address, [], { onCrash: () => events.push('b crash'), onRestart: () => events.push('b restart') });
    await a.request('load', { models: MODELS, speculation: SPECULATION });
    await b.request('load', { models: MODELS, speculation: SPECULATION });
    const before = a.pid!;
    await assert.rejects(b.request('crash', {}), /shared inference worker ended/);
    await until(() => events.includes('a restart') && events.includes('b restart'), 10_000, 'both windows restart');
    assert.ok(events.includes('a crash') && events.includes('b crash'), events.join());
    assert.notEqual(a.pid, before);
    assert.equal(a.pid, b.pid, 'one new worker');
    // What the controller does after a restart: load again. The second load joins the first.
    const [ia, ib] = await Promise.all([a.request('load', { models: MODELS, speculation: SPECULATION }), b.request('load', { models: MODELS, speculation: SPECULATION })]);
    assert.equal([ia.sharedWith, ib.sharedWith].filter((n) => n === 1).length, 1, 'one of them joined the other');
    assert.equal((await a.request('diagnostics', {})).loadedModels, 1);
  });

  it('leaves once its last window is gone, and removes its socket', async () => {
    const address = freshAddress();
    const a = client(address);
    await a.start();
    const pid = a.pid!;
    a.dispose();
    await until(() => !isAlive(pid), 10_000, 'the worker exits');
    assert.equal(fs.existsSync(address.socketPath), false);
  });
});
