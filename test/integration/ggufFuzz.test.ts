// Property-based fuzzing of the GGUF validator (src/gguf/) over the real header of
// models/tiny-code-target.gguf, for a fixed time budget: whatever the mutation, inspectModelFile
// answers within a deadline with model info or a ModelFileError naming the file, never another
// exception, a hang or a crash; and a sample of the files it accepts loads in llama.cpp without
// aborting the process (what the validator is for). gguf.test.ts has the hand-written cases and
// 100 random byte flips; this aims at the header's structure (counts, lengths, types) and keeps
// what it found in test/fixtures/gguf-fuzz/regressions.json, replayed on every run.
//
// FUZZ_SECONDS (default 15) sets the budget; FUZZ_SEED a seed (default fixed, so CI is repeatable;
// FUZZ_SEED=random explores).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { ModelFileError, readGgufMetadata } from '../../src/gguf/ggufReader';
import { inspectModelFile } from '../../src/gguf/modelFileCheck';

const ROOT = path.resolve(__dirname, '../..');
const MODEL = path.join(ROOT, 'models/tiny-code-target.gguf');
const REGRESSIONS = path.join(ROOT, 'test/fixtures/gguf-fuzz/regressions.json');
const SCRATCH = path.join(ROOT, 'test-output/gguf-fuzz');
const BUDGET_MS = Number(process.env.FUZZ_SECONDS ?? 15) * 1000;
const SEED = process.env.FUZZ_SEED === 'random' ? Date.now() % 2 ** 31 : Number(process.env.FUZZ_SEED ?? 15_015);
/** Any single file's check; the real ones take a few ms. */
const DEADLINE_MS = 5000;
/** Accepted files loaded by llama.cpp after the run (one child process, ~50 ms a file). */
const NATIVE_SAMPLE = 16;

/** A change to the model file, in terms small enough to keep as a regression case. */
type Mutation =
  | { kind: 'byte'; at: number; value: number }
  | { kind: 'u32'; at: number; value: number }
  | { kind: 'u64'; at: number; value: string }
  | { kind: 'delete'; at: number; count: number }
  | { kind: 'insert'; at: number; bytes: number[] }
  | { kind: 'truncate'; length: number };

interface Regression {
  name: string;
  mutations: Mutation[];
  /** What the validator must say: an error code, or "ok". */
  expect: string;
  /** Why it is kept. */
  note: string;
}

/**
 * Offsets of the header's structure: the fixed fields, and every string's u64 length (found as a
 * small count followed by that many printable bytes: keys, tensor names, token texts) and the u32
 * right after a key (its value type). Mutating these reaches the reader's checks, where flipping
 * random bytes mostly lands inside token texts.
 */
function structuralOffsets(header: Buffer): number[] {
  const offsets = [4, 8, 16];
  for (let i = 24; i + 8 < header.length; i++) {
    const n = header.readUInt32LE(i);
    if (n === 0 || n > 96 || header.readUInt32LE(i + 4) !== 0 || i + 8 + n > header.length) continue;
    const text = header.subarray(i + 8, i + 8 + n);
    if (!text.every((b) => b >= 0x20 && b < 0x7f)) continue;
    offsets.push(i);
    if (/^[a-z_]+\.[a-z_.]+$/.test(text.toString('latin1'))) offsets.push(i + 8 + n); // a key: its type follows
  }
  return offsets;
}

