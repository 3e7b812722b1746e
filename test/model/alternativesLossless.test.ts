// Alternatives computed in-process (issue #32, InferenceSession.alternatives) are lossless: each is
// the target's plain greedy decoding after the forced prefix greedy[0..i) + its own token at the
// branch point, token by token, in every speculative mode, over many prompts, on the embedded pair
// and on random-weight models; differences only at measured numerical ties (as lossless.test.ts).
// The branch point is where plain decoding's top-two margin is smallest.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CompletionRequest, LocalCompletionResult } from '../../src/shared/completion';
import type { DecodeMode } from '../../src/shared/decoding';
import type { ModelSettings, SpeculationSettings } from '../../src/shared/settings';
import type { InferenceSession } from '../../src/inference/inferenceSession';
import { EMBEDDED, fixedProposals, loadOnCpu, random } from '../support/losslessPairs';
import { promptCases } from '../support/prompts';
import { assumeGpuLikeCosts } from '../support/gpuLikeCosts';
import { batchDrift, judgeDivergence, tieTolerance, topTwoAfter } from '../../testbed/batchDrift';
import { splitTrailingBlank } from '../../src/prompt/fimPrompt';
import type { RankedNext } from '../../src/speculation/greedyEvaluator';
import { sourceStats } from '../../src/shared/generationStats';

/** The top tokens after `history`, its last token evaluated alone (the cache emptied before and after). */
async function rankedAfter(session: InferenceSession, history: number[], top: number): Promise<RankedNext> {
  const ev = session.target.evaluator;
  await ev.reset();
  for (let i = 0; i < history.length - 1; i += 256) await ev.append(history.slice(i, Math.min(i + 256, history.length - 1)), 0);
  const [ranked] = await ev.appendRanked(history.slice(-1), 1, top);
  await ev.reset();
  return ranked;
}

const MODES: DecodeMode[] = ['plain', 'ngram', 'draft', 'hybrid'];

interface Pair {
  name: string;
  target: () => Promise<string>;
  draft: () => Promise<string>;
  prompts: number;
  speculation?: Partial<SpeculationSettings>;
  models?: Partial<ModelSettings>;
  /** Its adaptive policy weighs GPU-like costs, so that it proposes on a CPU too. */
  gpuLikeCosts?: boolean;
}

const pairs: Pair[] = [
  { name: 'embedded pair', target: async () => EMBEDDED.target, draft: async () => EMBEDDED.draft, prompts: 14, gpuLikeCosts: true },
  // The target on its unified KV context (where it verifies token trees): ranks read there, every
  // offer verified (the adaptive policy may rightly find on a CPU that these few prompts' guesses do not pay).
  {
    name: 'embedded pair, the target on its unified KV context',
    target: async () => EMBEDDED.target,
    draft: async () => EMBEDDED.draft,
    prompts: 6,
    models: { treeVerification: 'on' },
    speculation: fixedProposals,
  },
  { name: 'random GQA target, its own file as a perfect draft', target: random(111, { nKvHeads: 2 }), draft: random(111, { nKvHeads: 2 }), prompts: 10, speculation: fixedProposals },
  {
    name: 'random wide target, unrelated random draft',
    target: random(404, { dModel: 256, nHeads: 8, ffn: 512 }),
    draft: random(203, { dModel: 64, nLayers: 1, ffn: 128 }),
    prompts: 8,
    speculation: fixedProposals,
  },
];

const request = (c: { prefix: string; suffix: string }, mode: DecodeMode, extra: Partial<CompletionRequest> = {}): CompletionRequest => ({
  prefix: c.prefix,
  suffix: c.suffix,
  maxTokens: 24,
  mode,
  ...extra,
});

