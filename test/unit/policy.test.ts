// The speculation policy and its cost model are pure: table-driven tests, no model needed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SpeculationSettings } from '../../src/shared/settings';
import type { CopyAcceptanceModel } from '../../src/speculation/copyAcceptance';
import { CostModel } from '../../src/speculation/costModel';
import { draftAcceptance } from '../../src/speculation/draftModelProposer';
import { LookaheadPool, LookaheadProposer } from '../../src/speculation/lookaheadPool';
import { NgramProposer } from '../../src/speculation/ngramProposer';
import { chainOffer, type ModelProposer } from '../../src/speculation/proposer';
import { policyReport } from '../../src/stats/statsReport';
import { AcceptanceTracker, EXPLORE_FIRST_INTERVAL, EXPLORE_MAX_INTERVAL, PLAIN_REFRESH_INTERVAL, type SourceOffer, SpeculationPolicy, expectedTokensPerStep } from '../../src/speculation/policy';
import { WindowCopyProposer } from '../../src/speculation/windowCopyProposer';

const SETTINGS: SpeculationSettings = { maxProposal: 8, ngramMinMatch: 3, ngramMaxMatch: 8, draftMinConfidence: 0.35, adaptive: true, lookahead: false };

/** A cost model that has measured `ms(b)` for every batch size 1..17. */
function measured(ms: (batch: number) => number): CostModel {
  const cost = new CostModel();
  for (let b = 1; b <= 17; b++) cost.recordTarget(b, ms(b));
  return cost;
}

/** A cost model that has timed each of `ms`'s batch sizes (size: ms) three times. */
function timedSizes(ms: Readonly<Record<number, number>>): CostModel {
  const cost = new CostModel();
  for (let i = 0; i < 3; i++) for (const [b, t] of Object.entries(ms)) cost.recordTarget(Number(b), t);
  return cost;
}

/** An acceptance tracker whose rate for both sources is about `a` (many observations, no prior left). */
function acceptance(a: number): AcceptanceTracker {
  const t = new AcceptanceTracker({ ngram: a, draft: a }, 1000, 1);
  return t;
}

// The sources as the decoder hands them to the policy (their offers are made up below).
const NGRAM = new NgramProposer(() => null);
const LOOKAHEAD = new LookaheadProposer(new LookaheadPool());
const COPY = new WindowCopyProposer([], 0);
const DRAFT: ModelProposer = { id: 'draft', asks: 'model', acceptanceModel: draftAcceptance, offer: async () => null, record() {} };

/** A step's offers: an n-gram match, the target's lookahead, the draft, the window copy (its phase and schedule). */
interface StepOffers {
  ngramAvailable: number;
  ngramMatchLength: number;
  draftAvailable: boolean;
  remaining: number;
  lookaheadAvailable?: number;
  copyAvailable?: number;
  copyScheduled?: number;
  copyInRun?: boolean;
  copyAgreement?: number;
}

const tokens = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
const copyOffer = (inRun: boolean, agreement = 1, length = 64, scheduled?: number) => chainOffer(tokens(length), { inRun, agreement, scheduled });

/** The offers in the hybrid mode's order, as the decoder builds them. */
function offersOf(o: StepOffers): SourceOffer[] {
  return [
    ...(o.copyAvailable ? [{ proposer: COPY, offer: copyOffer(o.copyInRun ?? false, o.copyAgreement, o.copyAvailable, o.copyScheduled) }] : []),
    { proposer: NGRAM, offer: o.ngramAvailable > 0 ? chainOffer(tokens(o.ngramAvailable), { matchLength: o.ngramMatchLength }) : null },
    ...(o.lookaheadAvailable ? [{ proposer: LOOKAHEAD, offer: chainOffer(tokens(o.lookaheadAvailable)) }] : []),
    ...(o.draftAvailable ? [{ proposer: DRAFT }] : []),
  ];
}

const plan = (policy: SpeculationPolicy, o: StepOffers) => policy.plan(offersOf(o), o.remaining);

