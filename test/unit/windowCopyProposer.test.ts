// The next-edit window's copy proposer (speculation/windowCopyProposer.ts): where it copies from after
// each kind of edit, its length schedule, and (against pure stand-in models) that decoding with it
// is exactly plain greedy decoding. Real GGUF models: test/unit/losslessCopy.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DecodeMode, Token } from '../../src/shared/decoding';
import type { SpeculationSettings } from '../../src/shared/settings';
import type { CopyAcceptanceModel } from '../../src/speculation/copyAcceptance';
import { CostModel } from '../../src/speculation/costModel';
import { chainOffer } from '../../src/speculation/proposer';
import { SpeculationPolicy } from '../../src/speculation/policy';
import { decode } from '../../src/speculation/speculativeDecoder';
import { WindowCopyProposer, type WindowCopyOptions } from '../../src/speculation/windowCopyProposer';
import { StopRules } from '../../src/stopping/stopRules';
import { mulberry32 } from '../../testbed/ggufWriter';
import { FAKE_VOCAB as VOCAB, FakeEvaluator, fakeDetokenize as detokenize, hashModel } from '../support/fakeModel';
import { sourceStats } from '../../src/shared/generationStats';

const NL = 1;
const PROMPT: Token[] = [900, 901, 902, 903];

/** A window of `lines` lines of distinct tokens (2..), each ended by NL: like code, tokens rarely repeat. */
function windowTokens(lines: number, perLine = 6, start = 10): Token[] {
  const out: Token[] = [];
  let t = start;
  for (let l = 0; l < lines; l++) {
    for (let i = 0; i < perLine; i++) out.push(t++);
    out.push(NL);
  }
  return out;
}

interface Step {
  /** Output tokens before the step (the pending token included). */
  at: number;
  proposal: Token[];
  accepted: number;
}

/**
 * The decoder's loop with a perfect model of `output`: the first token comes from the prompt, then each
 * step verifies [pending, ...proposal] and keeps the matching prefix plus the model's next token.
 */
function simulate(source: Token[], output: Token[], options: Partial<WindowCopyOptions> = {}, maxLen = 64): Step[] {
  const proposer = new WindowCopyProposer(source, PROMPT.length, options);
  const steps: Step[] = [];
  let i = 1;
  while (i < output.length) {
    const history = [...PROMPT, ...output.slice(0, i)];
    const offer = proposer.offer(history, Math.min(maxLen, output.length - i));
    // The schedule's proposal (a non-adaptive policy verifies exactly that much of the offer).
    const proposal = offer?.tokens.slice(0, offer.scheduled) ?? [];
    let accepted = 0;
    while (accepted < proposal.length && proposal[accepted] === output[i + accepted]) accepted++;
    proposer.record(proposal.length, accepted);
    steps.push({ at: i, proposal, accepted });
    i += accepted + 1;
  }
  return steps;
}

/** The proposal made once the output holds `at` tokens. */
const stepAt = (steps: Step[], at: number) => steps.find((s) => s.at === at);

