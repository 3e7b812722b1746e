// Where alternatives branch off a greedy completion (issue #32, src/speculation/branchPoint.ts): the
// position where the target was least certain, inside the completion, with a usable other token.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseBranchPoint } from '../../src/speculation/branchPoint';
import type { RankedNext } from '../../src/speculation/greedyEvaluator';

const END = 0;
const rules = { isEndToken: (t: number) => t === END };
const at = (tokens: number[], margin: number): RankedNext => ({ tokens, margin });

describe('chooseBranchPoint', () => {
  it('branches where the top-two margin is smallest, offering the other tokens most likely first', () => {
    const greedy = [10, 11, 12, 13];
    const ranked = [at([10, 20, 30], 3), at([11, 21, 31], 0.4), at([12, 22, 32], 1.5), at([13, 23, 33], 0.9)];
    assert.deepEqual(chooseBranchPoint(greedy, ranked, rules), { tokenIndex: 1, margin: 0.4, candidates: [21, 31] });
  });

  it('takes the earliest of equal margins (the most text left to differ)', () => {
    const greedy = [10, 11, 12];
    const ranked = [at([10, 20], 2), at([11, 21], 0.5), at([12, 22], 0.5)];
    assert.equal(chooseBranchPoint(greedy, ranked, rules)?.tokenIndex, 1);
  });

  it('ignores positions after the completion (the ranked list may be longer: the stop rules had ended it)', () => {
    const greedy = [10, 11];
    const ranked = [at([10, 20], 2), at([11, 21], 1), at([99, 98], 0.01)];
    assert.deepEqual(chooseBranchPoint(greedy, ranked, rules), { tokenIndex: 1, margin: 1, candidates: [21] });
  });

  it('skips end tokens and tokens the rules refuse; a position left without candidates is not a branch point', () => {
    const greedy = [10, 11, 12];
    // Position 1's only other token ends generation (a shorter greedy completion, no alternative).
    const ranked = [at([10, 20, 30], 2), at([11, END], 0.1), at([12, 22, 32], 0.7)];
    assert.deepEqual(chooseBranchPoint(greedy, ranked, rules), { tokenIndex: 2, margin: 0.7, candidates: [22, 32] });
    // Refused by the caller (e.g. a token that rewrites the blank the user typed).
    const refuse22 = { ...rules, allows: (_position: number, token: number) => token !== 22 };
    assert.deepEqual(chooseBranchPoint(greedy, ranked, refuse22), { tokenIndex: 2, margin: 0.7, candidates: [32] });
    const refuseAt2 = { ...rules, allows: (position: number) => position !== 2 };
    assert.deepEqual(chooseBranchPoint(greedy, ranked, refuseAt2), { tokenIndex: 0, margin: 2, candidates: [20, 30] });
  });

  it('excludes the greedy token by identity: where batched numerics ranked another first, that one is a candidate', () => {
    const greedy = [10, 11];
    const ranked = [at([10, 20], 3), at([21, 11, 31], 0.001)];
    assert.deepEqual(chooseBranchPoint(greedy, ranked, rules), { tokenIndex: 1, margin: 0.001, candidates: [21, 31] });
  });

  it('has no branch point for an empty completion or a one-token vocabulary; a one-token completion branches at its token', () => {
    assert.equal(chooseBranchPoint([], [], rules), null);
    assert.equal(chooseBranchPoint([10, 10], [at([10], Number.POSITIVE_INFINITY), at([10], Number.POSITIVE_INFINITY)], rules), null);
    assert.deepEqual(chooseBranchPoint([10], [at([10, 20], 5)], rules), { tokenIndex: 0, margin: 5, candidates: [20] });
  });

  it('refuses fewer ranked positions than greedy tokens (a caller bug, not a choice)', () => {
    assert.throws(() => chooseBranchPoint([1, 2], [at([1, 3], 1)], rules), /1 ranked positions for 2 greedy tokens/);
  });
});
