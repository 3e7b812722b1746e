// Fixed-shape verification (src/speculation/verifyShape.ts) against pure stand-in models: lossless
// like every other mode, one batch shape per generation, and a policy that never loses where a graph
// backend makes a change of shape cost more than the arithmetic of a batch. The graph backend is
// simulated by a clock: a step costs its tokens, plus a re-capture unless the two evaluations before
// it had the same size (as ggml-cuda replays a captured graph).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DecodeMode, Token } from '../../src/shared/decoding';
import type { SpeculationSettings } from '../../src/shared/settings';
import { findInSequence } from '../../src/ngram';
import { DraftModelProposer } from '../../src/speculation/draftModelProposer';
import type { EvaluatedNext } from '../../src/speculation/greedyEvaluator';
import { SpeculationPolicy } from '../../src/speculation/policy';
import { proposersFor } from '../../src/speculation/modeProposers';
import { NgramProposer } from '../../src/speculation/ngramProposer';
import { decode } from '../../src/speculation/speculativeDecoder';
import { FIXED_SHAPE_TRIAL_STEPS, padToShape, ShapeHistory } from '../../src/speculation/verifyShape';
import { StopRules } from '../../src/stopping/stopRules';
import { policySection } from '../../src/stats/statsReport';
import { FAKE_EOS as EOS, FAKE_VOCAB as VOCAB, FakeEvaluator, fakeDetokenize as detokenize, hashModel, repetitiveModel } from '../support/fakeModel';

function settings(over: Partial<SpeculationSettings> = {}): SpeculationSettings {
  return { maxProposal: 8, ngramMinMatch: 2, ngramMaxMatch: 6, draftMinConfidence: 0, adaptive: true, lookahead: false, ...over };
}

/** Code-like: the next token mostly copies the one 8 back (four times in five), so n-grams are often right. */
const codeLike = (seed: number) => repetitiveModel(seed, 5);

const ngram = (minN: number, maxN: number) =>
  new NgramProposer((history, maxLen) => {
    const m = findInSequence(history, { minN, maxN, maxLen });
    return m ? { tokens: m.tokens, matchLength: m.n } : null;
  });

/** Always offers a long "match" whose first token the model never picks: acceptance 0. */
const alwaysWrong = (model: (h: readonly Token[]) => Token) =>
  new NgramProposer((history, maxLen) => {
    const wrong = (model(history) + 1) % (VOCAB - 1);
    return { tokens: Array.from({ length: maxLen }, () => wrong), matchLength: 6 };
  });

function prompt(seed: number, length = 24): Token[] {
  const h = hashModel(seed, VOCAB - 1, 1);
  const out: Token[] = [];
  for (let i = 0; i < length; i++) out.push(h(out));
  return out;
}

/** The simulated graph backend's clock: what each evaluation costs. */
interface GraphCosts {
  step: number;
  perToken: number;
  /** Extra cost of an evaluation that re-captures (its shape differs from one of the two before it). */
  capture: number;
}
const GPU: GraphCosts = { step: 1, perToken: 0.01, capture: 0.8 };

class GraphClockEvaluator extends FakeEvaluator {
  private readonly shapes = new ShapeHistory();
  constructor(
    next: (h: readonly Token[]) => Token,
    private readonly clock: { t: number },
    private readonly costs: GraphCosts,
  ) {
    super(next);
  }
  override async append(input: readonly Token[], outputs: number, withConfidence = false): Promise<EvaluatedNext[]> {
    const warm = this.shapes.record(input.length);
    this.clock.t += this.costs.step + this.costs.perToken * (input.length - 1) + (warm ? 0 : this.costs.capture);
    return super.append(input, outputs, withConfidence);
  }
}

async function generate(
  mode: DecodeMode,
  model: (h: readonly Token[]) => Token,
  promptTokens: Token[],
  policy: SpeculationPolicy,
  opts: { target?: FakeEvaluator; proposer?: NgramProposer; clock?: { t: number }; maxTokens?: number } = {},
) {
  const target = opts.target ?? new FakeEvaluator(model);
  const stop = new StopRules({ detokenize, isEndToken: (t) => t === EOS, maxTokens: opts.maxTokens ?? 64 });
  const stats = await decode({
    mode,
    target,
    prompt: promptTokens,
    stop,
    policy,
    proposers: proposersFor(mode, [opts.proposer ?? ngram(2, 6), new DraftModelProposer(new FakeEvaluator(model), 0)]),
    ...(opts.clock ? { now: () => opts.clock!.t } : {}),
  });
  return { tokens: [...stop.tokens], stats, target };
}