/** A policy that has met the window copy (its acceptance model made). */
function copyPolicy(settings: SpeculationSettings, cost?: CostModel): SpeculationPolicy {
  const policy = new SpeculationPolicy(settings, cost);
  policy.register(COPY);
  return policy;
}
const recordCopy = (policy: SpeculationPolicy, inRun: boolean, proposed: number, accepted: number, agreement?: number) => policy.record('copy', copyOffer(inRun, agreement), proposed, accepted);
const phases = (policy: SpeculationPolicy) => (policy.model('copy') as CopyAcceptanceModel).phases;

describe('expected tokens per verification', () => {
  for (const [a, k, expected] of [
    [0, 5, 1],
    [0.5, 1, 1.5],
    [0.5, 3, 1.875],
    [0.9, 5, (1 - 0.9 ** 6) / 0.1],
    [1, 4, 5],
  ] as const) {
    it(`a=${a}, k=${k} -> ${expected.toFixed(3)}`, () => assert.ok(Math.abs(expectedTokensPerStep(a, k) - expected) < 1e-12));
  }
});

describe('cost model', () => {
  it('uses the prior slope until sizes are measured, then interpolates between them', () => {
    const cost = new CostModel(0.35);
    cost.recordTarget(1, 10);
    assert.equal(cost.verifyCost(1), 10);
    assert.ok(Math.abs(cost.verifyCost(5) - (10 + 10 * 0.35 * 4)) < 1e-9);
    cost.recordTarget(9, 30);
    assert.equal(cost.verifyCost(5), 20);
  });

  it('extrapolates beyond the largest size at the measured slope (a compute-bound CPU is nearly linear)', () => {
    const cost = new CostModel(0.35);
    cost.recordTarget(1, 2);
    cost.recordTarget(3, 6);
    // 2 ms per extra token measured, not 0.35 x 2 ms.
    assert.equal(cost.verifyCost(9), 6 + 2 * 6);
  });

  it('smooths repeated measurements and ignores nonsense', () => {
    const cost = new CostModel(0.35, 0.5);
    cost.recordTarget(2, 10);
    cost.recordTarget(2, 20);
    assert.equal(cost.verifyCost(2), 15);
    cost.recordTarget(2, NaN);
    cost.recordTarget(0, 5);
    assert.equal(cost.verifyCost(2), 15);
  });
});

describe('cost model under a machine whose speed drifts', () => {
  it('keeps a larger step as a multiple of the one-token step measured before it, so stale sizes follow the machine', () => {
    const cost = new CostModel(0.35, 1);
    cost.recordTarget(1, 10);
    cost.recordTarget(2, 18);
    // The machine gets twice as slow; only one-token steps are measured since.
    cost.recordTarget(1, 20);
    assert.equal(cost.verifyCost(2), 36);
    // Measured raw, the stale 18 ms would have made a 2-token step look cheaper than a 1-token one.
    assert.ok(cost.verifyCost(2) > cost.verifyCost(1));
  });
});

describe('proposal length from acceptance and verify cost', () => {
  // CPU-like: verifying k tokens costs 1 + 0.35 (k - 1) of one. GPU-like: nearly flat. Compute-bound: linear.
  const cpu = (b: number) => 10 * (1 + 0.35 * (b - 1));
  const gpu = (b: number) => 10 * (1 + 0.02 * (b - 1));
  const linear = (b: number) => 10 * b;
  for (const [name, ms, a, expect] of [
    ['CPU, useless proposals', cpu, 0.05, (k: number) => k === 0],
    ['CPU, fair proposals', cpu, 0.6, (k: number) => k >= 1 && k <= 4],
    ['CPU, excellent proposals', cpu, 0.95, (k: number) => k >= 5],
    ['GPU, fair proposals: long ones pay', gpu, 0.6, (k: number) => k >= 6],
    ['compute-bound: nothing pays', linear, 0.9, (k: number) => k === 0],
  ] as const) {
    it(`${name}`, () => {
      const policy = new SpeculationPolicy(SETTINGS, measured(ms), acceptance(a));
      const k = policy.bestLength('ngram', 8);
      assert.ok(expect(k), `k = ${k}`);
    });
  }

  it('the draft pays for its own time: a draft as slow as the target never pays on a CPU', () => {
    const cost = measured(cpu);
    cost.recordProposal('draft', 1, 10);
    const policy = new SpeculationPolicy(SETTINGS, cost, acceptance(0.7));
    policy.register(DRAFT);
    assert.equal(policy.bestLength('draft', 8), 0);
    assert.ok(policy.bestLength('ngram', 8) > 0, 'the same acceptance pays for free n-gram proposals');
  });
});