describe('window copy proposer', () => {
  it('continues where the last accepted token was copied from, doubling its length in a copy run up to its cap', () => {
    const source = windowTokens(20);
    const steps = simulate(source, source);
    assert.deepEqual(
      steps.slice(0, 6).map((s) => s.proposal.length),
      [4, 8, 16, 32, 32, 32],
    );
    for (const s of steps) assert.deepEqual(s.proposal, source.slice(s.at, s.at + s.proposal.length), `copies from the pointer at ${s.at}`);
    assert.ok(steps.every((s) => s.accepted === s.proposal.length));
    // 140 tokens in 1 + 6 evaluations (the last steps cut at the window's end).
    assert.ok(steps.length <= 7, `${steps.length} steps`);
  });

  it('goes back to its shortest length after a rejection, and proposes nothing at the window end', () => {
    const source = windowTokens(6);
    const output = [...source];
    output[30] = 500; // replaced: the proposal covering position 30 is rejected there
    const steps = simulate(source, output);
    const rejected = steps.findIndex((s) => s.accepted < s.proposal.length);
    assert.ok(rejected >= 0);
    const after = steps.slice(rejected + 1).find((s) => s.proposal.length > 0)!;
    assert.equal(after.proposal.length, 4, 'short again near the divergence');
    const proposer = new WindowCopyProposer(source, PROMPT.length);
    assert.equal(proposer.offer([...PROMPT, ...source], 10), null, 'the whole window copied: nothing left to copy');
    // Past the window: the output goes on (a closing marker) and nothing is copied.
    assert.equal(proposer.offer([...PROMPT, ...source, 700], 10), null);
  });

  it('re-synchronises after an inserted line at the line after it (the output returns to the window)', () => {
    const source = windowTokens(8);
    const at = 3 * 7; // a line boundary
    const inserted = [600, 601, 602, NL];
    const output = [...source.slice(0, at), ...inserted, ...source.slice(at)];
    const steps = simulate(source, output);
    // At the inserted line's end the output's last tokens (…NL) are found just before the pointer.
    const resumed = stepAt(steps, at + inserted.length);
    assert.ok(resumed, 'a step right after the inserted line');
    assert.deepEqual(resumed.proposal.slice(0, 4), source.slice(at, at + 4));
    assert.equal(resumed.accepted, resumed.proposal.length);
  });

  it('re-synchronises after a deletion: the first token after it is found a little ahead of the pointer', () => {
    const source = windowTokens(8);
    const output = [...source.slice(0, 20), ...source.slice(25)];
    const steps = simulate(source, output);
    // The output holds source[0, 20) and source[25]: the proposal continues at source[26].
    const step = stepAt(steps, 21);
    assert.ok(step, 'a step right after the first token past the deletion');
    assert.deepEqual(step.proposal, source.slice(26, 26 + step.proposal.length));
    assert.ok(step.accepted > 0);
  });

  it('re-synchronises after a replacement one token after it, and copies the rest', () => {
    const source = windowTokens(8);
    const output = [...source];
    output.splice(20, 2, 650, 651, 652); // two tokens replaced by three
    const steps = simulate(source, output);
    // source[22] follows the replacement: once the output holds it, the copy resumes at source[23].
    const step = stepAt(steps, 24);
    assert.ok(step, JSON.stringify(steps.map((s) => [s.at, s.proposal.length, s.accepted])));
    assert.deepEqual(step.proposal.slice(0, 2), source.slice(23, 25));
    const accepted = steps.reduce((t, s) => t + s.accepted, 0);
    assert.ok(accepted >= output.length - 12, `${accepted} of ${output.length} tokens copied`);
  });

  it('prefers the occurrence nearest after the pointer; far away only with a longer match', () => {
    // Two identical lines: after a divergence on the first, a 1-token suffix found in both must
    // re-synchronise on the first (near), not the second.
    const line = [20, 21, 22, 23, 24, NL];
    const source = [...line, 30, 31, NL, ...line, 40, 41, NL];
    const proposer = new WindowCopyProposer(source, PROMPT.length);
    // Output: 20 21 then 99 (diverges at source[2]), then 23: found at 4 (near) and 13 (far).
    assert.ok(proposer.offer([...PROMPT, 20, 21], 8));
    proposer.record(4, 0);
    proposer.offer([...PROMPT, 20, 21, 99], 8);
    const p = proposer.offer([...PROMPT, 20, 21, 99, 23], 8);
    assert.deepEqual(p?.tokens.slice(0, 2), [24, NL]);
    assert.equal(proposer.position, 4);
    // A far match needs 3 tokens and 2 more than the near one: a long suffix from far away wins.
    const far = windowTokens(30);
    const jumper = new WindowCopyProposer(far, PROMPT.length);
    jumper.offer([...PROMPT, far[0]], 8);
    const jump = jumper.offer([...PROMPT, far[0], ...far.slice(150, 154)], 8);
    assert.deepEqual(jump?.tokens.slice(0, 3), far.slice(154, 157));
    // A 2-token suffix from far away does not.
    const stay = new WindowCopyProposer(far, PROMPT.length);
    stay.offer([...PROMPT, far[0]], 8);
    assert.equal(stay.offer([...PROMPT, far[0], 800, ...far.slice(150, 152)], 8), null);
  });
});

/** A model that rewrites the window after the prompt as `expected` says, else (after any other history) hashes. */
function rewriter(promptLength: number, expected: Token[], seed: number, noise = 0) {
  const h = hashModel(seed, VOCAB - 1, 3);
  const coin = hashModel(seed ^ 0x5bd1e995, 1000, 5);
  return (history: readonly Token[]): Token => {
    const i = history.length - promptLength;
    const onTrack = i >= 0 && i < expected.length && history.slice(promptLength).every((t, j) => t === expected[j]);
    if (onTrack && coin(history) >= noise * 1000) return expected[i];
    return h(history);
  };
}

function randomEdit(rand: () => number, source: Token[]): Token[] {
  const out = [...source];
  for (let e = 0; e < 1 + Math.floor(rand() * 3); e++) {
    const at = Math.floor(rand() * out.length);
    const kind = Math.floor(rand() * 3);
    const fresh = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => 2 + Math.floor(rand() * (VOCAB - 3)));
    if (kind === 0) out.splice(at, 0, ...fresh);
    else if (kind === 1) out.splice(at, 1 + Math.floor(rand() * 4));
    else out.splice(at, 1 + Math.floor(rand() * 3), ...fresh);
  }
  return out;
}