describe('fixed verify shape: the batch', () => {
  it('pads [pending, ...proposal] to the size with the filler, then repeats, and cuts a longer proposal', () => {
    assert.deepEqual(padToShape(7, [1, 2], 5, [9]), [7, 1, 2, 9, 9]);
    assert.deepEqual(padToShape(7, [], 3), [7, 7, 7]);
    assert.deepEqual(padToShape(7, [1, 2, 3, 4, 5], 4), [7, 1, 2, 3]);
  });

  it('counts a shape warm from its third evaluation in a row, and the distinct shapes', () => {
    const h = new ShapeHistory();
    assert.deepEqual([h.record(4), h.record(4), h.record(4), h.record(1), h.record(4), h.record(4), h.record(4)], [false, false, true, false, false, false, true]);
    assert.equal(h.distinct, 2);
  });
});

describe('fixed verify shape: lossless, one shape a generation', () => {
  for (const size of [4, 16]) {
    for (const mode of ['ngram', 'draft', 'hybrid'] as const) {
      it(`${mode}, shape ${size}: the plain greedy output, every decode step ${size} tokens with all of them outputs`, async () => {
        for (let seed = 1; seed <= 30; seed++) {
          const model = codeLike(seed);
          const p = prompt(seed * 7);
          const plain = await generate('plain', model, p, new SpeculationPolicy(settings()));
          const policy = new SpeculationPolicy(settings({ verifyShape: 'fixed', fixedShapeSize: size, adaptive: false }));
          const fixed = await generate(mode, model, p, policy);
          assert.deepEqual(fixed.tokens, plain.tokens, `seed ${seed}`);
          const steps = fixed.stats.speculation.targetEvaluations - 1;
          const decodeSizes = fixed.target.batchSizes.slice(-steps);
          assert.deepEqual(new Set(decodeSizes), new Set([size]), `seed ${seed}: decode batch sizes ${decodeSizes}`);
          assert.equal(fixed.stats.speculation.batchShapes, 1);
          assert.equal(fixed.stats.speculation.fixedShape, size);
        }
      });
    }
  }

  it('variable shapes (the CPU) change size from step to step: the proxy tells the two apart', async () => {
    const model = codeLike(3);
    const r = await generate('ngram', model, prompt(21), new SpeculationPolicy(settings({ verifyShape: 'variable', adaptive: false })));
    assert.ok((r.stats.speculation.batchShapes ?? 0) > 1, `shapes ${r.stats.speculation.batchShapes}`);
    assert.equal(r.stats.speculation.fixedShape, undefined);
  });

  it("'auto' is fixed only where the backend replays graphs", () => {
    assert.equal(new SpeculationPolicy(settings({ verifyShape: 'auto', graphReplay: true })).verifyShapeMode, 'fixed');
    assert.equal(new SpeculationPolicy(settings({ verifyShape: 'auto', graphReplay: false })).verifyShapeMode, 'variable');
    assert.equal(new SpeculationPolicy(settings({})).verifyShapeMode, 'variable');
    assert.equal(new SpeculationPolicy(settings({ verifyShape: 'fixed' })).verifyShapeMode, 'fixed');
  });
});

/** Runs `generations` generations of one window through one policy on the simulated graph backend; total ms and outputs. */
async function session(mode: DecodeMode, policy: SpeculationPolicy, generations: number, seed: number, proposerFor?: (model: (h: readonly Token[]) => Token) => NgramProposer) {
  const clock = { t: 0 };
  let tokens = 0;
  const outputs: Token[][] = [];
  const shapes: number[] = [];
  for (let g = 0; g < generations; g++) {
    const model = codeLike(seed + g);
    const target = new GraphClockEvaluator(model, clock, GPU);
    const r = await generate(mode, model, prompt(seed * 31 + g), policy, { target, clock, ...(proposerFor ? { proposer: proposerFor(model) } : {}) });
    tokens += r.tokens.length;
    outputs.push(r.tokens);
    shapes.push(r.stats.speculation.fixedShape ?? 0);
  }
  return { ms: clock.t, tokens, outputs, shapes };
}

