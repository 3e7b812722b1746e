// The KV shift (speculation/greedyEvaluator.ts planShift, LlamaSequenceEvaluator.removeRange): a cached
// prompt whose head moved keeps its cached state, moved back into place. In a one-layer model each
// cached key and value depends only on its own token and position, so there a shifted cache decodes
// exactly as a fresh evaluation of the shorter prompt (up to the rounding of re-rotated keys); deeper
// models keep what the dropped tokens contributed, which the bench's typing regime measures. The
// lossless suite (test/support/losslessSuite.ts) checks that every mode equals plain on a shifted cache.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import type { GreedyEvaluator } from '../../src/speculation/greedyEvaluator';
import { ensureTestModel } from '../../testbed/models';
import { promptCases } from '../support/prompts';

/** Re-rotated keys are stored again in F16: their rounding moves a logit by about this much at most. */
const ROUNDING_TIE = 1e-2;

const load = (target: string, shiftPromptCache = true, treeVerification: 'on' | 'off' = 'off') =>
  InferenceSession.load({ targetModel: target, draftModel: '', gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 512, shiftPromptCache, treeVerification }, DEFAULT_SPECULATION, () => undefined);

/** `count` greedy tokens after `first`, one evaluation each. */
async function greedy(evaluator: GreedyEvaluator, first: number, count: number): Promise<number[]> {
  const out = [first];
  for (let i = 0; i < count; i++) out.push((await evaluator.append([out.at(-1)!], 1))[0]!.token);
  return out;
}

/** Prompts of 120+ tokens (a case's text twice, within half the sequence). */
function prompts(session: InferenceSession, capacity: number): number[][] {
  return promptCases(24, 41)
    .map((c) => session.vocabulary.tokenize(`${c.prefix}${c.suffix}${c.prefix}`).slice(0, Math.floor(capacity / 2)))
    .filter((t) => t.length >= 120);
}

// On node-llama-cpp's context, and on the target's unified context (where it verifies token trees).
for (const trees of ['off', 'on'] as const)
  describe(`KV shift: a cached prompt whose head moved${trees === 'on' ? ", on the target's unified KV context" : ''}`, () => {
    let session: InferenceSession;
    let evaluator: GreedyEvaluator;
    let model: string;
    before(async () => {
      model = await ensureTestModel('shift-one-layer', { seed: 5, dModel: 128, nLayers: 1, nHeads: 4, ffn: 256, contextLength: 512 });
      session = await load(model, true, trees);
      assert.equal(session.info.treeVerification?.used, trees === 'on', JSON.stringify(session.info.treeVerification));
      evaluator = session.target.evaluator;
    });
    after(() => session?.dispose());

    it('on a one-layer model decodes as a fresh evaluation of the shorter prompt, up to the rounding of re-rotated keys', async () => {
      assert.ok(evaluator.removeRange, 'llama models may shift');
      let identical = 0;
      let cases = 0;
      for (const tokens of prompts(session, evaluator.capacity)) {
        const bos = [tokens[0]!];
        const drop = 1 + Math.floor(tokens.length / 3);
        const kept = [...bos, ...tokens.slice(drop)];
        await evaluator.truncate(0);
        await evaluator.append([...bos, ...tokens.slice(1)], 0);
        await evaluator.removeRange!(1, drop);
        assert.deepEqual(evaluator.tokens, kept, 'the cache holds the shorter prompt');
        await evaluator.truncate(kept.length - 1);
        const shifted = await greedy(evaluator, (await evaluator.append(kept.slice(-1), 1))[0]!.token, 16);
        await evaluator.truncate(0);
        const fresh = await greedy(evaluator, (await evaluator.append(kept, 1))[0]!.token, 16);
        cases++;
        const at = shifted.findIndex((t, i) => t !== fresh[i]);
        if (at < 0) {
          identical++;
          continue;
        }
        await evaluator.truncate(0);
        const [ranked] = await evaluator.appendRanked!([...kept, ...fresh.slice(0, at)], 1, 2);
        assert.ok(ranked!.margin < ROUNDING_TIE, `diverged at token ${at} where the fresh evaluation's top two are ${ranked!.margin} apart`);
      }
      assert.ok(cases >= 8 && identical >= cases * 0.6, `${identical} of ${cases} identical`);
    });

    it('leaves the sequence and the cache mirror in step after many shifts', async () => {
      const [tokens] = prompts(session, evaluator.capacity);
      await evaluator.truncate(0);
      await evaluator.append(tokens!, 0);
      const expected = [...tokens!];
      for (let i = 0; expected.length > 8; i++) {
        const start = 1 + (i % 3);
        const end = Math.min(expected.length, start + 1 + (i % 5));
        await evaluator.removeRange!(start, end);
        expected.splice(start, end - start);
        assert.deepEqual(evaluator.tokens, expected);
        // A decode after the shift must be accepted at the next position.
        await evaluator.append([expected.at(-1)!], 1);
        expected.push(expected.at(-1)!);
      }
      await evaluator.truncate(0);
    });

    it('a completion reports the shifted tokens, and none with the setting off', async () => {
      const lines = Array.from({ length: 26 }, (_, i) => `  v${i} = f(${i});`);
      const request = (from: number) => ({ prefix: `${lines.slice(from).join('\n')}\n  return`, prefixLine: from, suffix: '\n}\n', maxTokens: 4, mode: 'plain' as const });
      await session.complete(request(0));
      const moved = await session.complete(request(16));
      assert.ok((moved.stats.shiftedPromptTokens ?? 0) > 32, `shifted ${moved.stats.shiftedPromptTokens}`);
      assert.ok(moved.stats.promptTokensEvaluated! < 8, `evaluated ${moved.stats.promptTokensEvaluated}`);
      const exact = await load(model, false, trees);
      try {
        assert.equal(exact.target.evaluator.removeRange, undefined);
        await exact.complete(request(0));
        const again = await exact.complete(request(16));
        assert.equal(again.stats.shiftedPromptTokens, undefined);
        assert.ok(again.stats.promptTokensEvaluated! > 40, `evaluated ${again.stats.promptTokensEvaluated}`);
      } finally {
        await exact.dispose();
      }
    });
  });
