// Where LlamaSequenceEvaluator's confidences come from on the paths that ask node-llama-cpp for them
// (src/llama/llamaSequenceEvaluator.ts, ConfidenceSource), on stand-ins for the library's two
// behaviours: 3.22's sampleToken / controlledEvaluate report `totalLogitWeight` (Σ exp(logit − max),
// no sort); 3.21's ignore that option and have only `confidence` (the same probability, after a sort
// of the whole vocabulary). Which one a version offers must be found by asking, not by its number,
// and a version with totalLogitWeight must never be made to sort after the first read. No model: the
// real library is in sequenceEvaluator.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LlamaContextSequence, LlamaModel } from '../../src/llama/llamaTypes';
import { LlamaSequenceEvaluator } from '../../src/llama/llamaSequenceEvaluator';

type Style = '3.21' | '3.22';

/** A position's greedy token and Σ exp(logit − max), made up from its batch output index. */
const tokenAt = (batchIndex: number) => 100 + batchIndex;
const weightAt = (batchIndex: number) => 2 + batchIndex / 4;
/** 3.21's confidence: the same probability, computed in float. */
const sortedConfidenceAt = (batchIndex: number) => Math.fround(1 / Math.fround(weightAt(batchIndex)));

/** The native binding's sampleToken and controlledEvaluate as each version answers, counting the sorts asked for. */
function fakeLibrary(style: Style) {
  const calls = { sampleToken: 0, sorts: 0, controlledEvaluate: [] as object[] };
  let next = 0;
  const answer = (batchIndex: number, confidence: boolean, totalLogitWeight: boolean) => ({
    token: tokenAt(batchIndex),
    ...(confidence ? { confidence: sortedConfidenceAt(batchIndex) } : {}),
    ...(totalLogitWeight && style === '3.22' ? { totalLogitWeight: weightAt(batchIndex) } : {}),
  });
  const nativeContext = {
    async sampleToken(batchIndex: number, _sampler: unknown, probabilities?: boolean, confidence?: boolean, _logits?: boolean, totalLogitWeight?: boolean) {
      calls.sampleToken++;
      if (probabilities || confidence) calls.sorts++;
      if (typeof probabilities !== 'boolean') return tokenAt(batchIndex);
      const a = answer(batchIndex, !!confidence, !!totalLogitWeight);
      return style === '3.22' ? [a.token, undefined, a.confidence, undefined, a.totalLogitWeight] : [a.token, undefined, a.confidence];
    },
  };
  const sequence = {
    contextSize: 512,
    context: { batchSize: 512, contextSize: 512, totalSequences: 1 },
    get nextTokenIndex() {
      return next;
    },
    async _decodeTokens(tokens: number[], logits: boolean[], _p: number, _m: unknown, _s: unknown, mapper: (batchIndex: number, tokenIndex: number) => unknown) {
      let batchIndex = 0;
      for (let i = 0; i < logits.length; i++) if (logits[i]) mapper(batchIndex++, i);
      next += tokens.length;
    },
    _resolveSamplerConfig: () => ({}),
    _tokenMeter: {},
    _contextShift: {},
    _context: { _ctx: nativeContext },
    async controlledEvaluate(items: (number | [number, { generateNext: { confidence?: boolean; totalLogitWeight?: boolean } }])[]) {
      let batchIndex = 0;
      const out = items.map((item) => {
        if (!Array.isArray(item)) return undefined;
        const asked = item[1].generateNext;
        calls.controlledEvaluate.push(asked);
        if (asked.confidence) calls.sorts++;
        return { next: answer(batchIndex++, !!asked.confidence, !!asked.totalLogitWeight) };
      });
      next += items.length;
      return out;
    },
  };
  const model = {
    _model: {},
    _llama: {
      _bindings: {
        AddonSampler: class {
          applyConfig() {}
          dispose() {}
        },
      },
    },
  };
  return { sequence: sequence as unknown as LlamaContextSequence, model: model as unknown as LlamaModel, calls };
}

describe('LlamaSequenceEvaluator: confidences from node-llama-cpp with and without totalLogitWeight', () => {
  it('direct path, a library with totalLogitWeight (3.22): 1 / the weight, never a sort', async () => {
    const { sequence, model, calls } = fakeLibrary('3.22');
    const evaluator = new LlamaSequenceEvaluator(sequence, model, 'direct');
    assert.equal(evaluator.confidenceSource, undefined);
    const first = await evaluator.append([1, 2, 3], 3, true);
    const second = await evaluator.append([4, 5], 2, true);
    assert.deepEqual(
      first,
      [0, 1, 2].map((i) => ({ token: tokenAt(i), confidence: 1 / weightAt(i) })),
    );
    assert.deepEqual(
      second,
      [0, 1].map((i) => ({ token: tokenAt(i), confidence: 1 / weightAt(i) })),
    );
    assert.equal(calls.sorts, 0);
    assert.equal(calls.sampleToken, 5);
    assert.equal(evaluator.confidenceSource, 'totalLogitWeight');
  });

  it("direct path, a library without it (3.21): the library's confidence, found out once", async () => {
    const { sequence, model, calls } = fakeLibrary('3.21');
    const evaluator = new LlamaSequenceEvaluator(sequence, model, 'direct');
    // Without confidences nothing is asked for, nothing learnt.
    assert.deepEqual(await evaluator.append([1, 2], 2), [{ token: tokenAt(0) }, { token: tokenAt(1) }]);
    assert.equal(evaluator.confidenceSource, undefined);
    const first = await evaluator.append([3, 4, 5], 3, true);
    const second = await evaluator.append([6, 7], 2, true);
    assert.deepEqual(
      first,
      [0, 1, 2].map((i) => ({ token: tokenAt(i), confidence: sortedConfidenceAt(i) })),
    );
    assert.deepEqual(
      second,
      [0, 1].map((i) => ({ token: tokenAt(i), confidence: sortedConfidenceAt(i) })),
    );
    // 2 plain reads, then the first position twice (asked for the weight, then for the confidence), then one read each.
    assert.equal(calls.sampleToken, 2 + 1 + 5);
    assert.equal(calls.sorts, 5);
    assert.equal(evaluator.confidenceSource, 'confidence');
  });

  for (const style of ['3.21', '3.22'] as const)
    it(`library path (${style}): asks for both once, then only for what the library reports`, async () => {
      const { sequence, calls } = fakeLibrary(style);
      const evaluator = new LlamaSequenceEvaluator(sequence, undefined, 'library');
      const reads = [];
      for (let step = 0; step < 3; step++) reads.push(await evaluator.append([1, 2], 2, true));
      await evaluator.append([3], 1);
      const expected = (i: number) => ({ token: tokenAt(i), confidence: style === '3.22' ? 1 / weightAt(i) : sortedConfidenceAt(i) });
      for (const read of reads) assert.deepEqual(read, [expected(0), expected(1)]);
      const asked = calls.controlledEvaluate.map((g) => Object.keys(g).filter((k) => k === 'confidence' || k === 'totalLogitWeight'));
      const thenOnly = style === '3.22' ? ['totalLogitWeight'] : ['confidence'];
      assert.deepEqual(asked, [['totalLogitWeight', 'confidence'], ['totalLogitWeight', 'confidence'], thenOnly, thenOnly, thenOnly, thenOnly, []]);
      assert.equal(evaluator.confidenceSource, style === '3.22' ? 'totalLogitWeight' : 'confidence');
    });
});