function apply(file: Buffer, headerLength: number, mutations: readonly Mutation[]): Buffer {
  let b = Buffer.from(file.subarray(0, headerLength));
  let length = file.length;
  for (const m of mutations) {
    const at = Math.min(m.kind === 'truncate' ? 0 : m.at, Math.max(0, b.length - 8));
    switch (m.kind) {
      case 'byte':
        if (at < b.length) b[at] = m.value;
        break;
      case 'u32':
        if (at + 4 <= b.length) b.writeUInt32LE(m.value >>> 0, at);
        break;
      case 'u64':
        if (at + 8 <= b.length) b.writeBigUInt64LE(BigInt(m.value) & 0xffff_ffff_ffff_ffffn, at);
        break;
      case 'delete':
        b = Buffer.concat([b.subarray(0, at), b.subarray(at + m.count)]);
        length -= Math.min(m.count, Math.max(0, headerLength - at));
        break;
      case 'insert':
        b = Buffer.concat([b.subarray(0, at), Buffer.from(m.bytes), b.subarray(at)]);
        length += m.bytes.length;
        break;
      case 'truncate':
        length = Math.min(length, m.length);
        break;
    }
  }
  // The tensor data is not read by the validator: its length matters, its bytes do not.
  const out = Buffer.alloc(Math.max(0, length));
  b.copy(out, 0, 0, Math.min(b.length, out.length));
  return out;
}

/**
 * Loads each file in llama.cpp (model, context, one evaluation) in one child process, as the worker
 * would; returns the file it died on, with the reason, or null when all loaded or failed cleanly
 * (a JavaScript error is fine: the worker reports it; an abort would end the worker).
 */
