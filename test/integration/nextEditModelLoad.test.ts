// The next-edit model of its own (issue #39, item 7) through the real worker (dist/worker.js), the
// tiny completion pair beside small random next-edit models (testbed/models.ts):
// - a file other than the target's is loaded by the first nextEdit that names it, not at the load;
//   its memory is in the diagnostics (and Show Stats' line); its prompt format comes from its own
//   GGUF metadata; it decodes on KV sequences of its own; the completion pair is unaffected;
// - the completion draft drafts for it when the vocabularies match ('hybrid' gives plain's output),
//   and not when they differ (the window copy and n-grams only);
// - the target's own file is loaded once: next edits on the pair's sequences, no second model;
// - a missing or corrupt file: a clear noSuggestion 'error', and completions still work.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { describeNextEditModel } from '../../src/stats/statsReport';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import type { CompletionRequest } from '../../src/shared/completion';
import { WorkerClient } from '../../src/worker/workerClient';
import { areaRequest } from '../support/nextEditRequests';
import { ROOT, tinyModels, WORKER, workerMissing } from '../support/tinyWorker';
import { truncateFile, writeNotGguf } from '../../testbed/ggufWriter';
import { ensureTestModel } from '../../testbed/models';
import { sourceStats } from '../../src/shared/generationStats';

const skip = workerMissing;
const MODELS = tinyModels();
const TMP = path.join(ROOT, 'test-output', 'next-edit-model-load');

/** No format forced: the next-edit model's own metadata names it. */
const request = areaRequest;
const completion: CompletionRequest = { prefix: 'export function sum(values: number[]): number {\n  let total = 0;\n  for (const value of values', suffix: '\n}\n', maxTokens: 12, mode: 'hybrid' };
/** A small model whose general.name says Sweep's layout; the embedded models' vocabulary unless mutated. */
const sweepLike = (name: string, seed: number, extra = {}) => ensureTestModel(name, { seed, dModel: 32, nLayers: 1, nHeads: 2, ffn: 64, name: 'Sweep Next Edit tiny', ...extra });

