// Lossless, proven on real GGUF models: every speculative mode yields exactly the target's plain
// greedy tokens, over many prompts (real code and adversarial text), on the embedded pair and on
// random-weight models of several shapes (GQA, f32, tied output) with drafts of every quality.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CompletionRequest, DecodeMode, SpeculationSettings } from '../../src/engine/types';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import { writeRandomLlamaModel } from '../support/ggufWriter';
import { promptCases } from '../support/prompts';
import { ensureTestModel } from '../support/models';

const ROOT = path.resolve(__dirname, '../..');
const EMBEDDED = { target: path.join(ROOT, 'models/tiny-code-target.gguf'), draft: path.join(ROOT, 'models/tiny-code-draft.gguf') };
const log = () => undefined;

async function load(target: string, draft: string, speculation: Partial<SpeculationSettings> = {}) {
  return InferenceSession.load(
    { targetModel: target, draftModel: draft, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 512 },
    { ...DEFAULT_SPECULATION, ...speculation },
    log,
  );
}

function request(c: { prefix: string; suffix: string }, mode: DecodeMode, extra: Partial<CompletionRequest> = {}): CompletionRequest {
  return { prefix: c.prefix, suffix: c.suffix, maxTokens: 40, mode, ...extra };
}

interface Pair {
  name: string;
  target: () => Promise<string>;
  draft: () => Promise<string>;
  prompts: number;
  speculation?: Partial<SpeculationSettings>;
}

const random = (seed: number, extra: Partial<Parameters<typeof writeRandomLlamaModel>[1]> = {}) => () =>
  ensureTestModel(`lossless-${seed}`, { seed, dModel: 64, nLayers: 2, nHeads: 4, ffn: 128, contextLength: 512, ...extra });

const pairs: Pair[] = [
  { name: 'embedded pair', target: async () => EMBEDDED.target, draft: async () => EMBEDDED.draft, prompts: 60 },
  { name: 'embedded pair, non-adaptive long proposals', target: async () => EMBEDDED.target, draft: async () => EMBEDDED.draft, prompts: 30, speculation: { adaptive: false, maxProposal: 12, draftMinConfidence: 0 } },
  { name: 'random GQA target, its own file as a perfect draft', target: random(101, { nHeads: 4, nKvHeads: 2, dModel: 96 }), draft: random(101, { nHeads: 4, nKvHeads: 2, dModel: 96 }), prompts: 30, speculation: { adaptive: false, draftMinConfidence: 0 } },
  { name: 'random f32 target, unrelated random draft', target: random(202, { f16: false, dModel: 128, nLayers: 3, ffn: 256 }), draft: random(203, { dModel: 48, nLayers: 1, ffn: 96 }), prompts: 30, speculation: { adaptive: false, draftMinConfidence: 0 } },
  { name: 'random tied-output target, embedded draft', target: random(303, { tiedOutput: true, nHeads: 8, nKvHeads: 1, dModel: 128 }), draft: async () => EMBEDDED.draft, prompts: 30 },
];

for (const pair of pairs) {
  describe(`lossless: ${pair.name}`, () => {
    let session: InferenceSession;
    before(async () => {
      session = await load(await pair.target(), await pair.draft(), pair.speculation);
    });
    after(async () => session?.dispose());

    it('ngram, draft and hybrid equal plain greedy decoding token for token', async () => {
      let accepted = 0;
      for (const c of promptCases(pair.prompts, pair.prompts * 7 + pair.name.length)) {
        const plain = await session.complete(request(c, 'plain'));
        assert.equal(plain.stats.targetEvaluations, Math.max(0, plain.tokens.length - (plain.stats.stopReason === 'eos' ? 0 : 1)), 'plain: one evaluation per token');
        for (const mode of ['ngram', 'draft', 'hybrid'] as const) {
          const spec = await session.complete(request(c, mode));
          assert.deepEqual(spec.tokens, plain.tokens, `${mode} differs on ${c.name}: ${JSON.stringify(spec.text)} vs ${JSON.stringify(plain.text)}`);
          assert.equal(spec.text, plain.text);
          assert.equal(spec.stats.stopReason, plain.stats.stopReason);
          accepted += spec.stats.bySource.draft.acceptedTokens + spec.stats.bySource.ngram.acceptedTokens;
        }
      }
      // The check is only meaningful if proposals were actually accepted.
      assert.ok(accepted > 0, 'some proposals were accepted');
    });

    it('stop rules (stop strings, single line, max lines, block end) cut at the same token in every mode', async () => {
      for (const c of promptCases(12, 99)) {
        const plainFree = await session.complete(request(c, 'plain', { maxTokens: 60 }));
        const stop = plainFree.text.slice(10, 13);
        for (const extra of [
          { stop: stop ? [stop] : [] },
          { singleLine: true },
          { maxLines: 2 },
          { stopAtBlockEnd: true, languageId: 'typescript', tabSize: 2 },
          { maxTokens: 3 },
        ] as Partial<CompletionRequest>[]) {
          const plain = await session.complete(request(c, 'plain', { maxTokens: 60, ...extra }));
          for (const mode of ['ngram', 'draft', 'hybrid'] as const) {
            const spec = await session.complete(request(c, mode, { maxTokens: 60, ...extra }));
            assert.deepEqual(spec.tokens, plain.tokens, `${mode} ${JSON.stringify(extra)} on ${c.name}`);
            assert.equal(spec.text, plain.text);
            assert.equal(spec.stats.stopReason, plain.stats.stopReason);
          }
        }
      }
    });

    it('cancellation in the middle of a verify step returns a prefix of the exact output, and the next request is exact', async () => {
      const evaluator = session.target.evaluator;
      const original = evaluator.append.bind(evaluator);
      for (const [i, c] of promptCases(8, 5).entries()) {
        const plain = await session.complete(request(c, 'plain', { maxTokens: 48 }));
        const controller = new AbortController();
        let calls = 0;
        evaluator.append = async (input, outputs, conf) => {
          if (++calls === 2 + (i % 3)) controller.abort();
          return original(input, outputs, conf);
        };
        try {
          const partial = await session.complete(request(c, 'hybrid', { maxTokens: 48 }), controller.signal);
          assert.deepEqual(partial.tokens, plain.tokens.slice(0, partial.tokens.length));
          if (calls > 2 + (i % 3)) assert.fail('evaluated after the abort');
        } finally {
          evaluator.append = original;
        }
        const again = await session.complete(request(c, 'hybrid', { maxTokens: 48 }));
        assert.deepEqual(again.tokens, plain.tokens);
      }
    });
  });
}
