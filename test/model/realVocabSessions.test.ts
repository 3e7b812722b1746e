// End to end on real vocabularies (issue #37): random-weight models carrying each family's real
// tokenizer (testbed/realVocab.ts) loaded through InferenceSession as the worker loads them: a
// completion writes no special token's text, the model's own stop token ends it, speculation is
// lossless with a draft of the same vocabulary, and the draft/target check accepts a padded
// vocabulary with an unpadded one and refuses other families with the message a user reads.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { inspectModelFile } from '../../src/gguf/modelFileCheck';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import type { SpeculationSettings } from '../../src/shared/settings';
import { batchDrift, marginAtDivergence, tieTolerance } from '../../testbed/batchDrift';
import { losslessSuite, request } from '../support/losslessSuite';
import { promptCases } from '../support/prompts';
import { realVocabModel, TINY_BODY, type VariantName } from '../../testbed/realVocab';

const log = () => undefined;
const fixedProposals = { adaptive: false, draftMinConfidence: 0 };

function load(target: string, draft: string, speculation: Partial<SpeculationSettings> = fixedProposals) {
  return InferenceSession.load({ targetModel: target, draftModel: draft, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 512 }, { ...DEFAULT_SPECULATION, ...speculation }, log);
}

interface Family {
  variant: VariantName;
  label: RegExp;
  /** A stop token the model's completion must end at (one llama.cpp does not know as end-of-generation where there is one). */
  stop: string;
  /** Token texts that must never reach the editor. */
  special: string[];
}

const FAMILIES: Family[] = [
  { variant: 'qwen2.5-coder-1.5b', label: /Qwen2\.5-Coder/, stop: '<|fim_pad|>', special: ['<|fim_prefix|>', '<|fim_suffix|>', '<|fim_middle|>', '<|fim_pad|>', '<|file_sep|>', '<|endoftext|>'] },
  { variant: 'codellama', label: /CodeLlama/, stop: '▁<EOT>', special: ['<PRE>', '<SUF>', '<MID>', '<EOT>'] },
  { variant: 'deepseek-coder', label: /DeepSeek-Coder/, stop: '<|EOT|>', special: ['<｜fim▁begin｜>', '<｜fim▁hole｜>', '<｜fim▁end｜>', '<|EOT|>', '<｜end▁of▁sentence｜>'] },
  { variant: 'starcoder2', label: /StarCoder2/, stop: '<file_sep>', special: ['<fim_prefix>', '<fim_suffix>', '<fim_middle>', '<fim_pad>', '<file_sep>', '<|endoftext|>'] },
];

const REQUEST = { prefix: 'def area(r):\n    return', suffix: '\n\nprint(area(2))\n', maxTokens: 24 } as const;