function firstNativeCrash(files: readonly string[]): { file: string; reason: string } | null {
  const script = `
    const files = JSON.parse(process.argv[1]);
    import('node-llama-cpp').then(async (lib) => {
      const llama = await lib.getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: lib.LlamaLogLevel.disabled });
      for (const modelPath of files) {
        process.stdout.write(modelPath + '\\n');
        try {
          const model = await llama.loadModel({ modelPath });
          const context = await model.createContext({ contextSize: 128 });
          await context.getSequence().evaluateWithoutGeneratingNewTokens(model.tokenize('const x = 1;'));
          await context.dispose();
          await model.dispose();
        } catch {}
      }
      process.stdout.write('done\\n');
    });`;
  const child = spawnSync(process.execPath, ['-e', script, JSON.stringify(files)], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  const started = child.stdout.trim().split('\n');
  if (child.status === 0 && started.at(-1) === 'done') return null;
  const reason = child.signal ?? `exit code ${child.status}`;
  return { file: started.at(-1) ?? '(before the first file)', reason: `${reason}: ${child.stderr.trim().split('\n').slice(-2).join(' ')}` };
}

/** What the validator said, or why that is not acceptable. */
async function check(file: string): Promise<{ outcome: string; problem?: string }> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${DEADLINE_MS} ms`)), DEADLINE_MS)));
  try {
    await Promise.race([inspectModelFile(file), deadline]);
    return { outcome: 'ok' };
  } catch (error) {
    if (!(error instanceof ModelFileError)) return { outcome: 'crash', problem: `${(error as Error)?.constructor?.name}: ${(error as Error)?.message ?? String(error)}` };
    const base = path.basename(file);
    if (!error.message.startsWith(`${base} `) && !error.message.includes(file)) return { outcome: error.code, problem: `message does not name the file: ${error.message}` };
    if (error.message.length > 600) return { outcome: error.code, problem: `message of ${error.message.length} characters` };
    return { outcome: error.code };
  } finally {
    clearTimeout(timer);
  }
}

describe('GGUF validator fuzzing', () => {
  let model: Buffer;
  let headerLength: number;
  let offsets: number[];
  before(async () => {
    fs.mkdirSync(SCRATCH, { recursive: true });
    model = fs.readFileSync(MODEL);
    headerLength = (await readGgufMetadata(MODEL)).dataOffset;
    offsets = structuralOffsets(model.subarray(0, headerLength));
  });
  after(() => fs.rmSync(SCRATCH, { recursive: true, force: true }));

  it('replays the kept regression cases', async () => {
    const cases = JSON.parse(fs.readFileSync(REGRESSIONS, 'utf8')) as Regression[];
    for (const [i, c] of cases.entries()) {
      const file = path.join(SCRATCH, `regression-${i}.gguf`);
      fs.writeFileSync(file, apply(model, headerLength, c.mutations));
      const { outcome, problem } = await check(file);
      assert.equal(problem, undefined, `${c.name}: ${problem}`);
      assert.equal(outcome, c.expect, c.name);
    }
  });

  it(`answers every mutated header with info or a clear ModelFileError (${BUDGET_MS / 1000} s budget, seed ${SEED})`, async () => {
    const interesting64 = [
      '0',
      '1',
      '2',
      '7',
      '255',
      '65536',
      '2147483647',
      '2147483648',
      '4294967295',
      '4294967296',
      '9007199254740991',
      '9007199254740992',
      '9223372036854775807',
      '18446744073709551615',
    ];
    const at = fc.oneof({ arbitrary: fc.constantFrom(...offsets), weight: 3 }, { arbitrary: fc.nat({ max: headerLength - 1 }), weight: 1 });
    const mutation: fc.Arbitrary<Mutation> = fc.oneof(
      fc.record({ kind: fc.constant('byte' as const), at, value: fc.nat({ max: 255 }) }),
      fc.record({ kind: fc.constant('u32' as const), at, value: fc.oneof(fc.nat({ max: 40 }), fc.constantFrom(0x7fffffff, 0x80000000, 0xffffffff)) }),
      fc.record({ kind: fc.constant('u64' as const), at, value: fc.oneof(fc.constantFrom(...interesting64), fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map(String)) }),
      fc.record({ kind: fc.constant('delete' as const), at, count: fc.integer({ min: 1, max: 64 }) }),
      fc.record({ kind: fc.constant('insert' as const), at, bytes: fc.array(fc.nat({ max: 255 }), { minLength: 1, maxLength: 16 }) }),
      fc.record({ kind: fc.constant('truncate' as const), length: fc.nat({ max: model.length }) }),
    );
    const outcomes = new Map<string, number>();
    const accepted: Mutation[][] = [];
    let runs = 0;
    const file = path.join(SCRATCH, 'fuzz.gguf');
    const started = performance.now();
    const result = await fc.check(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 4 }), async (mutations) => {
        runs++;
        fs.writeFileSync(file, apply(model, headerLength, mutations));
        const { outcome, problem } = await check(file);
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        if (outcome === 'ok' && accepted.length < NATIVE_SAMPLE) accepted.push(mutations);
        return problem === undefined;
      }),
      { seed: SEED, numRuns: 1_000_000, interruptAfterTimeLimit: BUDGET_MS, markInterruptAsFailure: false },
    );
    const seconds = (performance.now() - started) / 1000;
    console.log(`${runs} mutated headers in ${seconds.toFixed(1)} s: ${[...outcomes].map(([o, n]) => `${o} ${n}`).join(', ')}`);
    if (result.failed) {
      const mutations = result.counterexample?.[0] ?? [];
      fs.writeFileSync(file, apply(model, headerLength, mutations));
      const { problem } = await check(file);
      assert.fail(`seed ${SEED}, mutations ${JSON.stringify(mutations)}: ${problem ?? String(result.errorInstance)}; keep them in ${path.relative(ROOT, REGRESSIONS)}`);
    }
    assert.ok(runs >= 100, `${runs} runs`);
    assert.ok(outcomes.size >= 4, 'the mutations reach several of the validator checks');

    const files = accepted.map((mutations, i) => {
      const acceptedFile = path.join(SCRATCH, `accepted-${i}.gguf`);
      fs.writeFileSync(acceptedFile, apply(model, headerLength, mutations));
      return acceptedFile;
    });
    const crash = firstNativeCrash(files);
    const culprit = crash ? accepted[files.indexOf(crash.file)] : undefined;
    assert.equal(crash, null, `llama.cpp died on a file the validator accepted, mutations ${JSON.stringify(culprit)}: ${crash?.reason}; keep them in ${path.relative(ROOT, REGRESSIONS)}`);
  });
});
