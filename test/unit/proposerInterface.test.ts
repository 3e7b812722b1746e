// A proposal source is one file and one registration (src/speculation/proposer.ts): a source made up
// here, that no file of src/ names, is asked, verified, counted in the completion's statistics,
// weighed by its own acceptance model in the policy, and shown by Show Stats, its charts and the
// next-edit figures under its id, by registering it in the decoder's list alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestFigures } from '../../src/nextEditSession/stats';
import { type DecodeMode, sourceName, type Token } from '../../src/shared/decoding';
import type { DecoderStats } from '../../src/shared/generationStats';
import type { SpeculationSettings } from '../../src/shared/settings';
import { proposersFor } from '../../src/speculation/modeProposers';
import { NgramProposer } from '../../src/speculation/ngramProposer';
import { SpeculationPolicy } from '../../src/speculation/policy';
import { type AcceptanceModel, type ChainOffer, chainOffer, type LookupProposer, type ModelProposer, type Proposer, type VerifiedStep } from '../../src/speculation/proposer';
import { decode } from '../../src/speculation/speculativeDecoder';
import { StopRules } from '../../src/stopping/stopRules';
import { StatsCollector } from '../../src/stats/statsCollector';
import { policyReport, reportMarkdown, statsReportModel } from '../../src/stats/statsReport';
import { sessionCharts } from '../../src/statsView/sessionCharts';
import { FakeEvaluator, hashModel } from '../support/fakeModel';

const VOCAB = 64;
const detokenize = (tokens: readonly Token[]) => tokens.map((t) => String.fromCharCode(33 + t)).join('');

/** A target whose next token is a hash of the last three: the made-up sources below know it. */
const model = hashModel(7, VOCAB, 3);

/** What the target will write after `history`, `n` tokens: a perfect guess (an oracle). */
function continuation(history: readonly Token[], n: number): Token[] {
  const h = [...history];
  for (let i = 0; i < n; i++) h.push(model(h));
  return h.slice(history.length);
}

/** Its offer: a chain, and how sure it is (what its own acceptance model weighs it by). */
interface HunchOffer extends ChainOffer {
  sure: boolean;
}

/**
 * A free source that guesses right on even history lengths and wrong on odd ones, and says which:
 * its acceptance model learns the two apart and expects nothing of an unsure offer.
 */
class HunchProposer implements LookupProposer<HunchOffer> {
  readonly id = 'hunch';
  readonly asks = 'lookup';
  readonly records: [number, number][] = [];
  readonly models: HunchAcceptance[] = [];
  observed = 0;

  offer(history: readonly Token[], maxLen: number): HunchOffer | null {
    const sure = history.length % 2 === 0;
    const right = continuation(history, maxLen);
    return chainOffer(sure ? right : right.map((t) => (t + 1) % VOCAB), { sure });
  }

  acceptanceModel(): HunchAcceptance {
    const model = new HunchAcceptance();
    this.models.push(model);
    return model;
  }

  record(proposed: number, accepted: number): void {
    this.records.push([proposed, accepted]);
  }

  observe(step: VerifiedStep): void {
    // Every position of the batch was read: the target's token after each guess.
    assert.equal(step.predictions.length, step.guesses.length + 1);
    this.observed++;
  }
}

class HunchAcceptance implements AcceptanceModel<HunchOffer> {
  readonly prior = 0.5;
  readonly counts = { sure: { right: 1, seen: 2 }, unsure: { right: 1, seen: 2 } };

  expectedTokensUpTo(limit: number, offer?: HunchOffer): Float64Array {
    const c = this.counts[offer?.sure === false ? 'unsure' : 'sure'];
    const a = c.right / c.seen;
    const out = new Float64Array(limit + 1);
    for (let k = 0; k <= limit; k++) out[k] = a >= 1 ? k + 1 : (1 - a ** (k + 1)) / (1 - a);
    return out;
  }

  record(offer: HunchOffer, proposed: number, accepted: number): void {
    const c = this.counts[offer.sure ? 'sure' : 'unsure'];
    c.seen += proposed;
    c.right += accepted;
  }
}

/** A source that runs a "model": asked only once chosen, for the length the policy chose. */
class SlowOracle implements ModelProposer {
  readonly id = 'slow-oracle';
  readonly asks = 'model';
  asked: number[] = [];

  async offer(history: readonly Token[], maxLen: number): Promise<ChainOffer> {
    this.asked.push(maxLen);
    return chainOffer(continuation(history, maxLen), { evaluations: maxLen, generationMs: 0.5 * maxLen });
  }

  record(): void {}
}

const settings = (over: Partial<SpeculationSettings> = {}): SpeculationSettings => ({
  maxProposal: 6,
  ngramMinMatch: 2,
  ngramMaxMatch: 6,
  draftMinConfidence: 0,
  adaptive: true,
  lookahead: false,
  ...over,
});

async function run(mode: DecodeMode, proposers: Proposer[], policy: SpeculationPolicy, prompt: Token[], maxTokens = 60) {
  const stop = new StopRules({ detokenize, isEndToken: () => false, maxTokens });
  // A clock that moves only with the target's batches: a CPU-like cost, the same every run.
  const clock = { t: 0 };
  const target = new FakeEvaluator(model);
  const append = target.append.bind(target);
  target.append = (input, outputs, confidence) => {
    clock.t += 1 + 0.1 * (input.length - 1);
    return append(input, outputs, confidence);
  };
  const stats = await decode({ mode, target, prompt, stop, policy, proposers, now: () => clock.t });
  return { tokens: [...stop.tokens], stats };
}

const prompt = (seed: number): Token[] => continuation([seed, seed + 1], 12);