describe('the next-edit model of its own, in the worker', { skip }, () => {
  let client: WorkerClient;
  const logs: string[] = [];
  let sameVocabulary: string;
  let otherVocabulary: string;
  let before1: { text: string };
  before(async () => {
    fs.mkdirSync(TMP, { recursive: true });
    sameVocabulary = await sweepLike('nes-load-same-vocab', 81);
    otherVocabulary = await sweepLike('nes-load-other-vocab', 82, { vocabMutation: { index: 300, text: 'zz-not-the-draft' } });
    client = new WorkerClient({ workerPath: WORKER, env: { DRAFTLINE_WARM_UP: '0' }, log: (_level, message) => logs.push(message) });
    await client.request('load', { models: MODELS, speculation: DEFAULT_SPECULATION });
    before1 = await client.request('complete', { request: completion });
  });
  after(() => {
    client.dispose();
    fs.rmSync(TMP, { recursive: true, force: true });
  });

  it('is not loaded at startup; the first nextEdit that names it loads it, its format from its own metadata, its memory reported', async () => {
    const idle = await client.request('diagnostics', {});
    assert.equal(idle.nextEditModel, null, 'nothing about next edits before one is asked for');
    assert.ok(!logs.some((l) => l.includes('next-edit model')), 'not loaded at startup');

    const result = await client.request('nextEdit', { request: request(), model: sameVocabulary });
    assert.equal(result.format, 'sweep', `the format from the model's general.name: ${JSON.stringify(result.noSuggestion)}`);
    assert.notEqual(result.noSuggestion?.reason, 'noFormat');
    assert.notEqual(result.noSuggestion?.reason, 'error', JSON.stringify(result.noSuggestion));
    assert.ok(result.stats.generatedTokens > 0, JSON.stringify(result.stats));

    const d = await client.request('diagnostics', {});
    const m = d.nextEditModel!;
    assert.equal(m.state, 'loaded');
    assert.equal(m.sharesTarget, false);
    assert.equal(m.path, sameVocabulary);
    assert.equal(m.name, 'Sweep Next Edit tiny');
    assert.equal(m.sizeBytes, fs.statSync(sameVocabulary).size, 'its weights');
    assert.ok(m.kvSequences.count >= 1 && m.kvSequences.bytesPerSequence > 0, JSON.stringify(m.kvSequences));
    assert.equal(m.gpuLayers, 0, 'on the CPU, as the target');
    assert.match(m.draft, /completion draft/, 'the same vocabulary as the draft: it drafts for it');
    assert.deepEqual(
      m.sequences!.filter((s) => s.owner !== null).map((s) => s.owner),
      ['this window · next edit'],
      'the next edit decoded on a sequence of its own model',
    );
    assert.ok(!d.kvSequences!.sequences.some((s) => s.owner === 'this window · next edit'), "not on the pair's sequences");
    assert.equal(d.loadedModels, 1, 'still one loaded pair');
    assert.equal(logs.filter((l) => l.startsWith('next-edit model Sweep Next Edit tiny loaded')).length, 1, logs.join('\n'));
    // Show Stats' line: the weights and the KV sequences.
    const [label, line] = describeNextEditModel(m);
    assert.equal(label, 'Next-edit model');
    assert.match(line, /MB weights \+ \d+ KV sequences? of [\d.]+ MB, on the CPU/);

    // The completion pair is unaffected: the same completion as before it loaded.
    const after1 = await client.request('complete', { request: completion });
    assert.equal(after1.text, before1.text);
  });

  it("a second request uses the loaded model (no second load); 'hybrid' drafts with the completion draft and gives plain's output", async () => {
    const plain = await client.request('nextEdit', { request: request({ mode: 'plain' }), model: sameVocabulary });
    const hybrid = await client.request('nextEdit', { request: request({ mode: 'hybrid' }), model: sameVocabulary });
    assert.equal(hybrid.output, plain.output);
    // The draft ran (the adaptive policy may then find its proposals not worth verifying on random weights).
    assert.ok((hybrid.stats.speculation.draftEvaluations ?? 0) > 0, JSON.stringify(hybrid.stats.speculation));
    assert.equal(logs.filter((l) => l.startsWith('next-edit model Sweep Next Edit tiny loaded')).length, 1, 'loaded once');
  });

  it("another vocabulary than the draft's: the window copy and n-grams only, still plain's output", async () => {
    const plain = await client.request('nextEdit', { request: request({ mode: 'plain' }), model: otherVocabulary });
    const hybrid = await client.request('nextEdit', { request: request({ mode: 'hybrid' }), model: otherVocabulary });
    assert.equal(hybrid.output, plain.output);
    assert.equal(hybrid.stats.speculation.draftEvaluations ?? 0, 0, 'no draft ran');
    assert.equal(sourceStats(hybrid.stats.speculation, 'draft').proposedTokens, 0, 'no draft proposals');
    const m = (await client.request('diagnostics', {})).nextEditModel!;
    assert.equal(m.path, otherVocabulary, 'the file asked for replaced the one before');
    assert.match(m.draft, /window copy and n-grams/);
  });

  it("a missing or corrupt file: noSuggestion 'error' saying why, and completions still work", async () => {
    const corrupt = path.join(TMP, 'corrupt-next-edit.gguf');
    await writeNotGguf(corrupt);
    const truncated = path.join(TMP, 'truncated-next-edit.gguf');
    await truncateFile(sameVocabulary, truncated, 4096);
    for (const file of [corrupt, truncated, path.join(TMP, 'missing.gguf')]) {
      const result = await client.request('nextEdit', { request: request(), model: file });
      assert.equal(result.noSuggestion?.reason, 'error', `${file}: ${JSON.stringify(result.noSuggestion)}`);
      assert.match(result.noSuggestion.detail, new RegExp(`next-edit model ${path.basename(file).replace('.', '\\.')} could not be loaded: .+`));
      assert.deepEqual(result.edits, []);
      const m = (await client.request('diagnostics', {})).nextEditModel!;
      assert.equal(m.state, 'failed');
      assert.match(describeNextEditModel(m)[1], /not loaded — .+ \(completions are unaffected\)/);
      const c = await client.request('complete', { request: completion });
      assert.equal(c.text, before1.text, 'completions unaffected');
    }
    // Asked again with the file unchanged (every keystroke): the same answer, not another try at loading it.
    const tries = () => logs.filter((l) => l.includes('missing.gguf not loaded')).length;
    const before2 = tries();
    assert.equal((await client.request('nextEdit', { request: request(), model: path.join(TMP, 'missing.gguf') })).noSuggestion?.reason, 'error');
    assert.equal(tries(), before2);
  });
});

describe("the next-edit model is the target's file: loaded once", { skip }, () => {
  let client: WorkerClient;
  const logs: string[] = [];
  before(async () => {
    client = new WorkerClient({ workerPath: WORKER, env: { DRAFTLINE_WARM_UP: '0' }, log: (_level, message) => logs.push(message) });
    await client.request('load', { models: MODELS, speculation: DEFAULT_SPECULATION });
  });
  after(() => client.dispose());

  it('serves both tasks from their own KV sequences of the one loaded model', async () => {
    await client.request('complete', { request: completion });
    // The tiny target names no next-edit format: forced.
    const result = await client.request('nextEdit', { request: request({ format: 'sweep' }), model: MODELS.targetModel });
    assert.notEqual(result.noSuggestion?.reason, 'error', JSON.stringify(result.noSuggestion));
    assert.ok(result.stats.generatedTokens > 0);
    const d = await client.request('diagnostics', {});
    const m = d.nextEditModel!;
    assert.equal(m.sharesTarget, true);
    assert.equal(m.path, MODELS.targetModel);
    assert.equal(d.loadedModels, 1);
    assert.ok(!logs.some((l) => /^next-edit model .* loaded/.test(l)), 'no second load');
    const owners = d.kvSequences!.sequences.map((s) => s.owner);
    assert.ok(owners.includes('this window · next edit') && owners.includes('this window · completion'), owners.join(', '));
    assert.match(describeNextEditModel(m)[1], /the target's file, loaded once: no more weights/);
  });
});
