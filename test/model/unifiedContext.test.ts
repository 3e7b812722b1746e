// The target's context of Draftline's own (src/llama/unifiedContext.ts: one KV stream for all its
// sequences, made by the native addon on the model node-llama-cpp loaded) and its evaluator
// (src/llama/unifiedSequenceEvaluator.ts): the same greedy tokens, confidences, ranks and shifts as
// LlamaSequenceEvaluator on node-llama-cpp's context; tree verification keeps exactly the path greedy
// decoding would, and its cells: 1,000 tree steps leave no stray cell and every path sequence empty,
// beside another owner's sequence that stays intact; prompt states save and load; bad input is an
// error, never a crash.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getRuntime } from '../../src/inference/llamaRuntime';
import { LlamaSequenceEvaluator } from '../../src/llama/llamaSequenceEvaluator';
import type { LlamaContext, LlamaModel } from '../../src/llama/llamaTypes';
import { loadNativeAddon } from '../../src/llama/nativeAddon';
import { UnifiedContext } from '../../src/llama/unifiedContext';
import type { UnifiedSequenceEvaluator } from '../../src/llama/unifiedSequenceEvaluator';
import { embeddedPairPaths } from '../../src/models/embedded';
import type { Token } from '../../src/shared/decoding';
import { acceptedPath, type TokenTree } from '../../src/speculation/tokenTree';
import { mulberry32 } from '../../testbed/ggufWriter';
import { shuffled } from '../support/treeProposer';

const ROOT = path.resolve(__dirname, '../..');
/** Both contexts compute attention the same way: the tokens and confidences are then bitwise equal. */
const FLASH = false;

