// The lossless suite's 2-thread case (test/model/lossless.test.ts has the rest): target and draft on
// persistent threadpools. In the integration tier, which runs one file at a time: two threads of
// their own would compete with another file's.
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import { batchDrift } from '../../testbed/batchDrift';
import { divergencesAllAtTies } from '../support/losslessSuite';
import { promptCases } from '../support/prompts';

const ROOT = path.resolve(__dirname, '../..');
const EMBEDDED = { target: path.join(ROOT, 'models/tiny-code-target.gguf'), draft: path.join(ROOT, 'models/tiny-code-draft.gguf') };
const fixedProposals = { adaptive: false, draftMinConfidence: 0 };
const load = () =>
  InferenceSession.load(
    { targetModel: EMBEDDED.target, draftModel: EMBEDDED.draft, gpu: 'cpu', gpuLayers: 0, threads: 2, contextSize: 512 },
    { ...DEFAULT_SPECULATION, ...fixedProposals },
    () => undefined,
  );

// Two threads: target and draft compute on persistent threadpools (src/llama/nativeAddon.ts).
// Multi-threaded batch kernels may split sums differently from single tokens: ties allowed, as above.
describe('lossless at 2 threads, target and draft on persistent threadpools', () => {
  let session: InferenceSession;
  before(async () => {
    session = await load();
  });
  after(async () => session?.dispose());

  it('every speculative mode equals plain decoding, or differs only at a near-tie', async () => {
    assert.match(session.info.threadpool ?? '', /^persistent, 2 threads/);
    const drift = await batchDrift(session);
    const divergences = await divergencesAllAtTies(session, promptCases(20, 2), drift);
    process.stdout.write(`# 2 threads: drift ${drift}, ${divergences} of 60 runs diverged, all at near-ties\n`);
  });
});