async function run(
  mode: DecodeMode,
  model: (h: readonly Token[]) => Token,
  prompt: Token[],
  source: Token[],
  spec: Partial<SpeculationSettings> = {},
  maxTokens = 120,
  copy: Partial<WindowCopyOptions> = {},
) {
  const target = new FakeEvaluator(model);
  const stop = new StopRules({ detokenize, isEndToken: (t) => t === 0, maxTokens });
  const settings: SpeculationSettings = { maxProposal: 8, ngramMinMatch: 2, ngramMaxMatch: 6, draftMinConfidence: 0, adaptive: false, lookahead: false, ...spec };
  const stats = await decode({
    mode,
    target,
    prompt,
    stop,
    policy: new SpeculationPolicy(settings),
    proposers: mode === 'plain' ? [] : [new WindowCopyProposer(source, prompt.length, copy)],
  });
  return { tokens: [...stop.tokens], stats };
}

describe('decoding with the window copy proposer equals plain greedy decoding (stand-in models)', () => {
  it('on 300 edited windows, noisy rewriters and unrelated models, fixed and adaptive policy', async () => {
    const rand = mulberry32(39);
    let accepted = 0;
    let proposed = 0;
    let evaluations = 0;
    let tokens = 0;
    for (let c = 0; c < 300; c++) {
      const source = Array.from({ length: 30 + Math.floor(rand() * 90) }, () => 2 + Math.floor(rand() * (VOCAB - 2)));
      const prompt = [1, ...source.slice(0, 10 + Math.floor(rand() * 20)), 1];
      const expected = [...randomEdit(rand, source), 0];
      const kind = c % 3;
      const model = kind === 2 ? hashModel(c, VOCAB, 3) : rewriter(prompt.length, expected, c, kind === 0 ? 0 : 0.05);
      const plain = await run('plain', model, prompt, source);
      for (const mode of ['copy', 'hybrid'] as const) {
        // Every fourth case knows where the cursor is: its offers are weighed by their distance from it.
        const cursor = c % 4 === 0 ? Math.floor(rand() * source.length) : undefined;
        const spec = await run(mode, model, prompt, source, { adaptive: c % 2 === 0 }, 120, { cursor });
        assert.deepEqual(spec.tokens, plain.tokens, `${mode} on case ${c}`);
        assert.equal(spec.stats.stopReason, plain.stats.stopReason);
        accepted += sourceStats(spec.stats.speculation, 'copy').acceptedTokens;
        proposed += sourceStats(spec.stats.speculation, 'copy').proposedTokens;
        if (kind === 0) {
          evaluations += spec.stats.speculation.targetEvaluations;
          tokens += spec.tokens.length;
        }
      }
    }
    assert.ok(accepted > 0 && proposed > 0);
    // A perfect rewriter of a lightly edited window: several tokens per target evaluation.
    assert.ok(tokens / evaluations > 4, `${(tokens / evaluations).toFixed(2)} tokens per evaluation`);
    process.stdout.write(`# copy: ${accepted}/${proposed} accepted; perfect rewriter ${(tokens / evaluations).toFixed(2)} tokens per evaluation\n`);
  });

  it('the policy turns the copy off when it does not pay (an unrelated model), and retries now and then', async () => {
    const rand = mulberry32(7);
    const source = Array.from({ length: 200 }, () => 2 + Math.floor(rand() * (VOCAB - 2)));
    const adaptive: SpeculationSettings = { maxProposal: 8, ngramMinMatch: 2, ngramMaxMatch: 6, draftMinConfidence: 0, adaptive: true, lookahead: false };
    const policy = new SpeculationPolicy(adaptive);
    // Measured CPU costs (issue #39): V(k)/V(1).
    const ratio: Record<number, number> = { 1: 1, 2: 1.67, 3: 1.93, 4: 2.19, 5: 2.52, 8: 3.49, 16: 5.64, 32: 10.3 };
    for (let i = 0; i < 5; i++) for (const [b, r] of Object.entries(ratio)) policy.cost.recordTarget(Number(b), 10 * r);
    const model = hashModel(3, VOCAB, 3);
    const target = new FakeEvaluator(model);
    const stop = new StopRules({ detokenize, isEndToken: () => false, maxTokens: 400 });
    const stats = await decode({ mode: 'copy', target, prompt: [1, 2, 3], stop, policy, proposers: [new WindowCopyProposer(source, 3)] });
    const copy = sourceStats(stats.speculation, 'copy');
    assert.ok(copy.steps < 40, `${copy.steps} copy proposals in 400 tokens`);
    // What it learned of the copy: a copy resumed on a one-token match is written off at the CPU's
    // costs (judged by a cost model that has only those: the fake target's own timings, near zero for
    // any batch, taught this policy's otherwise).
    const learned = policy.model('copy') as CopyAcceptanceModel;
    assert.ok(learned.phases.firstRate(false, 1) < 0.1);
    const cpu = new CostModel();
    for (const [b, r] of Object.entries(ratio)) cpu.recordTarget(Number(b), 10 * r);
    const judge = new SpeculationPolicy(adaptive, cpu, policy.acceptance);
    judge.register(Object.assign(new WindowCopyProposer(source, 3), { acceptanceModel: () => learned }));
    assert.equal(judge.bestLength('copy', 32, chainOffer(source.slice(0, 32), { inRun: false, agreement: 1 })), 0);
  });
});
