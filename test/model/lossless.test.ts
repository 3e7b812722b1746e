// Lossless, proven on real GGUF models: every speculative mode yields exactly the target's plain
// greedy tokens, over many prompts (real code and adversarial text), on the embedded pair and on
// random-weight models of several shapes (GQA, f32, tied output) with drafts of every quality.
// The suite itself is test/support/losslessSuite.ts (test/integration/vulkan.test.ts runs it on Vulkan).
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ModelSettings, SpeculationSettings } from '../../src/shared/types';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import type { writeRandomLlamaModel } from '../support/ggufWriter';
import { promptCases } from '../support/prompts';
import { ensureTestModel } from '../support/models';
import { batchDrift } from '../support/batchDrift';
import { divergencesAllAtTies, losslessSuite, type Pair } from '../support/losslessSuite';

const ROOT = path.resolve(__dirname, '../..');
const EMBEDDED = { target: path.join(ROOT, 'models/tiny-code-target.gguf'), draft: path.join(ROOT, 'models/tiny-code-draft.gguf') };
/** The default embedded pair (v3): it copies a window far better than tiny, so long copy runs on a real model. */
const EMBEDDED_V3 = { target: path.join(ROOT, 'models/draftline-code-target.gguf'), draft: path.join(ROOT, 'models/draftline-code-draft.gguf') };
const log = () => undefined;

async function load(target: string, draft: string, speculation: Partial<SpeculationSettings> = {}, models: Partial<ModelSettings> = {}) {
  return InferenceSession.load({ targetModel: target, draftModel: draft, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 512, ...models }, { ...DEFAULT_SPECULATION, ...speculation }, log);
}

const random =
  (seed: number, extra: Partial<Parameters<typeof writeRandomLlamaModel>[1]> = {}) =>
  () =>
    ensureTestModel(`lossless-${seed}`, { seed, dModel: 128, nLayers: 2, nHeads: 4, ffn: 256, contextLength: 512, ...extra });

const fixedProposals = { adaptive: false, draftMinConfidence: 0 };
const pairs: Pair[] = [
  { name: 'embedded pair', target: async () => EMBEDDED.target, draft: async () => EMBEDDED.draft, prompts: 60 },
  { name: 'embedded v3 pair, next-edit windows', target: async () => EMBEDDED_V3.target, draft: async () => EMBEDDED_V3.draft, prompts: 30, copyOnly: true },
  { name: 'embedded pair, non-adaptive long proposals', target: async () => EMBEDDED.target, draft: async () => EMBEDDED.draft, prompts: 30, speculation: { ...fixedProposals, maxProposal: 12 } },
  { name: 'random GQA target, its own file as a perfect draft', target: random(111, { nKvHeads: 2 }), draft: random(111, { nKvHeads: 2 }), prompts: 30, speculation: fixedProposals },
  {
    name: 'random wide target, unrelated random draft',
    target: random(404, { dModel: 256, nHeads: 8, ffn: 512 }),
    draft: random(203, { dModel: 64, nLayers: 1, ffn: 128 }),
    prompts: 30,
    speculation: fixedProposals,
    unrelated: true,
  },
  // The target's greedy tokens sampled on its device (llama.cpp backend sampling; here the CPU backend), read back as ids.
  {
    name: 'embedded pair, greedy sampled on the device, fixed verify shape 8',
    target: async () => EMBEDDED.target,
    draft: async () => EMBEDDED.draft,
    prompts: 16,
    speculation: { verifyShape: 'fixed', fixedShapeSize: 8 },
    models: { deviceGreedy: 'on' },
  },
  // Verify batches of one fixed size a generation, the proposal padded (speculation/verifyShape.ts): what a graph backend runs.
  { name: 'embedded pair, fixed verify shape 8', target: async () => EMBEDDED.target, draft: async () => EMBEDDED.draft, prompts: 16, speculation: { verifyShape: 'fixed', fixedShapeSize: 8 } },
  {
    name: 'random GQA target, its own file as a perfect draft, fixed verify shape 16',
    target: random(111, { nKvHeads: 2 }),
    draft: random(111, { nKvHeads: 2 }),
    prompts: 12,
    speculation: { ...fixedProposals, verifyShape: 'fixed', fixedShapeSize: 16 },
  },
  {
    name: 'random tied-output MQA target, embedded draft',
    target: random(303, { tiedOutput: true, nHeads: 8, nKvHeads: 1, ffn: 128 }),
    draft: async () => EMBEDDED.draft,
    prompts: 30,
    speculation: fixedProposals,
    unrelated: true,
  },
];

for (const pair of pairs) losslessSuite(pair, { load });

// Where llama.cpp's CPU kernels are NOT batch-invariant (F32 weights, some widths), batched and
// single-token logits differ by ~1e-4..1e-3. Then a speculative run may differ from plain decoding,
// but only where the target's top two candidates are that close: a numerical tie, never a decoder bug.
describe('lossless up to numerical ties on a model whose kernels are not batch-invariant (F32)', () => {
  let session: InferenceSession;
  before(async () => {
    session = await load(await random(505, { nLayers: 3, f16: false })(), await random(111, { nKvHeads: 2 })(), fixedProposals);
  });
  after(async () => session?.dispose());

  it('every divergence from plain decoding sits on a near-tie of the top two logits', async () => {
    const drift = await batchDrift(session);
    assert.ok(drift > 0 && drift < 0.01, `drift ${drift}`);
    const divergences = await divergencesAllAtTies(session, promptCases(40, 505), drift);
    process.stdout.write(`# F32 model: ${divergences} of 120 runs diverged, all at near-ties\n`);
  });
});