describe('plan per step', () => {
  const options = { ngramAvailable: 6, ngramMatchLength: 4, draftAvailable: true, remaining: 40 };

  it('a long n-gram match first, the draft otherwise, capped by what is left', () => {
    const policy = new SpeculationPolicy(
      SETTINGS,
      measured((b) => 10 + 0.1 * b),
      acceptance(0.8),
    );
    assert.equal(plan(policy, options)?.source, 'ngram');
    assert.equal(plan(policy, { ...options, ngramMatchLength: 2 })?.source, 'draft');
    assert.equal(plan(policy, { ...options, ngramAvailable: 0 })?.source, 'draft');
    assert.ok(plan(policy, { ...options, remaining: 3 })!.maxLen <= 2);
    assert.equal(plan(policy, { ...options, remaining: 1 }), null);
    assert.ok(plan(policy, options)!.maxLen <= options.ngramAvailable);
  });

  it('not adaptive: the whole match, or maxProposal draft tokens, whatever the costs', () => {
    const policy = new SpeculationPolicy(
      { ...SETTINGS, adaptive: false },
      measured((b) => 10 * b),
      acceptance(0),
    );
    assert.deepEqual(plan(policy, options), { source: 'ngram', maxLen: 6 });
    assert.deepEqual(plan(policy, { ...options, ngramMatchLength: 1 }), { source: 'draft', maxLen: 8 });
    assert.equal(plan(policy, { ...options, ngramMatchLength: 1, draftAvailable: false }), null);
  });

  it('written-off sources are tried again with backoff: 16, 32, 64 ... steps, reset once they pay', () => {
    // A batch of b costs 10 + 4(b - 1): at a = 0.3 no length pays; 8 tokens accepted whole would win
    // more than a try costs, so tries are not spaced further.
    const cost = measured((b) => 10 + 4 * (b - 1));
    const accept = acceptance(0.3);
    const policy = new SpeculationPolicy(SETTINGS, cost, accept);
    const draftOnly = { ...options, ngramAvailable: 0 };
    const tries: number[] = [];
    for (let step = 1; step <= 16 + 32 + 64 + 128; step++) if (plan(policy, draftOnly)) tries.push(step);
    assert.deepEqual(tries, [16, 48, 112, 240]);
    assert.equal(policy.exploreInterval('draft'), 256);
    for (let i = 0; i < 20; i++) plan(policy, draftOnly);
    assert.ok(policy.exploreInterval('draft') <= EXPLORE_MAX_INTERVAL);
    // The verify cost turns out flat (a GPU, say): the draft pays and its backoff resets.
    for (let b = 1; b <= 17; b++) for (let i = 0; i < 30; i++) cost.recordTarget(b, 10);
    assert.equal(plan(policy, draftOnly)?.source, 'draft');
    assert.equal(policy.exploreInterval('draft'), EXPLORE_FIRST_INTERVAL);
  });
});

