// The bench's replay of a perfect next-edit model (bench/editReplay.ts) on a real, tiny random-weight
// GGUF model: the batches are the model's, acceptance is decided against the true updated window.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CountingTarget, ISSUE_CPU_VERIFY_COST, countReplay, h100VerifyCost, replayPerfectModel, tableVerifyCost } from '../../editReplay';
import { replayRivals } from '../../countedReplay';
import { DEFAULT_SPECULATION, InferenceSession } from '../../../src/inference/inferenceSession';
import { mulberry32 } from '../../../testbed/ggufWriter';
import { ensureTestModel } from '../../../testbed/models';

describe('replay of a perfect next-edit model', () => {
  let session: InferenceSession;
  before(async () => {
    const model = await ensureTestModel('edit-replay', { seed: 39, dModel: 64, nLayers: 1, nHeads: 2, ffn: 128, contextLength: 1024 });
    session = await InferenceSession.load({ targetModel: model, draftModel: '', gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 1024 }, DEFAULT_SPECULATION, () => undefined);
  });
  after(async () => session?.dispose());

  it('verifies the true window in far fewer real batches than plain decoding, and reports its bound', async () => {
    const rand = mulberry32(7);
    const token = () => 10 + Math.floor(rand() * 2000);
    const prompt = Array.from({ length: 120 }, token);
    const source = Array.from({ length: 200 }, token);
    // The next edit: a few tokens replaced at 60, a line's worth inserted at 140.
    const expected = [...source.slice(0, 60), token(), token(), ...source.slice(62, 140), ...Array.from({ length: 8 }, token), ...source.slice(140)];
    const result = await replayPerfectModel({ target: session.target.evaluator, prompt, expected, copySource: source, repeats: 2 });
    assert.equal(result.tokens, expected.length);
    assert.equal(result.plain.evaluations, expected.length, 'plain: one evaluation per token');
    assert.ok(result.plain.batches.every((b) => b === 1));
    assert.ok(result.replay.tokensPerEvaluation > 8, `${result.replay.tokensPerEvaluation.toFixed(1)} tokens per evaluation`);
    assert.ok(result.replay.acceptedTokens > expected.length - 30);
    assert.ok(Math.max(...result.replay.batches) === 33, 'proposals grow to 32 in a copy run');
    assert.ok(result.plain.ms > 0 && result.replay.ms > 0);
    assert.ok(result.bound.speedup > 1.5, `bound ${result.bound.speedup}`);
    assert.ok(result.batchMs[1]! > 0);
    process.stdout.write(
      `# replay: ${result.replay.tokensPerEvaluation.toFixed(1)} tokens/evaluation, ${result.speedup.toFixed(2)}x plain measured (tiny model), bound ${result.bound.speedup.toFixed(2)}x under the issue's CPU cost\n`,
    );
    // The cache is left usable: a second replay on it gives the same evaluations.
    const again = await replayPerfectModel({ target: session.target.evaluator, prompt, expected, copySource: source });
    assert.equal(again.replay.evaluations, result.replay.evaluations);
  });

  it("replays llama-server's ngram types, ported, on the same output: every run writes the true window", async () => {
    const rand = mulberry32(8);
    const token = () => 10 + Math.floor(rand() * 2000);
    const source = Array.from({ length: 300 }, token);
    const prompt = [...Array.from({ length: 40 }, token), ...source, token()];
    const expected = [...source.slice(0, 100), token(), token(), token(), ...source.slice(103)];
    const result = await replayPerfectModel({ target: session.target.evaluator, prompt, expected, copySource: source, rivals: replayRivals() });
    const simple = result.rivals['ngram-simple']!;
    const mod = result.rivals['ngram-mod']!;
    // ngram-simple drafts 48 (the 12 tokens before in the prompt): batches of 49 while it copies.
    assert.ok(simple.batches.includes(49), `ngram-simple batches ${simple.batches.join(',')}`);
    assert.ok(simple.tokensPerEvaluation > 5 && simple.acceptedTokens > 200);
    // ngram-mod drafts 64 where the chain is long enough (at least 48).
    assert.ok(mod.batches.includes(65), `ngram-mod batches ${mod.batches.join(',')}`);
    assert.ok(mod.batches.filter((b) => b > 1 && b < 49).length <= 1, 'no draft shorter than 48 but one cut at the end of the request');
    assert.ok(result.replay.tokensPerEvaluation > 5);
    for (const r of [simple, mod]) assert.ok(r.ms > 0 && r.speedup > 0);
  });

  it('counts the replay under a cost table: a flat one gives the ratio of evaluations, a steep one less', async () => {
    const rand = mulberry32(9);
    const token = () => 10 + Math.floor(rand() * 2000);
    const cases = Array.from({ length: 4 }, () => {
      const source = Array.from({ length: 200 }, token);
      const prompt = [...Array.from({ length: 30 }, token), ...source, token()];
      return { prompt, copySource: source, expected: [...source.slice(0, 80), token(), token(), ...source.slice(82)] };
    });
    const flat = await countReplay(cases, () => 1, replayRivals());
    assert.equal(flat.cases, 4);
    assert.ok(flat.copy > 4 && flat.tokensPerEvaluation > 4, `flat: ${flat.copy.toFixed(2)}x, ${flat.tokensPerEvaluation.toFixed(1)} tokens per evaluation`);
    assert.ok(flat.rivals['ngram-simple']! > 1 && flat.rivals['ngram-mod']! > 1);
    const steep = await countReplay(cases, (b) => b, replayRivals());
    assert.ok(steep.copy < flat.copy && steep.copy <= 1.05, `a batch costing a step a token leaves nothing to gain (${steep.copy.toFixed(2)}x)`);
    const target = new CountingTarget((b) => 2 * b);
    await target.append([1, 2, 3], 3);
    assert.equal(target.clock, 6);
  });

  it('the cost tables: the issue CPU table interpolated, and an H100', () => {
    const cpu = tableVerifyCost();
    for (const [b, r] of ISSUE_CPU_VERIFY_COST) assert.equal(cpu(b), r);
    assert.ok(Math.abs(cpu(6) - (2.19 + 3.49) / 2) < 1e-9);
    assert.ok(cpu(33) > 10.3 && cpu(33) < 10.7);
    assert.equal(h100VerifyCost(1), 1);
    assert.ok(Math.abs(h100VerifyCost(33) - 2.92) < 1e-9);
  });
});
