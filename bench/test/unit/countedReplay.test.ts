// The counted next-edit replay's headroom (bench/countedReplay.ts countKnownLengths): lengths chosen
// knowing the output bound what a policy choosing them reaches with the same proposers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CountedReplay, countKnownLengths, LENGTH_HEADROOM_VARIANTS, OWN_REPLAY_VARIANTS, perCaseRatio, shuffled } from '../../countedReplay';
import { type CountedCase, countReplay, h100VerifyCost, replayPerfectModel, CountingTarget } from '../../editReplay';
import { stepKind } from '../../lengthHeadroom';
import { chainOffer } from '../../../src/speculation/proposer';
import { WindowCopyProposer } from '../../../src/speculation/windowCopyProposer';

/** A window of 200 distinct tokens, and its rewrite with a few tokens inserted after `at`, then an end token. */
function editedCase(at: number, inserted: number[]): CountedCase {
  const copySource = Array.from({ length: 200 }, (_, i) => 100 + i);
  const expected = [...copySource.slice(0, at), ...inserted, ...copySource.slice(at), 7];
  return { prompt: [1, 2, 3], expected, copySource, copyCursor: at };
}

describe('counted replay: lengths known', () => {
  it('verifies each copy run in one step and the inserted tokens one a step, and bounds the policy', async () => {
    const c = editedCase(90, [50, 51, 52]);
    const copy = (x: CountedCase) => [new WindowCopyProposer(x.copySource, x.prompt.length, { cursor: x.copyCursor, offerLength: 1000 })];
    // Six evaluations: the prompt's (the first token); 89 copied and the first inserted token; the
    // other two inserted and the token after them, one a step (no copy follows a token the window
    // lacks); the rest of the copy and the end token.
    const flat = countKnownLengths([c], () => 1, copy, 1000);
    assert.equal(flat.tokensPerEvaluation, c.expected.length / 6);
    const known = countKnownLengths([c], h100VerifyCost, copy, 1000);
    const policy = await countReplay([c], h100VerifyCost, {});
    assert.ok(known.speedup >= policy.copy, `known ${known.speedup} against the policy's ${policy.copy}`);
    assert.ok(known.speedup > 1);
  });
});

describe('counted replay: how sure', () => {
  it('shuffles the cases the same way for a seed, and differently for another, losing none', () => {
    const items = Array.from({ length: 50 }, (_, i) => i);
    const a = shuffled(items, 1);
    assert.deepEqual(shuffled(items, 1), a);
    assert.notDeepEqual(a, items);
    assert.notDeepEqual(shuffled(items, 2), a);
    assert.deepEqual(
      [...a].sort((x, y) => x - y),
      items,
    );
  });

  it('gives the geometric mean over the cases beside the median: over one case, its ratio', async () => {
    const one = await countReplay([editedCase(90, [50, 51, 52])], h100VerifyCost, {});
    assert.ok(Math.abs(one.geometricMean.copy - one.copy) < 1e-9, `${one.geometricMean.copy} against ${one.copy}`);
    const three = await countReplay([editedCase(20, [50]), editedCase(90, [50, 51, 52]), editedCase(150, [60, 61])], h100VerifyCost, {});
    assert.ok(three.geometricMean.copy > 1);
  });

  it('gives the best of ours over the better ported rival case by case, each chosen by its median', () => {
    // By their medians: ours 'copy + suffix (ours)' beats the copy, and ngram-simple beats ngram-mod.
    const counted = { table: 't', cases: 3, copy: 4, rivals: { 'copy + suffix (ours)': 6, 'ngram-simple': 3, 'ngram-mod': 2 }, tokensPerEvaluation: 1 } as CountedReplay;
    const perCase = { copy: [4, 4, 4], rivals: { 'copy + suffix (ours)': [6, 8, 2], 'ngram-simple': [3, 2, 2], 'ngram-mod': [1, 1, 1] } };
    // Ratios 2, 4, 1: median 2, geometric mean 2.
    const r = perCaseRatio(counted, perCase);
    assert.equal(r.median, 2);
    assert.ok(Math.abs(r.geometricMean - 2) < 1e-9);
  });
});

describe('counted replay: where the length choice loses', () => {
  it("tells the kinds of step apart by source and by the copy offer's phase", () => {
    const copy = (phase: object) => chainOffer([1, 2], { inRun: false, agreement: 1, ...phase });
    assert.equal(stepKind('copy', copy({ cursorDistance: 3 })), 'cursor');
    assert.equal(stepKind('copy', copy({ inRun: true })), 'run');
    assert.equal(stepKind('copy', copy({})), 'resync');
    assert.equal(stepKind('suffix', chainOffer([1])), 'suffix');
    assert.equal(stepKind('draft', chainOffer([1])), null);
  });

  it('with every length known verifies no guess the output rejects, and is no slower than the policy', async () => {
    const c = editedCase(90, [50, 51, 52]);
    const target = new CountingTarget(h100VerifyCost);
    const replay = (rivals: Parameters<typeof replayPerfectModel>[0]['rivals']) =>
      replayPerfectModel({ target, prompt: c.prompt, expected: c.expected, copySource: c.copySource, copyCursor: c.copyCursor, rivals, now: () => target.clock });
    const r = await replay({ all: LENGTH_HEADROOM_VARIANTS.all() });
    assert.equal(r.rivals.all!.proposedTokens, r.rivals.all!.acceptedTokens);
    assert.ok(r.rivals.all!.acceptedTokens > c.expected.length / 2);
    const counted = await countReplay([c, editedCase(20, [50]), editedCase(150, [60, 61])], h100VerifyCost, {}, { ours: OWN_REPLAY_VARIANTS['copy + suffix (ours)']!, ...LENGTH_HEADROOM_VARIANTS });
    for (const kind of ['cursor', 'resync', 'run', 'suffix', 'all']) assert.ok(counted.rivals[kind]! >= counted.rivals.ours! - 1e-9, `${kind}: ${counted.rivals[kind]} against ${counted.rivals.ours}`);
    assert.ok(counted.rivals.all! > counted.rivals.ours!, `all: ${counted.rivals.all} against ${counted.rivals.ours}`);
  });
});
