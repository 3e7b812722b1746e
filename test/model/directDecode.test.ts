// The native path's batches go straight to llama_decode (src/llama/directDecode.ts) instead of
// through node-llama-cpp's batch queue: the same tokens and confidences as the library's decode; the
// library's own sequence kept in step (its tokens and next position, which erasing, saving and loading
// state read); a decode and its reads under the library's own lock on the context, so that neither
// another sequence of ours nor the library's own decodes run in between or at the same time; and a
// context disposed under a decode that neither crashes nor hangs.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DirectDecoder } from '../../src/llama/directDecode';
import type { SequenceInternals } from '../../src/llama/evaluatorInternals';
import { getRuntime } from '../../src/inference/llamaRuntime';
import { LlamaSequenceEvaluator } from '../../src/llama/llamaSequenceEvaluator';
import type { LlamaContext, LlamaModel } from '../../src/llama/llamaTypes';
import { loadNativeAddon } from '../../src/llama/nativeAddon';
import { embeddedPairPaths } from '../../src/models/embedded';
import type { EvaluatedNext } from '../../src/speculation/greedyEvaluator';
import { mulberry32 } from '../../testbed/ggufWriter';

const ROOT = path.resolve(__dirname, '../..');

describe('direct decode: the native path without the library’s batch queue', () => {
  let model: LlamaModel;
  const contexts: LlamaContext[] = [];
  let prompt: number[];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-direct-'));

  /** A context with a small batch (so a prompt takes several) and an evaluator on its first sequence. */
  const make = async (decode: 'direct' | 'library', sequences = 1) => {
    const context = await model.createContext({ contextSize: 512, batchSize: 64, sequences, threads: 1 });
    contexts.push(context);
    const evaluator = new LlamaSequenceEvaluator(context.getSequence(), model, undefined, { decode });
    return { context, evaluator };
  };

  /** The library's view of the sequence is ours: its tokens and its next position. */
  const inStep = (evaluator: LlamaSequenceEvaluator) => {
    const sequence = (evaluator as unknown as { sequence: { contextTokens: number[]; nextTokenIndex: number } }).sequence;
    assert.deepEqual(sequence.contextTokens, [...evaluator.tokens]);
    assert.equal(sequence.nextTokenIndex, evaluator.tokens.length);
  };

  /** A decode of mixed steps: the prompt (several batches), plain steps, verify batches with a confidence, cuts. */
  const script = async (evaluator: LlamaSequenceEvaluator, seed: number) => {
    const random = mulberry32(seed);
    const out: EvaluatedNext[][] = [];
    out.push(await evaluator.append(prompt, 1, true));
    inStep(evaluator);
    for (let step = 0; step < 24; step++) {
      const next = out[out.length - 1]!.at(-1)!.token;
      if (step % 3 === 2) {
        // A verify batch: the next token and guesses, some of them right (the last outputs' tokens).
        const guesses = Array.from({ length: 1 + Math.floor(random() * 5) }, () => Math.floor(random() * 200));
        const input = [next, ...guesses];
        const result = await evaluator.append(input, input.length, step % 2 === 0, guesses);
        out.push(result);
        // Reject what was not accepted, as the decoder does.
        await evaluator.truncate(evaluator.tokens.length - input.length + result.length);
      } else {
        out.push(await evaluator.append([next], 1, step % 2 === 0));
      }
      inStep(evaluator);
    }
    return out;
  };

  before(async () => {
    const llama = await getRuntime({ gpu: 'cpu' }, 1, () => undefined);
    model = await llama.loadModel({ modelPath: embeddedPairPaths(ROOT, 'tiny').target });
    const text = fs.readFileSync(path.join(ROOT, 'src', 'speculation', 'policy.ts'), 'utf8').slice(0, 1200);
    prompt = model.tokenize(text);
    assert.ok(prompt.length > 128, 'the prompt takes several batches of 64');
  });

  after(async () => {
    for (const c of contexts) await c.dispose();
    await model.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('gives the library decode’s tokens and confidences, batch after batch, and keeps the library’s sequence in step', async () => {
    const direct = await make('direct');
    const library = await make('library');
    assert.equal(direct.evaluator.path, 'native');
    assert.equal(direct.evaluator.directDecodeUnavailable, undefined);
    for (const seed of [1, 2, 3]) {
      await direct.evaluator.reset();
      await library.evaluator.reset();
      assert.deepEqual(await script(direct.evaluator, seed), await script(library.evaluator, seed));
      assert.deepEqual([...direct.evaluator.tokens], [...library.evaluator.tokens]);
    }
    assert.ok(direct.evaluator.directDecodes > 0);
    assert.equal(direct.evaluator.libraryDecodes, 0, 'every batch of the native path went straight to llama_decode');
    assert.equal(library.evaluator.directDecodes, 0);
    assert.match(library.evaluator.directDecodeUnavailable ?? '', /asked for the library/);
  });

  it('a state saved after direct decodes loads into another context and goes on with the same tokens', async () => {
    const a = await make('direct');
    const b = await make('direct');
    await a.evaluator.append(prompt, 1);
    const file = path.join(dir, 'state.bin');
    await a.evaluator.saveState(file);
    await b.evaluator.loadState(file);
    assert.deepEqual([...b.evaluator.tokens], [...a.evaluator.tokens]);
    const next = [prompt[5]!, prompt[6]!, prompt[7]!];
    assert.deepEqual(await b.evaluator.append(next, 3, true), await a.evaluator.append(next, 3, true));
    inStep(b.evaluator);
  });

  it('two sequences of one context decoding at once get what each gets alone (a decode and its reads under the library’s lock)', async () => {
    const alone = await make('direct');
    const expectedA = await script(alone.evaluator, 7);
    await alone.evaluator.reset();
    const expectedB = await script(alone.evaluator, 8);
    const context = await model.createContext({ contextSize: 512, batchSize: 64, sequences: 2, threads: 1 });
    contexts.push(context);
    const a = new LlamaSequenceEvaluator(context.getSequence(), model);
    const b = new LlamaSequenceEvaluator(context.getSequence(), model);
    const [gotA, gotB] = await Promise.all([script(a, 7), script(b, 8)]);
    assert.deepEqual(gotA, expectedA);
    assert.deepEqual(gotB, expectedB);
    assert.equal(a.libraryDecodes + b.libraryDecodes, 0);
  });

  it('the library’s own decodes on another sequence of the context never run at the same time as ours (its lock)', async () => {
    const alone = await make('direct');
    const expected = await script(alone.evaluator, 11);
    const context = await model.createContext({ contextSize: 512, batchSize: 64, sequences: 2, threads: 1 });
    contexts.push(context);
    const ours = new LlamaSequenceEvaluator(context.getSequence(), model);
    const other = context.getSequence();
    // Someone else evaluates through the library's public API on the other sequence, again and again,
    // while ours decodes: two llama_decode calls on one context at once would crash the process.
    let stop = false;
    const theirs = (async () => {
      let rounds = 0;
      while (!stop) {
        await other.evaluateWithoutGeneratingNewTokens(prompt.slice(rounds * 7, rounds * 7 + 7) as never);
        rounds++;
        if (rounds * 7 + 7 > prompt.length) {
          await other.clearHistory();
          rounds = 0;
        }
      }
      return rounds;
    })();
    const got = await script(ours, 11);
    stop = true;
    await theirs;
    assert.deepEqual(got, expected);
    assert.equal(ours.libraryDecodes, 0);
    assert.ok(ours.directDecodes > 0);
  });

  it('disposing the context while a direct decode runs neither crashes nor hangs: the decode ends first', async () => {
    const { context, evaluator } = await make('direct');
    const decoding = evaluator.append(prompt, 1);
    const disposing = context.dispose();
    const settled = await Promise.allSettled([decoding, disposing]);
    assert.equal(settled[1].status, 'fulfilled');
    if (settled[0].status === 'rejected') assert.match(String(settled[0].reason), /dispos/i);
    else assert.equal(settled[0].value.length, 1);
    assert.equal(context.disposed, true);
    await assert.rejects(evaluator.append([1], 1), /dispos/i);
  });

  it('says why where batches stay the library’s: a Vulkan GPU, models that need checkpoints, switched off, no addon', () => {
    const loaded = loadNativeAddon();
    assert.ok('addon' in loaded, 'the native addon is built');
    const fake = (gpu: string | false, needsCheckpoints: boolean) =>
      ({
        _sequenceId: 0,
        _nextTokenIndex: 0,
        _contextTokens: [],
        _loadedTokenPredictions: [],
        needsCheckpoints,
        _context: { _ctx: {}, _backendContextDisposeGuard: { createPreventDisposalHandle: () => ({ dispose() {} }) }, _llama: { gpu }, batchSize: 512 },
      }) as unknown as SequenceInternals;
    assert.ok(DirectDecoder.for(fake(false, false), loaded.addon, false) instanceof DirectDecoder);
    assert.ok(DirectDecoder.for(fake('cuda', false), loaded.addon, true) instanceof DirectDecoder);
    assert.match((DirectDecoder.for(fake('vulkan', false), loaded.addon, true) as { unavailable: string }).unavailable, /Vulkan/);
    // A Vulkan build with no GPU computes on the CPU: direct.
    assert.ok(DirectDecoder.for(fake('vulkan', false), loaded.addon, false) instanceof DirectDecoder);
    assert.match((DirectDecoder.for(fake(false, true), loaded.addon, false) as { unavailable: string }).unavailable, /checkpoints/);
    assert.match((DirectDecoder.for(fake(false, false), undefined, false) as { unavailable: string }).unavailable, /no decode/);
    assert.match((DirectDecoder.for({} as SequenceInternals, loaded.addon, false) as { unavailable: string }).unavailable, /internals missing/);
    process.env.DRAFTLINE_DIRECT_DECODE = 'off';
    try {
      assert.match((DirectDecoder.for(fake(false, false), loaded.addon, false) as { unavailable: string }).unavailable, /DRAFTLINE_DIRECT_DECODE=off/);
    } finally {
      delete process.env.DRAFTLINE_DIRECT_DECODE;
    }
  });
});
