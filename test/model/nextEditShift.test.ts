// Next-edit prompts move as the user works: the Sweep layout's file context is the lines around the
// cursor, so a request a few lines further down drops context lines at the head and adds others after
// them. The cached prompt is shifted into place (speculation/greedyEvaluator.ts planShift) instead of
// evaluated again, and decoding from the shifted cache with the window copy proposer equals plain
// decoding from it token for token.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import { sweepFormat } from '../../src/nextEdit/formats/sweep';
import type { DecodeMode, Token } from '../../src/shared/decoding';
import { SpeculationPolicy } from '../../src/speculation/policy';
import { decode } from '../../src/speculation/speculativeDecoder';
import { WindowCopyProposer } from '../../src/speculation/windowCopyProposer';
import { StopRules } from '../../src/stopping/stopRules';
import { batchDrift, tieTolerance } from '../../testbed/batchDrift';
import { ensureTestModel } from '../../testbed/models';
import { marginAfter } from '../support/losslessSuite';
import { sourceStats } from '../../src/shared/generationStats';

const ROOT = path.resolve(__dirname, '../..');

describe('next-edit prompts whose file context moved', () => {
  let session: InferenceSession;
  before(async () => {
    // A context large enough for the Sweep layout's file context (about 1,500 tokens) and windows.
    const target = await ensureTestModel('next-edit-shift', { seed: 12, dModel: 64, nLayers: 2, nHeads: 2, ffn: 128, contextLength: 4096 });
    session = await InferenceSession.load({ targetModel: target, draftModel: '', gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 4096 }, DEFAULT_SPECULATION, () => undefined);
  });
  after(() => session?.dispose());

  // A fixed copy of a source file: where its lines fall decides which requests shift, so it must not change with the code.
  const text = fs.readFileSync(path.join(ROOT, 'test/fixtures/documents/speculationPolicy.ts.txt'), 'utf8');
  const lineStart = (line: number) => text.split('\n').slice(0, line).join('\n').length + 1;
  const promptAt = (line: number) => {
    const built = sweepFormat.buildPrompt({ path: 'src/policy.ts', text, cursorOffset: lineStart(line), events: [], mode: 'plain' });
    return { tokens: session.vocabulary.tokenize(built.prompt) as Token[], window: session.vocabulary.tokenize(built.copySource) as Token[] };
  };
  const run = async (prompt: { tokens: Token[]; window: Token[] }, mode: DecodeMode) => {
    const stop = new StopRules({ detokenize: (t) => session.target.model.detokenize([...t] as never), isEndToken: () => false, maxTokens: 48 });
    const stats = await decode({
      mode,
      target: session.target.evaluator,
      prompt: prompt.tokens,
      stop,
      policy: new SpeculationPolicy({ ...DEFAULT_SPECULATION, adaptive: false }),
      proposers: mode === 'copy' ? [new WindowCopyProposer(prompt.window, prompt.tokens.length)] : [],
    });
    return { stats, tokens: [...stop.tokens] };
  };

  it('shifts the cached context into place, and copy decoding from that cache equals plain', async () => {
    let shifts = 0;
    for (const [from, to] of [
      [120, 124],
      [150, 151],
      [180, 190],
    ] as const) {
      const first = promptAt(from);
      const second = promptAt(to);
      await session.target.evaluator.truncate(0);
      await run(first, 'plain');
      const plain = await run(second, 'plain');
      assert.ok(plain.stats.promptTokensEvaluated! < second.tokens.length / 2, `evaluated ${plain.stats.promptTokensEvaluated} of ${second.tokens.length}`);
      if (plain.stats.shiftedPromptTokens) shifts++;
      await session.target.evaluator.truncate(0);
      await run(first, 'plain');
      // The window a real edit copies from: the output, but for two changed tokens, so the copy is
      // proposed, rejected at the edit, found again and accepted whatever the random weights write.
      const edited = plain.tokens.map((t, i) => (i === 10 || i === 11 ? (((t + 7) % 256) as Token) : t));
      const copied = await run({ tokens: second.tokens, window: [...edited, ...second.window] }, 'copy');
      assert.deepEqual(copied.stats.shiftedPromptTokens, plain.stats.shiftedPromptTokens);
      const at = copied.tokens.findIndex((t, i) => t !== plain.tokens[i]);
      if (at >= 0) {
        // Batched and single evaluations may part at a numerical tie of the shifted cache: read its margin there.
        await session.target.evaluator.truncate(0);
        await run(first, 'plain');
        const margin = await marginAfter(session.target.evaluator, [...second.tokens, ...plain.tokens.slice(0, at)]);
        assert.ok(margin < tieTolerance(await batchDrift(session)), `copy decoding after the move from line ${from} to ${to} parts from plain at token ${at}, margin ${margin}`);
      }
      assert.ok(sourceStats(copied.stats.speculation, 'copy').acceptedTokens > 0, 'the window was proposed and partly accepted');
    }
    assert.ok(shifts >= 2, `${shifts} of 3 requests shifted`);
  });
});