describe('no tries that could not pay', () => {
  const draftOnly = { ngramAvailable: 0, ngramMatchLength: 0, draftAvailable: true, remaining: 40 };

  it('a source is not tried while even an offer accepted whole would cost more than plain steps', () => {
    // A CPU where a batch of 2 costs 3 steps (the small v3 target, one thread): at most 6 tokens a
    // step for 6.5 steps' time, so a perfect proposer would lose too; trying one costs ~3 steps a try.
    const cost = timedSizes({ 1: 1.8, 2: 6.9, 3: 8.1, 4: 9.3, 5: 11.5, 6: 11.9 });
    const policy = new SpeculationPolicy({ ...SETTINGS, maxProposal: 5 }, cost, acceptance(0));
    let tries = 0;
    for (let step = 0; step < 2000; step++) if (plan(policy, draftOnly)) tries++;
    assert.equal(tries, 0);
    // The same source on a machine where a batch costs little more than one token: tried at once (the
    // schedule counted the occasions meanwhile), then after the next interval.
    for (let b = 1; b <= 6; b++) for (let i = 0; i < 30; i++) cost.recordTarget(b, 2 + 0.1 * b);
    const tried: number[] = [];
    for (let step = 1; step <= 2 * EXPLORE_FIRST_INTERVAL + 1; step++) if (plan(policy, draftOnly)?.source === 'draft') tried.push(step);
    assert.deepEqual(tried, [1, 1 + 2 * EXPLORE_FIRST_INTERVAL]);
  });

  it('short offers that could not pay do not hold back the tries of long ones', () => {
    // A batch of 2 costs 2.5 steps: one guessed token could never pay; nine tokens for 3.2 steps could.
    const policy = new SpeculationPolicy(SETTINGS, timedSizes({ 1: 1, 2: 2.5, 3: 2.6, 9: 3.2 }), acceptance(0.3));
    const tries: number[] = [];
    for (let step = 1; step <= 64; step++) {
      const ngramAvailable = step % 2 ? 8 : 1;
      if (plan(policy, { ngramAvailable, ngramMatchLength: 4, draftAvailable: false, remaining: 40 })) tries.push(step);
    }
    // Due at the 16th occasion, a short offer's: tried at the next long one, and again 32 occasions later.
    assert.deepEqual(tries, [EXPLORE_FIRST_INTERVAL + 1, 3 * EXPLORE_FIRST_INTERVAL + 1]);
  });

  it('tries are spaced by what one costs over what a whole offer could win', () => {
    // Batches of 2-6 cost 3.8-4.9 steps: 6 tokens accepted whole win ~22% of a step a step, a try of
    // 2 tokens costs ~2.9 steps, so tries come ~13x further apart than the schedule's 16, 32, 64 ...
    const cost = timedSizes({ 1: 2.2, 2: 6.9, 3: 8.2, 4: 9.2, 5: 10.2, 6: 11.0 });
    const policy = new SpeculationPolicy({ ...SETTINGS, maxProposal: 5 }, cost, acceptance(0));
    const tries: number[] = [];
    for (let step = 1; step <= 1000; step++) if (plan(policy, draftOnly)) tries.push(step);
    const spacing = (8.2 / 2.2 - 1) / ((6 / 11.0) * 2.2 - 1);
    assert.deepEqual(tries, [Math.ceil(16 * spacing), Math.ceil(16 * spacing) + Math.ceil(32 * spacing)]);
  });
});

describe('plain refresh', () => {
  it('adaptive: one plain step after every PLAIN_REFRESH_INTERVAL speculative ones, to keep the one-token cost fresh', () => {
    const policy = new SpeculationPolicy(
      SETTINGS,
      measured((b) => 10 + b),
      acceptance(0.9),
    );
    const plans = Array.from({ length: 2 * (PLAIN_REFRESH_INTERVAL + 1) }, () => plan(policy, { ngramAvailable: 0, ngramMatchLength: 0, draftAvailable: true, remaining: 40 }));
    assert.deepEqual(
      plans.map((p, i) => (p === null ? i : -1)).filter((i) => i >= 0),
      [PLAIN_REFRESH_INTERVAL, 2 * PLAIN_REFRESH_INTERVAL + 1],
    );
    // Not adaptive: every step as configured.
    const fixed = new SpeculationPolicy(
      { ...SETTINGS, adaptive: false },
      measured((b) => 10 + b),
      acceptance(0.9),
    );
    for (let i = 0; i < 2 * PLAIN_REFRESH_INTERVAL; i++) assert.notEqual(plan(fixed, { ngramAvailable: 0, ngramMatchLength: 0, draftAvailable: true, remaining: 40 }), null);
  });
});

describe('acceptance tracker', () => {
  it('is a geometric rate: accepted tokens over accepted tokens plus rejections, following recent text', () => {
    const t = new AcceptanceTracker({ ngram: 0.5, draft: 0.5 }, 0, 1);
    t.record('ngram', 4, 4);
    t.record('ngram', 4, 2);
    assert.equal(t.rate('ngram'), 6 / 7);
    const decaying = new AcceptanceTracker({ ngram: 0.5, draft: 0.5 }, 4, 0.5);
    for (let i = 0; i < 30; i++) decaying.record('draft', 3, 0);
    assert.ok(decaying.rate('draft') < 0.01, 'old luck fades');
  });
});