for (const pair of pairs)
  describe(`alternatives are lossless: ${pair.name}`, () => {
    let session: InferenceSession;
    let drift = 0;
    let runs = 0;
    let divergences = 0;
    before(async () => {
      session = await loadOnCpu(await pair.target(), await pair.draft(), pair.speculation, pair.models);
      if (pair.gpuLikeCosts) assumeGpuLikeCosts(session);
      if (pair.models?.treeVerification === 'on') assert.equal(session.info.treeVerification?.used, true, JSON.stringify(session.info.treeVerification));
      drift = await batchDrift(session);
    });
    after(async () => {
      process.stdout.write(`# ${pair.name}: batch drift ${drift.toExponential(2)}, ${divergences} of ${runs} alternatives differ from plain decoding, each at a near-tie\n`);
      assert.ok(divergences <= Math.max(2, runs * 0.05), `${divergences} of ${runs} alternatives diverged`);
      await session?.dispose();
    });

    /** `alternative` equals plain decoding after its forced prefix, token for token (up to a measured tie). */
    const checkAgainstPlain = async (alternative: LocalCompletionResult, forced: number[], req: CompletionRequest, what: string) => {
      runs++;
      const plain = await session.completeAfter({ ...req, mode: 'plain' }, forced);
      assert.deepEqual(plain.tokens.slice(0, forced.length), forced.slice(0, plain.tokens.length), `${what}: the reference keeps the forced prefix`);
      const at = alternative.tokens.findIndex((t, i) => t !== plain.tokens[i]);
      if (at < 0 && alternative.tokens.length === plain.tokens.length) {
        assert.equal(alternative.text, plain.text, what);
        assert.equal(alternative.stats.stopReason, plain.stats.stopReason, what);
        return;
      }
      assert.ok(drift > 0, `${what}: ${JSON.stringify(alternative.text)} vs plain ${JSON.stringify(plain.text)}`);
      divergences++;
      const prompt = [...session.promptFor(req), ...forced];
      const verdict = await judgeDivergence(session, prompt, plain.tokens.slice(forced.length), alternative.tokens.slice(forced.length), drift);
      assert.ok(verdict.tie, `${what}: diverged at token ${at} with a logit margin ${verdict.margin} (drift ${drift})`);
    };

    it('each alternative equals plain greedy decoding after greedy[0..i) + its token, in every mode, remembered greedy or not', async () => {
      let alternatives = 0;
      let proposed = 0;
      for (const [n, c] of promptCases(pair.prompts, 32 + pair.prompts).entries()) {
        // Both branch scopes (the default, first line, and anywhere), a prompt each in turn.
        session.alternativesScope = Math.floor(n / 2) % 2 ? 'completion' : 'firstLine';
        for (const mode of MODES) {
          const req = request(c, mode, n % 3 === 2 ? { singleLine: true } : {});
          // Every other prompt, the greedy completion is not remembered: alternatives decode it first.
          let shown = n % 2 === 0 ? await session.complete(req) : undefined;
          if (!shown) await session.resetCaches();
          const result = await session.alternatives(req, 2);
          // What the alternatives branch off is the completion in the request's mode, the one the user
          // saw: plain's tokens, unless a near-tie fell the other way in a verify batch (judged as any
          // completion is). Not remembered, it is what the alternatives decoded first, from a clean cache.
          if (!shown) {
            await session.resetCaches();
            shown = await session.complete(req);
          }
          await checkAgainstPlain(shown, [], req, `${mode} completion on ${c.name}`);
          const own = shown;
          if (own.tokens.length === 0) {
            assert.equal(result.completions.length, 0, 'an empty greedy completion has no alternatives');
            assert.match(result.limitedBy ?? '', /empty/);
            continue;
          }
          assert.ok(result.branch, `${mode} on ${c.name}: a branch point (${result.limitedBy})`);
          const i = result.branch.tokenIndex;
          assert.ok(i >= 0 && i < own.tokens.length, `branch ${i} inside the ${own.tokens.length}-token completion`);
          const texts = new Set([own.text]);
          for (const alternative of result.completions as LocalCompletionResult[]) {
            const what = `${mode} alternative on ${c.name}`;
            alternatives++;
            assert.deepEqual(alternative.tokens.slice(0, i), own.tokens.slice(0, i), `${what}: keeps the greedy tokens before the branch`);
            assert.notEqual(alternative.tokens[i], own.tokens[i], `${what}: another token at the branch`);
            assert.ok(!texts.has(alternative.text) && alternative.text !== '', `${what}: a text of its own, ${JSON.stringify(alternative.text)}`);
            texts.add(alternative.text);
            proposed += sourceStats(alternative.stats.speculation, 'draft').proposedTokens + sourceStats(alternative.stats.speculation, 'ngram').proposedTokens;
            await checkAgainstPlain(alternative, alternative.tokens.slice(0, i + 1), req, what);
          }
        }
      }
      session.alternativesScope = 'firstLine';
      assert.ok(alternatives >= pair.prompts * 2, `${alternatives} alternatives checked`);
      assert.ok(proposed > 0, 'speculation ran in the alternatives');
      process.stdout.write(`# ${pair.name}: ${alternatives} alternatives checked, ${proposed} tokens proposed in them\n`);
    });

    it('the branch point is where plain decoding is least certain: its margin there is the smallest along the completion (scope: anywhere)', async () => {
      let checked = 0;
      // Set per test: the other tests set theirs.
      session.alternativesScope = 'completion';
      for (const c of promptCases(4, 7)) {
        const req = request(c, 'hybrid', { maxTokens: 12 });
        const greedy = await session.complete({ ...req, mode: 'plain' });
        if (greedy.tokens.length === 0) continue;
        const result = await session.alternatives(req, 2);
        if (!result.branch) continue;
        const prompt = session.promptFor(req);
        // Margins measured token by token through the library's own probabilities (not the reader under test).
        const margins: number[] = [];
        for (let j = 0; j < greedy.tokens.length; j++) {
          const [first, second] = await topTwoAfter(session, [...prompt, ...greedy.tokens.slice(0, j)]);
          margins.push(first - second);
        }
        const tolerance = Math.max(tieTolerance(drift), 1e-3);
        const at = result.branch.tokenIndex;
        assert.ok(Math.abs(margins[at] - result.branch.margin) <= tolerance, `margin at the branch ${result.branch.margin} vs ${margins[at]} measured`);
        // A position less certain than the branch point is passed over only when it offers no usable
        // other token: its runners-up end generation, or would rewrite the blank the user typed.
        const { blank } = splitTrailingBlank(req.prefix);
        for (let j = 0; j < margins.length; j++) {
          if (!(margins[j] < result.branch.margin - tolerance)) continue;
          const ranked = await rankedAfter(session, [...prompt, ...greedy.tokens.slice(0, j)], 4);
          for (const token of ranked.tokens.filter((t) => t !== greedy.tokens[j])) {
            const writesBlank = (text: string) => text.startsWith(blank) || blank.startsWith(text);
            const keepsBlank = !blank || !writesBlank(session.detokenize(greedy.tokens.slice(0, j + 1))) || writesBlank(session.detokenize([...greedy.tokens.slice(0, j), token]));
            const usable = !session.isEndToken(token) && keepsBlank;
            assert.ok(!usable, `position ${j} (margin ${margins[j]}, token ${token}) passed over for ${at} (margin ${result.branch.margin})`);
          }
        }
        checked++;
      }
      assert.ok(checked >= 2, `${checked} branch points checked`);
      session.alternativesScope = 'firstLine';
    });

    it("scoped to the first line (the default), alternatives branch before the greedy completion's first line with content is complete, and are still exact", async () => {
      session.alternativesScope = 'firstLine';
      let branched = 0;
      try {
        for (const c of promptCases(6, 91)) {
          const req = request(c, 'hybrid');
          const greedy = await session.complete(req);
          const result = await session.alternatives(req, 2);
          if (!result.branch) continue;
          branched++;
          const before = session.detokenize(greedy.tokens.slice(0, result.branch.tokenIndex));
          assert.ok(!/\S[^\n]*\n/.test(before), `branch ${result.branch.tokenIndex} after a complete first line: ${JSON.stringify(before)}`);
          for (const alternative of result.completions as LocalCompletionResult[]) {
            await checkAgainstPlain(alternative, alternative.tokens.slice(0, result.branch.tokenIndex + 1), req, `first-line scope on ${c.name}`);
          }
        }
      } finally {
        session.alternativesScope = 'firstLine';
      }
      assert.ok(branched >= 3, `${branched} branched`);
    });

    it('a cancelled request stops between alternatives and says so; the next one is exact', async () => {
      session.alternativesScope = 'firstLine';
      const [c] = promptCases(1, 77);
      const req = request(c, 'hybrid');
      await session.complete(req);
      const controller = new AbortController();
      controller.abort();
      const cancelled = await session.alternatives(req, 2, controller.signal);
      assert.equal(cancelled.limitedBy, 'cancelled');
      assert.equal(cancelled.completions.length, 0);
      const again = await session.alternatives(req, 2);
      for (const alternative of again.completions as LocalCompletionResult[]) {
        await checkAgainstPlain(alternative, alternative.tokens.slice(0, again.branch!.tokenIndex + 1), req, 'after cancellation');
      }
    });
  });