describe('a new proposal source: one file and one registration', () => {
  it('a made-up lookup source is asked, verified, counted by its id and weighed by its own acceptance model', async () => {
    const hunch = new HunchProposer();
    const policy = new SpeculationPolicy(settings());
    let proposed = 0;
    let accepted = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const plain = await run('plain', [], new SpeculationPolicy(settings()), prompt(seed));
      const r = await run('hybrid', [hunch], policy, prompt(seed));
      assert.deepEqual(r.tokens, plain.tokens, `seed ${seed}: lossless`);
      const by = r.stats.speculation.bySource.hunch!;
      assert.deepEqual(Object.keys(r.stats.speculation.bySource), ['hunch'], 'the decode counts the sources it was given');
      proposed += by.proposedTokens;
      accepted += by.acceptedTokens;
      assert.ok(r.stats.speculation.targetEvaluations < plain.stats.speculation.targetEvaluations, `seed ${seed}: fewer target evaluations`);
    }
    // Verified and told: the proposer's records add up to its statistics.
    assert.ok(proposed > 0 && accepted > 0);
    assert.equal(
      hunch.records.reduce((t, [p]) => t + p, 0),
      proposed,
    );
    assert.equal(
      hunch.records.reduce((t, [, a]) => t + a, 0),
      accepted,
    );
    assert.ok(hunch.observed > 0, 'it saw every verify step');
    // Its acceptance model, made once for the policy and kept across generations, learned the hunches apart.
    assert.equal(hunch.models.length, 1);
    const counts = hunch.models[0]!.counts;
    // Unsure offers are verified only on retries, a handful of them.
    assert.ok(counts.sure.right / counts.sure.seen > 0.9 && counts.unsure.seen > 0 && counts.unsure.right / counts.unsure.seen < 0.5, JSON.stringify(counts));
    // So the policy verifies sure offers and leaves unsure ones (but for its retries).
    const snapshot = policy.snapshot();
    assert.deepEqual(Object.keys(snapshot.acceptance), ['hunch']);
    assert.ok(snapshot.bestLength.hunch! > 0, 'a sure offer pays');
    assert.equal(policy.bestLength('hunch', 6, chainOffer([1, 2, 3, 4, 5, 6], { sure: false })), 0, 'an unsure one does not');
    assert.ok(snapshot.retryInterval.hunch! >= 16);
  });

  it('registered after the sources of a mode: the list order is the priority where several offer', async () => {
    // An n-gram source that finds a (right) match on every third step only.
    const ngram = new NgramProposer((history, maxLen) => (history.length % 3 === 0 ? { tokens: continuation(history, maxLen), matchLength: 4 } : null));
    const p = prompt(3);
    const plain = await run('plain', [], new SpeculationPolicy(settings()), p);
    const steps = async (proposers: Proposer[]) => {
      const r = await run('ngram', proposers, new SpeculationPolicy(settings({ adaptive: false })), p);
      assert.deepEqual(r.tokens, plain.tokens);
      return Object.fromEntries(Object.entries(r.stats.speculation.bySource).map(([id, by]) => [id, by.steps]));
    };
    const after = await steps([...proposersFor('ngram', [ngram]), new HunchProposer()]);
    assert.ok(after.ngram! > 0 && after.hunch! > 0, `n-gram where it has a match, the made-up source elsewhere: ${JSON.stringify(after)}`);
    // First, the made-up source (it always offers) leaves the n-grams nothing.
    const first = await steps([new HunchProposer(), ngram]);
    assert.ok(first.hunch! > 0 && first.ngram === 0, JSON.stringify(first));
  });

  it('a made-up source that runs a model is asked only once chosen, its time per token charged by the policy; ids are unique', async () => {
    const oracle = new SlowOracle();
    const policy = new SpeculationPolicy(settings());
    const plain = await run('plain', [], new SpeculationPolicy(settings()), prompt(5));
    const r = await run('draft', [oracle], policy, prompt(5));
    assert.deepEqual(r.tokens, plain.tokens);
    const by = r.stats.speculation.bySource['slow-oracle']!;
    assert.equal(oracle.asked.length, by.steps, 'asked once per step that verified its proposal');
    assert.equal(by.acceptedTokens, by.proposedTokens, 'an oracle is always right');
    assert.equal(r.stats.speculation.draftEvaluations, by.proposedTokens);
    assert.equal(policy.snapshot().proposeMsPerToken['slow-oracle'], 0.5);
    await assert.rejects(run('draft', [oracle, new SlowOracle()], policy, prompt(5)), /two proposers share an id/);
  });

  it('Show Stats, its charts and the next-edit figures show it by its id', async () => {
    const hunch = new HunchProposer();
    const policy = new SpeculationPolicy(settings());
    const r = await run('hybrid', [hunch], policy, prompt(9));
    const stats = new StatsCollector();
    stats.record({ at: 0, latencyMs: 10, fromCache: false, chars: 10, stats: r.stats as DecoderStats });
    const report = reportMarkdown(statsReportModel(stats, 'hybrid', null));
    assert.equal(sourceName('hunch'), 'hunch', 'a source no table names goes by its id');
    assert.match(report, /\| acceptance hunch \| \d+% \(\d+\/\d+ in \d+ proposals\) \|/);
    assert.match(policyReport(policy.snapshot()).join('\n'), /hunch: acceptance estimate, verdict \| \d+%, proposals of up to \d+ tokens pay/);
    const acceptance = sessionCharts(stats.all).find((c) => c.id === 'acceptance')!;
    assert.deepEqual(
      acceptance.series.map((s) => s.key),
      ['hunch'],
    );
    assert.ok(requestFigures({ stats: r.stats }).bySource.hunch!.proposed > 0);
  });
});
