// The window copy before the output's first edit, weighed by where it lies from the editor's cursor
// (speculation/cursorAcceptance.ts): what the curve learns, the offers that carry the distance, and
// the lengths an adaptive policy verifies from it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Token } from '../../src/shared/decoding';
import type { SpeculationSettings } from '../../src/shared/settings';
import type { CopyAcceptanceModel, CopyOffer } from '../../src/speculation/copyAcceptance';
import { CursorAcceptance } from '../../src/speculation/cursorAcceptance';
import { SpeculationPolicy } from '../../src/speculation/policy';
import { WindowCopyProposer } from '../../src/speculation/windowCopyProposer';
import { LinearCosts } from '../support/gpuLikeCosts';

const PROMPT: Token[] = [900, 901, 902];
const SOURCE: Token[] = Array.from({ length: 200 }, (_, i) => 10 + i);
const LONG_SOURCE: Token[] = Array.from({ length: 300 }, (_, i) => 10 + i);

const ADAPTIVE: SpeculationSettings = { maxProposal: 8, ngramMinMatch: 2, ngramMaxMatch: 6, draftMinConfidence: 0, adaptive: true, lookahead: false };

describe('cursor acceptance', () => {
  it('learns where edits come: the copy before the cursor stays sure, the tokens where edits were seen do not', () => {
    const curve = new CursorAcceptance();
    const priorAt3 = curve.rate(3);
    // 200 windows, each copied from 40 tokens before the cursor and edited 3 tokens after it.
    for (let i = 0; i < 200; i++) curve.record(-40, 60, 43);
    assert.ok(curve.rate(-10) > 0.999, `before the cursor ${curve.rate(-10)}`);
    assert.ok(curve.rate(3) < 0.2 && curve.rate(3) < priorAt3, `at 3 past it ${curve.rate(3)}`);
    assert.ok(curve.rate(2) > 0.99, `at 2 past it ${curve.rate(2)}`);
    // Expected tokens: every token up to the edit, hardly any past it.
    const expected = curve.expectedTokensUpTo(60, -40);
    assert.ok(Math.abs(expected[40]! - 41) < 0.2, `40 sure tokens: ${expected[40]}`);
    assert.ok(expected[60]! - expected[43]! < 1, `past the edit: ${expected[60]! - expected[43]!}`);
  });

  it('pools far distances: edits seen at one distance weigh on its stretch, the first few distances stay apart', () => {
    const curve = new CursorAcceptance(1);
    // Two windows edited 89 tokens past the cursor, among twenty copied whole far beyond it.
    for (let i = 0; i < 20; i++) curve.record(-40, 250, 250);
    for (let i = 0; i < 2; i++) curve.record(60, 64, 29);
    // The stretch around 89 shares one rate (no spike at 89 alone), farther ones are untouched.
    assert.equal(curve.rate(89), curve.rate(70));
    assert.ok(curve.rate(89) > 0.99, `at 89 ${curve.rate(89)}`);
    assert.ok(curve.rate(150) > curve.rate(89));
    // Near the cursor, each distance keeps its own count: edits at 1 leave 0 and 2 as they were.
    const near = new CursorAcceptance(1);
    for (let i = 0; i < 20; i++) near.record(-10, 20, 11);
    assert.ok(near.rate(1) < 0.2, `at 1 ${near.rate(1)}`);
    assert.ok(near.rate(0) > new CursorAcceptance(1).rate(0), `at 0 ${near.rate(0)}`);
    assert.equal(near.rate(2), new CursorAcceptance(1).rate(2));
  });

  it('a proposal rejected on its first token counts that token wrong, and one cut short counts nothing wrong', () => {
    const curve = new CursorAcceptance(1);
    const before = curve.rate(0);
    curve.record(0, 8, 0);
    assert.ok(curve.rate(0) < before);
    const at7 = curve.rate(7);
    curve.record(0, 8, 8);
    assert.ok(curve.rate(7) > at7);
  });
});

