// Survival curves as the copy's acceptance models count them (speculation/survivalCounts.ts): the
// Kaplan-Meier counts, their pooling into bins, and the expected tokens read from them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expectedTokensFromSurvival, pooledBins, SurvivalCounts } from '../../src/speculation/survivalCounts';

describe('survival counts', () => {
  it('pool indices from `from` on in bins that widen with the index, and none without pooling', () => {
    assert.deepEqual([...pooledBins(20, { from: 4, growth: 1.5 })], [0, 1, 2, 3, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 8]);
    assert.deepEqual([...pooledBins(5)], [0, 1, 2, 3, 4]);
    // Every bin is at least one index wide, also from 0.
    assert.deepEqual([...pooledBins(6, { from: 0, growth: 1.5 })], [0, 1, 2, 3, 4, 4]);
  });

  it('a pooled bin starts from the mean of its prior and moves as one; indices apart stay apart', () => {
    const pooled = new SurvivalCounts(20, 4, (i) => (i < 6 ? 0.1 : 0.3), { from: 4, growth: 1.5 });
    const single = new SurvivalCounts(20, 4, (i) => (i < 6 ? 0.1 : 0.3));
    assert.ok(Math.abs(pooled.rate(9) - 0.7) < 1e-12 && Math.abs(pooled.rate(4) - 0.9) < 1e-12);
    for (let i = 0; i < 10; i++) {
      pooled.count(10, true);
      single.count(10, true);
    }
    assert.equal(pooled.rate(9), pooled.rate(12));
    const near = (a: number, b: number) => Math.abs(a - b) < 1e-12;
    assert.ok(pooled.rate(9) < 0.7 && near(pooled.rate(13), 0.7));
    assert.ok(near(single.rate(9), 0.7) && near(single.rate(12), 0.7) && single.rate(10) < 0.7);
    // Past the last index: the last count.
    assert.equal(pooled.rate(500), pooled.rate(19));
  });

  it("expected tokens: the target's own, and each guess weighed by its chance of surviving", () => {
    const out = expectedTokensFromSurvival(3, () => 0.5, 0.8);
    assert.deepEqual([...out], [1, 1 + 0.8 * 0.5, 1 + 0.8 * 0.75, 1 + 0.8 * 0.875]);
  });
});
