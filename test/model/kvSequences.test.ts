// More prompt states than KV sequences (issue 40): the least recently used owner's sequence is taken,
// its cells saved first and loaded back when its prompt comes again, and every request still
// decodes exactly what its prompt decodes alone. Model-backed (the v3 pair, two sequences); the
// saved states' bookkeeping is also driven with fake sequences.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import { MIN_RESTORE_GAIN, MIN_SAVED_TOKENS, SavedPromptStates, type StatefulSequence } from '../../src/inference/savedPromptStates';
import { embeddedPairPaths } from '../../src/models/embedded';
import type { CompletionRequest, LocalCompletionResult } from '../../src/shared/completion';
import { batchDrift } from '../../testbed/batchDrift';

const ROOT = path.resolve(__dirname, '../..');

/** Three files' worth of prompts (each well over MIN_SAVED_TOKENS), one per window. */
function windowPrompts(): { owner: string; request: CompletionRequest }[] {
  const source = (file: string, at: number) => fs.readFileSync(path.join(ROOT, file), 'utf8').slice(at, at + 900);
  return [
    ['window 1 · completion', source('src/speculation/speculativeDecoder.ts', 2000)],
    ['window 2 · completion', source('src/worker/workerClient.ts', 3000)],
    ['window 3 · completion', source('src/engine/completionEngine.ts', 4000)],
  ].map(([owner, prefix]) => ({ owner: owner!, request: { prefix: prefix!, suffix: '\n}\n', maxTokens: 24, mode: 'hybrid' } }));
}

// On node-llama-cpp's context, and on the target's unified context (where it verifies token trees).
for (const trees of ['off', 'on'] as const)
  describe(`three windows on two KV sequences (the v3 pair)${trees === 'on' ? ', the target on its unified KV context' : ''}`, () => {
    let session: InferenceSession;
    let drift = 0;
    const logs: string[] = [];
    before(async () => {
      const pair = embeddedPairPaths(ROOT);
      session = await InferenceSession.load(
        { targetModel: pair.target, draftModel: pair.draft, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 1024, kvSequences: 2, treeVerification: trees },
        DEFAULT_SPECULATION,
        (_level, message) => logs.push(message),
      );
      assert.equal(session.info.treeVerification?.used, trees === 'on', JSON.stringify(session.info.treeVerification));
      drift = await batchDrift(session);
    });
    after(() => session?.dispose());

    it('the least recently used window loses its sequence, gets its saved state back, and every answer equals its prompt decoded alone', async () => {
      assert.equal(session.info.kvSequences!.count, 2);
      const windows = windowPrompts();
      const alone: LocalCompletionResult[] = [];
      for (const w of windows) {
        await session.resetCaches();
        alone.push(await session.complete({ ...w.request, mode: 'plain' }));
      }
      session.releaseOwners(() => true);
      await session.resetCaches();
      // Round 1: window 3 takes window 1's sequence (the least recently used), saving it first.
      // Round 2: window 1 takes window 2's and loads its own saved state back; and so on.
      for (const round of [1, 2]) {
        for (const [i, w] of windows.entries()) {
          const r = await session.complete(w.request, undefined, { owner: w.owner });
          // Exact where llama.cpp computes a position the same in any batch; else up to the first near-tie.
          if (drift === 0) assert.deepEqual(r.tokens, alone[i]!.tokens, `${w.owner}, round ${round}`);
          else assert.deepEqual(r.tokens.slice(0, 4), alone[i]!.tokens.slice(0, 4), `${w.owner}, round ${round}`);
          if (round === 2) {
            const prompt = session.promptFor(w.request);
            assert.equal(r.stats.reusedPromptTokens, prompt.length - 1, `${w.owner}'s prompt came back whole from its saved state`);
          }
        }
      }
      const { evictions, saved } = session.sequences();
      assert.equal(evictions, 4);
      assert.equal(saved.restored, 3);
      assert.ok(
        logs.some((m) => /KV sequence \d \(\d+ tokens of window 1 · completion\) given to window 3 · completion: all 2 sequences were in use/.test(m)),
        logs.join('\n'),
      );
      assert.ok(
        logs.some((m) => /KV state of window 1 · completion loaded back/.test(m)),
        logs.join('\n'),
      );
      session.releaseOwners(() => true);
      assert.equal(session.sequences().saved.count, 0, "a window's saved state goes with the window");
    });
  });

describe('saved prompt states (fake sequences)', () => {
  const sequence = (tokens: number[], bytes = 100): StatefulSequence & { loaded: string[]; tokens: number[] } => {
    const s = {
      tokens,
      loaded: [] as string[],
      saveState: async (file: string) => {
        fs.writeFileSync(file, 'x');
        return bytes;
      },
      loadState: async (file: string) => {
        s.loaded.push(file);
      },
    };
    return s;
  };
  const long = (from: number, n = MIN_SAVED_TOKENS) => Array.from({ length: n }, (_, i) => from + i);

  it('saves only prompts worth a file, loads one back only when it holds more of the prompt, and keeps within its bytes', async () => {
    const logs: string[] = [];
    const saved = new SavedPromptStates(250, (m) => logs.push(m));
    try {
      await saved.save('short', sequence([1, 2, 3]));
      assert.equal(saved.count, 0);
      await saved.save('a', sequence(long(0)));
      await saved.save('b', sequence(long(1000)));
      assert.equal(saved.count, 2);
      // A third goes over 250 bytes: the least recently saved (a) goes.
      await saved.save('c', sequence(long(2000)));
      assert.equal(saved.count, 2);
      assert.equal(await saved.restore('a', long(0), sequence([])), false);
      // b's state holds all of its prompt; a sequence that already shares it gains too little.
      const target = sequence([]);
      assert.equal(await saved.restore('b', long(1000), target), true);
      assert.equal(target.loaded.length, 1);
      assert.equal(await saved.restore('b', long(1000), sequence(long(1000, MIN_SAVED_TOKENS - MIN_RESTORE_GAIN + 1))), false);
      assert.equal(saved.restored, 1);
      saved.release((owner) => owner === 'b');
      assert.equal(saved.count, 1);
    } finally {
      saved.dispose();
    }
    assert.deepEqual(logs, []);
  });

  it('a failed save or load is logged and changes nothing else', async () => {
    const logs: string[] = [];
    const saved = new SavedPromptStates(1000, (m) => logs.push(m));
    try {
      const failing = { ...sequence(long(0)), saveState: async () => Promise.reject(new Error('disk full')) };
      await saved.save('a', failing);
      assert.equal(saved.count, 0);
      await saved.save('b', sequence(long(0)));
      const broken = { ...sequence([]), loadState: async () => Promise.reject(new Error('bad file')) };
      assert.equal(await saved.restore('b', long(0), broken), false);
      assert.equal(saved.count, 0, 'a state that failed to load is dropped');
      assert.equal(logs.length, 2);
      assert.match(logs[0]!, /saving the KV state of a failed \(disk full\)/);
      assert.match(logs[1]!, /loading the saved KV state of b failed \(bad file\)/);
    } finally {
      saved.dispose();
    }
  });
});