describe("Draftline's unified context and its evaluator, against node-llama-cpp's", () => {
  let model: LlamaModel;
  let prompt: Token[];
  const contexts: LlamaContext[] = [];
  const unified: UnifiedContext[] = [];

  const reference = async (contextSize = 512) => {
    const context = await model.createContext({ contextSize, sequences: 1, threads: 1, flashAttention: FLASH });
    contexts.push(context);
    return new LlamaSequenceEvaluator(context.getSequence(), model, 'native', { shift: true });
  };
  const make = async (over: Partial<Parameters<typeof UnifiedContext.create>[1]> = {}) => {
    const context = await UnifiedContext.create(model, { sequences: 2, contextSize: 512, batchSize: 512, threads: 1, flashAttention: FLASH, treeNodes: 15, shift: true, ...over });
    unified.push(context);
    return context;
  };
  /** Plain greedy decoding after `history`, `count` tokens, one evaluation each. */
  const greedyAfter = async (history: readonly Token[], count: number): Promise<Token[]> => {
    const ev = await reference();
    const out = [(await ev.append(history, 1))[0]!.token];
    while (out.length < count) out.push((await ev.append([out.at(-1)!], 1))[0]!.token);
    return out;
  };

  before(async () => {
    const llama = await getRuntime({ gpu: 'cpu' }, 1, () => undefined);
    model = await llama.loadModel({ modelPath: embeddedPairPaths(ROOT, 'tiny').target });
    prompt = model.tokenize('export function clamp(value: number, min: number, max: number): number {\n  if (value < min) return min;\n');
  });

  after(async () => {
    for (const u of unified) await u.dispose();
    for (const c of contexts) await c.dispose();
    await model.dispose();
  });

  it('gives the same greedy tokens and confidences for every output position, batch after batch, and the same top tokens and margins', async () => {
    const a = (await make()).evaluators[0]!;
    const b = await reference();
    const rand = mulberry32(5);
    assert.deepEqual(await a.append(prompt, 2, true), await b.append(prompt, 2, true));
    const history = [...prompt];
    for (let step = 0; step < 14; step++) {
      const batch = Array.from({ length: 1 + (step % 6) }, () => Math.floor(rand() * 4000) + 10);
      if (step % 4 === 3) assert.deepEqual(await a.appendRanked(batch, batch.length, 4), await b.appendRanked(batch, batch.length, 4), `step ${step}`);
      else assert.deepEqual(await a.append(batch, batch.length, step % 2 === 0), await b.append(batch, batch.length, step % 2 === 0), `step ${step}`);
      history.push(...batch);
      if (step % 3 === 2) {
        await a.truncate(history.length - 2);
        await b.truncate(history.length - 2);
        history.length -= 2;
      }
      assert.deepEqual(a.tokens, history);
    }
    // With an expected proposal, reading stops after the first token that differs.
    const [next] = await b.append([11], 1);
    const got = await a.append([11, next!.token === 5 ? 6 : 5, 7], 3, false, [next!.token === 5 ? 6 : 5, 7]);
    assert.equal(got.length, 1);
    assert.equal(got[0]!.token, next!.token);
  });

  it('shifts a cached range out as node-llama-cpp does (seq_rm, then seq_add): the same tokens after it', async () => {
    const a = (await make()).evaluators[1]!;
    const b = await reference();
    const long = [...prompt, ...prompt, ...prompt];
    await a.append(long, 0);
    await b.append(long, 0);
    await a.removeRange!(3, 3 + prompt.length);
    await b.removeRange!(3, 3 + prompt.length);
    assert.deepEqual(a.tokens, b.tokens);
    assert.deepEqual(await a.append([prompt[5]!, prompt[6]!], 2, true), await b.append([prompt[5]!, prompt[6]!], 2, true));
    await assert.rejects(a.removeRange!(0, 2), /cannot shift out/);
  });

  it('verifies a tree: the path greedy decoding writes, the target’s token after it, and only that path joins the sequence', async () => {
    const context = await make();
    const ev = context.evaluators[0]!;
    const rand = mulberry32(9);
    const vocabulary = 4000;
    for (let round = 0; round < 12; round++) {
      await ev.truncate(0);
      const head = prompt.slice(0, 10 + round);
      const [pending, ...truth] = await greedyAfter(head, 9);
      await ev.append(head, 0);
      // The truth among wrong siblings, cut at a random depth, the node order shuffled.
      const depth = round % 6;
      const branches = [truth.slice(0, depth), [((truth[0] ?? 0) + 1) % vocabulary, 7], [...truth.slice(0, 2), ((truth[2] ?? 0) + 3) % vocabulary]];
      const tree = shuffled(treeOf(branches), rand);
      const predictions: Token[] = [];
      const verdict = await ev.verifyTree(pending!, tree, round % 2 === 0 ? predictions : undefined);
      const expected = acceptedPath(tree, truth, 0);
      assert.deepEqual(verdict.path, expected, `round ${round}`);
      assert.equal(verdict.next, truth[expected.length]);
      assert.deepEqual(ev.tokens, [...head, pending!, ...truth.slice(0, expected.length)]);
      if (round % 2 === 0) assert.equal(predictions.length, tree.tokens.length + 1);
      // Its cells are exactly those of a sequence that evaluated the same tokens, and the next token the same.
      await assertCellsOf(context, ev, [...ev.tokens]);
      assert.equal((await ev.append([verdict.next], 1))[0]!.token, truth[expected.length + 1]);
    }
  });

  it('1,000 tree steps leave no stray cell: every path sequence empty, the sequence’s cells its tokens, another owner’s sequence intact', async () => {
    const context = await make({ contextSize: 256, treeNodes: 15 });
    const [ev, other] = context.evaluators as [UnifiedSequenceEvaluator, UnifiedSequenceEvaluator];
    const rand = mulberry32(13);
    const otherPrompt = prompt.slice(3, 40);
    const [otherNext] = await other.append(otherPrompt, 1);
    await ev.append(prompt, 0);
    let pending = prompt.at(-1)!;
    await ev.truncate(prompt.length - 1);
    let accepted = 0;
    const check = await reference();
    for (let step = 0; step < 1000; step++) {
      if (ev.tokens.length + 20 > ev.capacity) await ev.truncate(prompt.length - 1);
      const tree = randomTree(rand, 1 + Math.floor(rand() * 15), [...ev.tokens.slice(-4), pending]);
      const verdict = await ev.verifyTree(pending, tree);
      accepted += verdict.path.length;
      pending = verdict.next;
      // Another owner decodes between the steps now and then (its own cells only).
      if (step % 97 === 0) await other.append([otherNext!.token], 1).then(() => other.truncate(otherPrompt.length));
      // What the cells hold, now and then: the next token and its confidence are a fresh evaluation's
      // (up to the rounding of batches of other shapes).
      if (step % 125 === 124) {
        const [mine] = await ev.append([pending], 1, true);
        await ev.truncate(ev.tokens.length - 1);
        await check.truncate(0);
        const [fresh] = await check.append([...ev.tokens, pending], 1, true);
        assert.equal(mine!.token, fresh!.token, `step ${step}`);
        assert.ok(Math.abs(mine!.confidence! - fresh!.confidence!) < 1e-3, `step ${step}: confidence ${mine!.confidence} vs ${fresh!.confidence}`);
      }
    }
    assert.ok(accepted > 0, 'some nodes were accepted');
    for (const id of context.pathIds) assert.deepEqual(await context.positions(id), [-1, -1], `path sequence ${id} is empty`);
    await assertCellsOf(context, ev, [...ev.tokens]);
    await assertCellsOf(context, other, otherPrompt);
    assert.deepEqual(other.tokens, otherPrompt);
    // The other owner's next token is still its prompt's.
    assert.equal((await other.append([otherNext!.token], 1))[0]!.token, (await greedyAfter([...otherPrompt, otherNext!.token], 1))[0]);
    assert.equal(ev.treeSteps, 1000);
  });

  it('saves a sequence’s state and loads it back into another, which then decodes as the first; a broken file leaves it empty', async () => {
    const context = await make();
    const [a, b] = context.evaluators as [UnifiedSequenceEvaluator, UnifiedSequenceEvaluator];
    await a.append(prompt, 1);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-unified-'));
    try {
      const file = path.join(dir, 'state');
      assert.ok((await a.saveState(file)) > 0);
      await b.append([5, 6, 7], 1);
      await b.loadState(file);
      assert.deepEqual(b.tokens, a.tokens);
      // The second of the two decodes attends over one more cell of the shared stream (the first's,
      // masked out), and on some CPUs the attention's sums over the longer row round differently:
      // whichever decodes first reads the same, the other the same token, its confidence a few parts
      // in 10^4 apart.
      const [fromB, fromA] = [await b.append([prompt[2]!], 1, true), await a.append([prompt[2]!], 1, true)];
      assert.deepEqual(
        fromB.map((x) => x.token),
        fromA.map((x) => x.token),
      );
      assert.ok(Math.abs(fromB[0]!.confidence! - fromA[0]!.confidence!) < 1e-3, `confidence ${fromB[0]!.confidence} against ${fromA[0]!.confidence}`);
      fs.writeFileSync(path.join(dir, 'broken'), 'not a state');
      await assert.rejects(b.loadState(path.join(dir, 'broken')), /could not load|could not be read/);
      assert.deepEqual(b.tokens, []);
      assert.deepEqual(await context.positions(b.sequenceId), [-1, -1]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad input with a clear error, never crashing: trees, sequences, tokens, sizes, handles', async () => {
    const context = await make({ batchSize: 64, treeNodes: 15 });
    const ev = context.evaluators[0]!;
    await ev.append(prompt, 1);
    const length = ev.tokens.length;
    await assert.rejects(ev.verifyTree(1, { tokens: [5, 5], parents: [-1, -1] }), /repeats token 5 of a sibling/);
    await assert.rejects(ev.verifyTree(1, { tokens: [5, 6], parents: [1, -1] }), /does not come before it/);
    await assert.rejects(ev.verifyTree(1, { tokens: Array.from({ length: 16 }, (_, i) => i + 1), parents: Array.from({ length: 16 }, (_, i) => i - 1) }), /16 nodes: more than the 15/);
    await assert.rejects(ev.verifyTree(1, { tokens: [10_000_000], parents: [-1] }), /not in the vocabulary/);
    assert.equal(ev.tokens.length, length, 'a refused tree leaves the cache as it was');
    for (const id of context.pathIds) assert.deepEqual(await context.positions(id), [-1, -1]);
    await assert.rejects(
      ev.append(
        Array.from({ length: 65 }, () => 5),
        2,
      ),
      /exceed one batch/,
    );
    const { addon, handle } = context;
    const one = Int32Array.of(5);
    await assert.rejects(async () => addon.unifiedDecode(handle, one, Int32Array.of(0), Int32Array.of(1), Int32Array.of(99), Uint8Array.of(1)), /no sequence 99/);
    await assert.rejects(async () => addon.unifiedDecode(handle, one, Int32Array.of(-3), Int32Array.of(1), Int32Array.of(0), Uint8Array.of(1)), /negative position/);
    await assert.rejects(async () => addon.unifiedDecode(handle, one, Int32Array.of(0), Int32Array.of(2), Int32Array.of(0), Uint8Array.of(1)), /shorter than the counts/);
    await assert.rejects(async () => addon.unifiedDecode(handle, new Int32Array(0), new Int32Array(0), new Int32Array(0), new Int32Array(0), new Uint8Array(0)), /empty or larger/);
    // Positions llama.cpp refuses (not after the sequence's last): its error, not an abort.
    await assert.rejects(async () => addon.unifiedDecode(handle, one, Int32Array.of(3), Int32Array.of(1), Int32Array.of(0), Uint8Array.of(1)), /refused the batch/);
    assert.throws(() => addon.unifiedMemory(handle, 'remove', 500, -1, -1), /no sequence 500/);
    assert.throws(() => addon.unifiedMemory(handle, 'copy', 0, -1, -1, 400), /no sequence 400/);
    assert.throws(() => addon.unifiedMemory(handle, 'remove', 0, -5, -1), /position is -1/);
    assert.throws(() => addon.unifiedMemory(handle, 'nothing' as 'remove', 0, -1, -1), /no operation nothing/);
    assert.throws(() => addon.unifiedMemory(9999, 'positions', 0), /no such Draftline context/);
    assert.throws(() => addon.readGreedy(9999, one, 1, one, -1, false, new Int32Array(1), new Float32Array(1)), /no such Draftline context/);
    await assert.rejects(async () => addon.createUnified({}, { contextCells: 256, batchSize: 64, sequences: 2, threads: 1, flashAttention: 'auto', gpuLayers: 0 }), /not a wrapped native model/);
    // A memory operation while a decode runs is refused (the evaluator's turn keeps them apart).
    const decoding = addon.unifiedDecode(handle, one, Int32Array.of(ev.tokens.length), Int32Array.of(1), Int32Array.of(0), Uint8Array.of(1));
    let refused = false;
    try {
      addon.unifiedMemory(handle, 'positions', 0);
    } catch (error) {
      refused = /a decode is running/.test((error as Error).message);
    }
    await decoding;
    addon.unifiedMemory(handle, 'remove', 0, ev.tokens.length, -1);
    // The decode may have ended before the call: only a refusal with another reason fails.
    assert.ok(refused || addon.unifiedMemory(handle, 'positions', 0)[1] === ev.tokens.length - 1);
    await context.dispose();
    await assert.rejects(ev.append([5], 1), /disposed/);
    assert.throws(() => addon.unifiedMemory(handle, 'positions', 0), /no such Draftline context/);
    assert.equal(addon.freeUnified(handle), false);
  });

  it('with 2 threads computes on a persistent threadpool, the same tokens', async () => {
    const pooled = await make({ threads: 2 });
    assert.ok('release' in pooled.threadpool, 'error' in pooled.threadpool ? pooled.threadpool.error : '');
    const a = pooled.evaluators[0]!;
    const b = await reference();
    assert.deepEqual(await a.append(prompt, 4), await b.append(prompt, 4));
  });

  it('frees itself before the model goes, when the model is disposed first', async () => {
    const llama = await getRuntime({ gpu: 'cpu' }, 1, () => undefined);
    const own = await llama.loadModel({ modelPath: embeddedPairPaths(ROOT, 'tiny').target });
    const context = await UnifiedContext.create(own, { sequences: 1, contextSize: 256, batchSize: 64, threads: 1, flashAttention: FLASH, treeNodes: 7 });
    await context.evaluators[0]!.append(prompt, 1);
    await own.dispose();
    assert.equal(context.disposed, true);
    const loaded = loadNativeAddon();
    assert.ok('addon' in loaded);
    assert.equal(loaded.addon.freeUnified(context.handle), false);
  });
});

/** A tree of the given root paths (shared prefixes merged). */
function treeOf(branches: readonly (readonly Token[])[]): TokenTree {
  const tree: TokenTree = { tokens: [], parents: [] };
  for (const branch of branches) {
    let at = -1;
    for (const token of branch) {
      let child = tree.tokens.findIndex((t, i) => tree.parents[i] === at && t === token);
      if (child < 0) {
        tree.tokens.push(token);
        tree.parents.push(at);
        child = tree.tokens.length - 1;
      }
      at = child;
    }
  }
  return tree;
}

/** A random tree of up to `nodes` nodes over a few tokens (`likely` ones often: some get accepted). */
function randomTree(rand: () => number, nodes: number, likely: readonly Token[]): TokenTree {
  const tree: TokenTree = { tokens: [], parents: [] };
  const pool = [...likely, 11, 12, 13, 198, 220, 262];
  while (tree.tokens.length < nodes) {
    const parent = Math.floor(rand() * (tree.tokens.length + 1)) - 1;
    const token = pool[Math.floor(rand() * pool.length)]!;
    if (tree.tokens.some((t, i) => tree.parents[i] === parent && t === token)) {
      if (rand() < 0.1) break;
      continue;
    }
    tree.tokens.push(token);
    tree.parents.push(parent);
  }
  return tree;
}

/** The sequence's cells are exactly its tokens': positions 0..n−1, as many cells as a sequence that evaluated them. */
async function assertCellsOf(context: UnifiedContext, ev: UnifiedSequenceEvaluator, tokens: readonly Token[]): Promise<void> {
  assert.deepEqual(await context.positions(ev.sequenceId), tokens.length ? [0, tokens.length - 1] : [-1, -1]);
  const probe = context.pathIds[0]!;
  // One cell a token: a fresh sequence with the same tokens takes the same bytes (path ids are free between steps).
  await context.run(async () => {
    await context.addon.unifiedDecode(
      context.handle,
      Int32Array.from(tokens),
      Int32Array.from(tokens, (_, i) => i),
      new Int32Array(tokens.length).fill(1),
      new Int32Array(tokens.length).fill(probe),
      new Uint8Array(tokens.length),
    );
  });
  const [mine, fresh] = [await context.stateBytes(ev.sequenceId), await context.stateBytes(probe)];
  await context.run(async () => void context.remove(probe, -1, -1));
  assert.equal(mine, fresh, `${tokens.length} tokens: ${mine} bytes of state, a fresh sequence ${fresh}`);
}