describe('Show Stats: what the policy learned', () => {
  it('gives the verify cost ratios and says which source pays and which is off', () => {
    const cost = measured((b) => 10 * b);
    cost.recordProposal('draft', 1, 3);
    const met = (policy: SpeculationPolicy) => {
      for (const source of [NGRAM, DRAFT]) policy.register(source);
      return policy;
    };
    const offEverywhere = policyReport(met(new SpeculationPolicy(SETTINGS, cost, acceptance(0.9))).snapshot()).join('\n');
    assert.match(offEverywhere, /2: 2\.00x, 3: 3\.00x/);
    assert.match(offEverywhere, /3\.0 ms per token/);
    assert.match(offEverywhere, /n-gram: acceptance estimate, verdict \| 90%, off: plain decoding is faster \(retried every 16 steps\)/);
    const gpu = policyReport(
      met(
        new SpeculationPolicy(
          SETTINGS,
          measured((b) => 10 + 0.1 * b),
          acceptance(0.9),
        ),
      ).snapshot(),
    ).join('\n');
    assert.match(gpu, /n-gram: acceptance estimate, verdict \| 90%, proposals of up to 8 tokens pay/);
  });
});

describe('the window copy: its length from the measured verify cost and how copies fare', () => {
  /** A cost model that has timed every batch size 1..65 at V(b) = ms(b). */
  const timed = (ms: (batch: number) => number) => {
    const cost = new CostModel();
    for (let b = 1; b <= 65; b++) cost.recordTarget(b, ms(b));
    return cost;
  };
  // A 2-core CPU's shape (1.5B Q8_0, 2 threads): small batches cost nearly a step a token, large ones ~0.37.
  const cpu = (b: number) => (b === 1 ? 62 : b <= 5 ? 62 * b : 62 * (5 + 0.3 * (b - 5)));
  const gpu = (b: number) => 10 * (1 + 0.06 * (b - 1));

  it('learns how far copies stay right, in runs and after a divergence apart', () => {
    const policy = copyPolicy({ ...SETTINGS, adaptive: true }, timed(cpu));
    const before = phases(policy).expectedTokens(64, true, 1);
    // Runs that stay right for 40 tokens, then the edit (each resumed on a one-token match: the age of
    // the proposal's token j is j + 1).
    for (let i = 0; i < 60; i++) recordCopy(policy, true, 64, 40, 1);
    const e = phases(policy).expectedTokens(64, true, 1);
    assert.ok(e > 38 && e < 43, `expected ${e.toFixed(1)} tokens of a 64-token run proposal (40 right, then the target's own)`);
    assert.ok(phases(policy).continuationRate(21, true) > 0.95 && phases(policy).continuationRate(41, true) < 0.2);
    assert.ok(before !== e);
    // After a divergence: single-token re-synchronisations are wrong, long agreements right.
    for (let i = 0; i < 60; i++) {
      recordCopy(policy, false, 32, 0, 1);
      recordCopy(policy, false, 32, 32, 12);
    }
    assert.ok(phases(policy).firstRate(false, 1) < 0.2);
    assert.ok(phases(policy).firstRate(false, 12) > 0.8);
  });

  it('weighs a copied token by its age in the copy: right for long, it stays right; just resumed, it may not', () => {
    const policy = copyPolicy({ ...SETTINGS, adaptive: true }, timed(gpu));
    // Copies in unchanged stretches (a hundred tokens right already) stay right; copies that resumed a
    // token ago go wrong at their fifth token, in the same kind of step (a run).
    for (let i = 0; i < 60; i++) {
      recordCopy(policy, true, 64, 64, 100);
      recordCopy(policy, true, 16, 4, 1);
    }
    const old = phases(policy).expectedTokens(32, true, 100);
    const young = phases(policy).expectedTokens(32, true, 1);
    assert.ok(old > 30, `an old copy: ${old.toFixed(1)} of 33 tokens expected`);
    assert.ok(young < 6, `a young copy: ${young.toFixed(1)} expected (4 right, then the target's own)`);
    assert.ok(phases(policy).continuationRate(104, true) > 0.95 && phases(policy).continuationRate(5, true) < 0.2);
  });

  it('on a CPU: a long copy in a run, nothing on a weak guess; on a GPU a guess pays, in a short step first', () => {
    const cpuPolicy = copyPolicy({ ...SETTINGS, adaptive: true }, timed(cpu));
    for (let i = 0; i < 60; i++) {
      recordCopy(cpuPolicy, true, 64, 64);
      recordCopy(cpuPolicy, false, 8, 0, 1);
    }
    assert.equal(cpuPolicy.bestLength('copy', 64, copyOffer(true)), 64, 'a long run: the largest batch costs least a token');
    assert.equal(cpuPolicy.bestLength('copy', 64, copyOffer(false, 1)), 0, 'a guess that is mostly wrong: plain decoding');
    assert.equal(plan(cpuPolicy, { ngramAvailable: 0, ngramMatchLength: 0, draftAvailable: false, remaining: 100, copyAvailable: 64, copyInRun: true })?.maxLen, 64);
    const gpuPolicy = copyPolicy({ ...SETTINGS, adaptive: true }, timed(gpu));
    // At the priors a guess's first token is a coin toss, and a right one runs far: a short step
    // first, the rest once it came back right (speculation/stepSplit.ts).
    const guess = gpuPolicy.bestLength('copy', 64, copyOffer(false, 1));
    assert.ok(guess >= 2 && guess <= 16, `on a GPU a guess pays, in a short step first (${guess} at the priors)`);
    for (let i = 0; i < 60; i++) recordCopy(gpuPolicy, true, 64, 64);
    assert.equal(gpuPolicy.bestLength('copy', 64, copyOffer(true)), 64, 'runs copied whole: the whole offer in one step');
  });

  it('on a GPU: a copy re-synchronised by a guess that is right at once or far runs in a short step first', () => {
    const gpuPolicy = copyPolicy({ ...SETTINGS, adaptive: true }, timed(gpu));
    // After a divergence, a single-token re-synchronisation is wrong at once half the time, right for
    // two tokens a third of the time, else right to the end of a 64-token offer.
    for (let i = 0; i < 60; i++) {
      recordCopy(gpuPolicy, false, 64, 0, 1);
      recordCopy(gpuPolicy, false, 64, 2, 1);
      recordCopy(gpuPolicy, false, 64, 64, 1);
      recordCopy(gpuPolicy, false, 64, 0, 1);
      recordCopy(gpuPolicy, false, 64, 2, 1);
      recordCopy(gpuPolicy, false, 64, 0, 1);
    }
    const offer = copyOffer(false, 1);
    const expected = phases(gpuPolicy).expectedTokensUpTo(64, false, 1);
    // One step would verify the whole offer: at ~3 tokens of cost, a long run pays even at one in six.
    assert.ok(expected[64]! / gpu(65) > expected[4]! / gpu(5), 'one step: the whole offer is the fastest');
    const k = gpuPolicy.bestLength('copy', 64, offer);
    assert.ok(k >= 3 && k <= 8, `a short step first: ${k}`);
  });

  it('not adaptive: the proposer schedule decides, within the offer', () => {
    const policy = copyPolicy({ ...SETTINGS, adaptive: false });
    assert.equal(plan(policy, { ngramAvailable: 0, ngramMatchLength: 0, draftAvailable: false, remaining: 100, copyAvailable: 64, copyScheduled: 8 })?.maxLen, 8);
    assert.equal(plan(policy, { ngramAvailable: 0, ngramMatchLength: 0, draftAvailable: false, remaining: 5, copyAvailable: 64, copyScheduled: 8 })?.maxLen, 4);
  });

  it('an untimed longer batch is tried once in a run when its estimate comes near the best', () => {
    const cost = new CostModel();
    for (let b = 1; b <= 33; b++) cost.recordTarget(b, cpu(b));
    const policy = copyPolicy({ ...SETTINGS, adaptive: true }, cost);
    for (let i = 0; i < 60; i++) recordCopy(policy, true, 32, 32);
    assert.equal(policy.bestLength('copy', 64, copyOffer(true)), 64);
    cost.recordTarget(65, 62 * 64); // measured: far dearer than estimated
    assert.ok(policy.bestLength('copy', 64, copyOffer(true)) < 64);
  });
});