describe('fixed verify shape: the policy on a graph backend', () => {
  it('where nothing is accepted it stops proposing within a few steps and stays plain, probing now and then: never below 0.97x plain', async () => {
    const generations = 24;
    const plain = await session('plain', new SpeculationPolicy(settings()), generations, 5);
    const wrong = (model: (h: readonly Token[]) => Token) => alwaysWrong(model);
    const fixedPolicy = new SpeculationPolicy(settings({ verifyShape: 'fixed' }));
    const fixed = await session('ngram', fixedPolicy, generations, 5, wrong);
    assert.deepEqual(fixed.outputs, plain.outputs);
    const speedup = plain.ms / fixed.ms;
    assert.ok(speedup >= 0.97, `fixed shape at a = 0: ${speedup.toFixed(3)}x plain (shapes per generation ${fixed.shapes})`);
    // The shape is tried, then written off: most generations decode plainly.
    assert.ok(fixed.shapes.filter((s) => s > 1).length <= 4, `generations with a fixed shape: ${fixed.shapes}`);
    // The simulation reproduces the loss of variable shapes there (regime 2 at a = 0 on a GPU).
    const variable = await session('ngram', new SpeculationPolicy(settings({ verifyShape: 'variable' })), generations, 5, wrong);
    assert.ok(plain.ms / variable.ms < 0.97, `variable shapes at a = 0: ${(plain.ms / variable.ms).toFixed(3)}x plain`);
  });

  it('a fixed-shape generation that accepts nothing falls back to plain steps after its trial steps', async () => {
    const policy = new SpeculationPolicy(settings({ verifyShape: 'fixed', fixedShapeSize: 8 }));
    // A warm plain step measured first: the fallback compares with it.
    await session('plain', policy, 1, 9);
    const clock = { t: 0 };
    const model = codeLike(40);
    const target = new GraphClockEvaluator(model, clock, GPU);
    const r = await generate('ngram', model, prompt(41), policy, { target, clock, proposer: alwaysWrong(model) });
    const steps = r.stats.speculation.targetEvaluations - 1;
    const sizes = r.target.batchSizes.slice(-steps);
    // The trial steps, plus the first whose warm cost is measured, then one-token steps only.
    const firstPlain = sizes.indexOf(1);
    assert.ok(firstPlain >= FIXED_SHAPE_TRIAL_STEPS && firstPlain <= FIXED_SHAPE_TRIAL_STEPS + 1, `sizes ${sizes}`);
    assert.ok(
      sizes.slice(firstPlain).every((s) => s === 1),
      `sizes ${sizes}`,
    );
    assert.equal(r.stats.speculation.batchShapes, 2);
  });

  it('where proposals are accepted it verifies in a fixed shape and beats plain decoding', async () => {
    const generations = 12;
    const plain = await session('plain', new SpeculationPolicy(settings()), generations, 11);
    const fixed = await session('ngram', new SpeculationPolicy(settings({ verifyShape: 'fixed' })), generations, 11);
    assert.deepEqual(fixed.outputs, plain.outputs);
    const speedup = plain.ms / fixed.ms;
    assert.ok(speedup > 1.3, `fixed shape on repetitive text: ${speedup.toFixed(2)}x plain (shapes ${fixed.shapes})`);
    assert.ok(
      fixed.shapes.slice(1).every((s) => s > 1),
      `shapes ${fixed.shapes}`,
    );
  });
});

describe('fixed verify shape: Show Stats', () => {
  it('says the shape and that graph reuse is on, or that batches are variable', async () => {
    const policy = new SpeculationPolicy(settings({ verifyShape: 'fixed', fixedShapeSize: 16 }));
    const model = codeLike(2);
    await generate('ngram', model, prompt(3), policy);
    const rows = (snapshot: ReturnType<SpeculationPolicy['snapshot']>) => JSON.stringify(policySection(snapshot));
    assert.match(rows(policy.snapshot()), /fixed shape 16, graph reuse on/);
    assert.match(rows(new SpeculationPolicy(settings({ verifyShape: 'variable' })).snapshot()), /variable length/);
  });
});