for (const family of FAMILIES) {
  describe(`${family.variant}: a random-weight model on its real vocabulary`, () => {
    let session: InferenceSession;
    let tokens: string[];
    before(async () => {
      const file = await realVocabModel(family.variant);
      tokens = (await inspectModelFile(file)).tokens;
      session = await load(file, file);
    });
    after(async () => session?.dispose());

    it('loads with its family template and its own file as the draft', () => {
      assert.match(session.info.promptTemplate ?? '', family.label);
      assert.equal(session.info.draftProblem, null);
      assert.ok(session.info.draft, 'the draft is loaded');
    });

    it('speculation with its own file as the draft equals plain decoding (up to numerical ties)', async () => {
      // The whole lossless suite runs on the padded Qwen2.5-Coder pair below; here each family's tokenizer in a few prompts.
      let drift: number | undefined;
      for (const c of promptCases(2, 37)) {
        const plain = await session.complete(request(c, 'plain', {}, 24));
        for (const mode of ['ngram', 'draft', 'hybrid'] as const) {
          const spec = await session.complete(request(c, mode, {}, 24));
          if (spec.tokens.join() === plain.tokens.join()) continue;
          // Measured only when needed: on a 150k-token vocabulary it takes minutes.
          drift ??= await batchDrift(session);
          const margin = await marginAtDivergence(session, session.promptFor(request(c, mode)), plain.tokens, spec.tokens);
          assert.ok(margin < tieTolerance(drift), `${mode} on ${c.name} diverged with a logit margin of ${margin} (drift ${drift})`);
        }
      }
    });

    it('completes without writing a special token', async () => {
      for (const mode of ['plain', 'hybrid'] as const) {
        const result = await session.complete({ ...REQUEST, mode });
        assert.ok(result.tokens.length > 0, `${mode}: wrote tokens`);
        for (const t of result.tokens) assert.ok(!session.isEndToken(t), `${mode}: a stop token (${tokens[t]}) is not part of the completion`);
        for (const s of family.special) assert.ok(!result.text.includes(s), `${mode}: ${JSON.stringify(result.text)} has no ${s}`);
      }
    });

    it(`ends at ${family.stop} when the model writes it`, async () => {
      const request = { ...REQUEST, mode: 'plain' as const };
      const last = session.promptFor(request).at(-1)!;
      const stop = tokens.indexOf(family.stop);
      assert.ok(stop >= 0);
      // A model that repeats its last input token (tied output, large embeddings, a weak residual
      // branch), with the stop token's embedding a copy of that token's a little larger: it writes
      // the stop token first.
      const echo = await realVocabModel(family.variant, {
        ...TINY_BODY,
        seed: 38,
        dModel: 64,
        nHeads: 4,
        ffn: 64,
        tiedOutput: true,
        embeddingScale: 1,
        residualScale: 0.05,
        embeddingCopies: [{ from: last, to: stop, scale: 1.05 }],
      });
      const echoSession = await load(echo, echo);
      try {
        for (const mode of ['plain', 'draft', 'hybrid'] as const) {
          const result = await echoSession.complete({ ...request, mode });
          assert.deepEqual(result.tokens, [], `${mode}: nothing written before the stop`);
          assert.equal(result.text, '');
          assert.equal(result.stats.stopReason, 'eos', mode);
        }
      } finally {
        await echoSession.dispose();
      }
    });
  });
}

// Qwen2.5-Coder's 0.5B/1.5B/3B have 151,936 embedding rows, the 7B 152,064 (the same tokens, padded):
// llama.cpp accepts the pair (sizes within 128), and so must the check before it.
losslessSuite(
  {
    name: 'Qwen2.5-Coder 7B vocabulary (152,064 rows) with a 1.5B-vocabulary draft (151,936)',
    target: () => realVocabModel('qwen2.5-coder-7b'),
    draft: () => realVocabModel('qwen2.5-coder-1.5b'),
    prompts: 3,
    speculation: fixedProposals,
  },
  { load: (target, draft, speculation) => load(target, draft, speculation), maxTokens: 24, stopCases: 1, cancelCases: 1, driftAtFirstDivergence: true },
);

describe('drafts of another family are refused with a message that says why', () => {
  const cases: { target: VariantName; draft: VariantName; reason: string }[] = [
    { target: 'codellama', draft: 'qwen2.5-coder-1.5b', reason: 'tokenizer types differ: target uses "llama", draft uses "gpt2"' },
    { target: 'starcoder2', draft: 'refact', reason: 'token 5 differs: "<repo_name>" vs "<filename>"' },
  ];
  for (const c of cases) {
    it(`${c.draft} as the draft of ${c.target}`, async () => {
      const target = await realVocabModel(c.target);
      const draft = await realVocabModel(c.draft);
      const session = await load(target, draft);
      try {
        assert.equal(session.info.draft, null, 'no draft loaded');
        assert.equal(session.info.draftProblem, `Draft model ${path.basename(draft)} cannot be used with ${path.basename(target)}: ${c.reason}. Speculation uses n-gram reuse only.`);
        // It still completes, speculating from n-grams.
        const result = await session.complete({ ...REQUEST, mode: 'hybrid' });
        assert.ok(result.tokens.length > 0);
      } finally {
        await session.dispose();
      }
    });
  }
});
