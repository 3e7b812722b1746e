// The model pairs the lossless suite runs on the CPU (test/support/losslessSuite.ts), split over four
// test files of the model tier (lossless*.test.ts) so that two can run at once, and the loader they share.
import * as path from 'node:path';
import type { ModelSettings, SpeculationSettings } from '../../src/shared/settings';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import type { writeRandomLlamaModel } from '../../testbed/ggufWriter';
import { ensureTestModel } from '../../testbed/models';
import type { Pair } from './losslessSuite';

const ROOT = path.resolve(__dirname, '../..');
export const EMBEDDED = { target: path.join(ROOT, 'models/tiny-code-target.gguf'), draft: path.join(ROOT, 'models/tiny-code-draft.gguf') };
/** The default embedded pair (v3): it copies a window far better than tiny, so long copy runs on a real model. */
const EMBEDDED_V3 = { target: path.join(ROOT, 'models/draftline-code-target.gguf'), draft: path.join(ROOT, 'models/draftline-code-draft.gguf') };

export async function loadOnCpu(target: string, draft: string, speculation: Partial<SpeculationSettings> = {}, models: Partial<ModelSettings> = {}) {
  return InferenceSession.load(
    { targetModel: target, draftModel: draft, gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 512, ...models },
    { ...DEFAULT_SPECULATION, ...speculation },
    () => undefined,
  );
}

export const random =
  (seed: number, extra: Partial<Parameters<typeof writeRandomLlamaModel>[1]> = {}) =>
  () =>
    ensureTestModel(`lossless-${seed}`, { seed, dModel: 128, nLayers: 2, nHeads: 4, ffn: 256, contextLength: 512, ...extra });

export const fixedProposals = { adaptive: false, draftMinConfidence: 0 };
export const LOSSLESS_PAIRS: Pair[] = [
  { name: 'embedded pair', target: async () => EMBEDDED.target, draft: async () => EMBEDDED.draft, prompts: 60, gpuLikeCosts: true },
  { name: 'embedded v3 pair, next-edit windows', target: async () => EMBEDDED_V3.target, draft: async () => EMBEDDED_V3.draft, prompts: 30, copyOnly: true },
  { name: 'embedded pair, non-adaptive long proposals', target: async () => EMBEDDED.target, draft: async () => EMBEDDED.draft, prompts: 30, speculation: { ...fixedProposals, maxProposal: 12 } },
  { name: 'random GQA target, its own file as a perfect draft', target: random(111, { nKvHeads: 2 }), draft: random(111, { nKvHeads: 2 }), prompts: 30, speculation: fixedProposals },
  {
    name: 'random wide target, unrelated random draft',
    target: random(404, { dModel: 256, nHeads: 8, ffn: 512 }),
    draft: random(203, { dModel: 64, nLayers: 1, ffn: 128 }),
    prompts: 20,
    speculation: fixedProposals,
    unrelated: true,
  },
  // The target's greedy tokens sampled on its device (llama.cpp backend sampling; here the CPU backend), read back as ids.
  {
    name: 'embedded pair, greedy sampled on the device, fixed verify shape 8',
    target: async () => EMBEDDED.target,
    draft: async () => EMBEDDED.draft,
    prompts: 16,
    // Not adaptive: on a CPU the device path's reductions are slow, and a loaded machine's timings led
    // the policy to propose so little that nothing was accepted and the check proved nothing.
    speculation: { ...fixedProposals, verifyShape: 'fixed', fixedShapeSize: 8 },
    models: { deviceGreedy: 'on' },
  },
  // Verify batches of one fixed size a generation, the proposal padded (speculation/verifyShape.ts): what a graph backend runs.
  {
    name: 'embedded pair, fixed verify shape 8',
    target: async () => EMBEDDED.target,
    draft: async () => EMBEDDED.draft,
    prompts: 16,
    speculation: { ...fixedProposals, verifyShape: 'fixed', fixedShapeSize: 8 },
  },
  {
    name: 'random GQA target, its own file as a perfect draft, fixed verify shape 16',
    target: random(111, { nKvHeads: 2 }),
    draft: random(111, { nKvHeads: 2 }),
    prompts: 12,
    speculation: { ...fixedProposals, verifyShape: 'fixed', fixedShapeSize: 16 },
  },
  // Token trees verified on the target's unified KV context (src/llama/unifiedContext.ts), the whole suite on it.
  {
    name: 'embedded pair, token trees on a unified context, fixed verify shape 16',
    target: async () => EMBEDDED.target,
    draft: async () => EMBEDDED.draft,
    prompts: 16,
    speculation: { ...fixedProposals, verifyShape: 'fixed', fixedShapeSize: 16 },
    models: { treeVerification: 'on' },
  },
  {
    name: 'random GQA target, its own file as a perfect draft, token trees on a unified context, fixed verify shape 8',
    target: random(111, { nKvHeads: 2 }),
    draft: random(111, { nKvHeads: 2 }),
    prompts: 12,
    speculation: { ...fixedProposals, verifyShape: 'fixed', fixedShapeSize: 8 },
    models: { treeVerification: 'on' },
  },
  {
    name: 'random tied-output MQA target, embedded draft',
    target: random(303, { tiedOutput: true, nHeads: 8, nKvHeads: 1, ffn: 128 }),
    draft: async () => EMBEDDED.draft,
    prompts: 20,
    speculation: fixedProposals,
    unrelated: true,
  },
];

/** Which of the four files runs a pair (about a quarter of the suite's time each). */
export function losslessGroup(pair: Pair): 'embedded' | 'shapes' | 'random' | 'trees' {
  if (/token trees/.test(pair.name)) return 'trees';
  if (/fixed verify shape|non-adaptive long|GQA/.test(pair.name)) return 'shapes';
  if (/^random/.test(pair.name)) return 'random';
  return 'embedded';
}