describe('window copy offers and the cursor', () => {
  it('say how far from the cursor they start until the output departs from the window, and again in a new decode', () => {
    const copy = new WindowCopyProposer(SOURCE, PROMPT.length, { cursor: 50 });
    assert.equal(copy.offer([...PROMPT, 10], 64)?.cursorDistance, 1 - 50);
    assert.equal(copy.offer([...PROMPT, ...SOURCE.slice(0, 30)], 64)?.cursorDistance, 30 - 50);
    copy.record(29, 29);
    // The output departs (an inserted token), then comes back: no distance any more.
    const offer = copy.offer([...PROMPT, ...SOURCE.slice(0, 30), 7, ...SOURCE.slice(30, 32)], 64);
    assert.deepEqual(offer?.tokens.slice(0, 2), SOURCE.slice(32, 34));
    assert.equal(offer?.cursorDistance, undefined);
    // A new decode on the same proposer starts over.
    assert.equal(copy.offer([...PROMPT, 10], 64)?.cursorDistance, -49);
    // Without a cursor, never.
    assert.equal(new WindowCopyProposer(SOURCE, PROMPT.length).offer([...PROMPT, 10], 64)?.cursorDistance, undefined);
  });

  it('an adaptive policy verifies the copy up to the cursor in one step where a batch costs little, and not far past it once edits came there', () => {
    const policy = new SpeculationPolicy(ADAPTIVE, new LinearCosts(0.06));
    const copy = new WindowCopyProposer(SOURCE, PROMPT.length, { cursor: 120, offerLength: 128 });
    policy.register(copy);
    const model = policy.model('copy') as CopyAcceptanceModel;
    const start = copy.offer([...PROMPT, 10], 128) as CopyOffer;
    const first = policy.bestLength('copy', start.tokens.length, start);
    assert.ok(first >= 119, `the first step verifies ${first} of the 119 tokens before the cursor`);
    // Windows edited right at the cursor: from just before it, a short step.
    for (let i = 0; i < 100; i++) model.record({ ...start, cursorDistance: -2 }, 10, 2);
    const near = copy.offer([...PROMPT, ...SOURCE.slice(0, 118)], 128) as CopyOffer;
    assert.equal(near.cursorDistance, -2);
    const k = policy.bestLength('copy', near.tokens.length, near);
    assert.ok(k >= 2 && k <= 6, `verifies ${k} from 2 tokens before the cursor`);
    // The same offer weighed as before this change (no cursor known): the phases' curve, not the cursor's.
    const blind = policy.bestLength('copy', near.tokens.length, { ...near, cursorDistance: undefined } as CopyOffer);
    assert.ok(blind > k, `without the cursor ${blind}`);
  });

  it('a few edits far past the cursor do not cut later copies short where they came', () => {
    const policy = new SpeculationPolicy(ADAPTIVE, new LinearCosts(0.06));
    const copy = new WindowCopyProposer(LONG_SOURCE, PROMPT.length, { cursor: 40, offerLength: 128 });
    policy.register(copy);
    const model = policy.model('copy') as CopyAcceptanceModel;
    const at = (cursorDistance: number) => ({ ...(copy.offer([...PROMPT, 10], 128) as CopyOffer), cursorDistance });
    // Twenty windows copied whole from 40 before the cursor to 216 past it; two edited 89 past it.
    for (let i = 0; i < 20; i++) {
      model.record(at(-40), 128, 128);
      model.record(at(88), 128, 128);
    }
    for (let i = 0; i < 2; i++) model.record(at(60), 64, 29);
    const offer = copy.offer([...PROMPT, ...LONG_SOURCE.slice(0, 100)], 128) as CopyOffer;
    assert.equal(offer.cursorDistance, 60);
    const k = policy.bestLength('copy', offer.tokens.length, offer);
    assert.ok(k >= 120, `verifies ${k} of the 128 tokens from 60 past the cursor`);
  });
});
