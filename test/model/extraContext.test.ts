// The extra-context ring (src/prompt/extraContextRing.ts): bounded, newest last, near-duplicates
// replaced, stable order (adding appends), budgeted selection that leaves out the current file.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { ExtraContextRing, jaccard, MAX_CHUNK_CHARS } from '../../src/prompt/extraContextRing';
import { DEFAULT_SPECULATION, EXTRA_CONTEXT_KEY, InferenceSession } from '../../src/inference/inferenceSession';
import { embeddedPairPaths } from '../../src/models/embedded';
import { minifiedJs } from '../../testbed/syntheticText';

const file = (n: number, tag = 'a') => Array.from({ length: n }, (_, i) => `const ${tag}${i} = ${i};`).join('\n');

describe('extra context ring', () => {
  it('keeps at most maxChunks chunks of at most chunkLines lines, evicting the oldest', () => {
    const ring = new ExtraContextRing({ maxChunks: 3, chunkLines: 4, similarity: 0.9 });
    for (let i = 0; i < 5; i++) assert.equal(ring.add(`f${i}.ts`, file(10, `v${i}_`), 5), true);
    assert.deepEqual(
      ring.chunks.map((c) => c.path),
      ['f2.ts', 'f3.ts', 'f4.ts'],
    );
    for (const c of ring.chunks) assert.equal(c.text.split('\n').length, 4);
    // Centered on the line asked for.
    assert.match(ring.chunks[2].text, /v4_5 = 5/);
  });

  it('a chunk near the start or end of a file is cut to the file, not padded', () => {
    const ring = new ExtraContextRing({ maxChunks: 4, chunkLines: 8, similarity: 0.9 });
    ring.add('short.ts', file(3), 0);
    assert.equal(ring.chunks[0].text, file(3));
    ring.add('long.ts', file(50, 'b'), 49);
    assert.deepEqual(ring.chunks[1].text.split('\n').at(-1), 'const b49 = 49;');
  });

  it('replaces a near-duplicate and ignores the same chunk again (the prompt does not change)', () => {
    const ring = new ExtraContextRing({ maxChunks: 8, chunkLines: 64, similarity: 0.9 });
    const text = file(40);
    ring.add('a.ts', text);
    ring.add('b.ts', file(40, 'b'));
    const v = ring.version;
    assert.equal(ring.add('a.ts', text), false);
    assert.equal(ring.version, v);
    // One line changed of 40: 39/41 similar > 0.9: replaces the old chunk, now newest.
    ring.add('a.ts', text.replace('const a7 = 7;', 'const a7 = 70;'));
    assert.deepEqual(
      ring.chunks.map((c) => c.path),
      ['b.ts', 'a.ts'],
    );
    assert.match(ring.chunks[1].text, /a7 = 70/);
    assert.ok(ring.version > v);
    // Blank text adds nothing.
    assert.equal(ring.add('c.ts', '\n  \n'), false);
  });

  it('adding a chunk keeps the earlier chunks in place (their KV stays valid)', () => {
    const ring = new ExtraContextRing({ maxChunks: 8, chunkLines: 16, similarity: 0.9 });
    ring.add('a.ts', file(10, 'a'));
    ring.add('b.ts', file(10, 'b'));
    const before = ring.chunks;
    ring.add('c.ts', file(10, 'c'));
    assert.deepEqual(ring.chunks.slice(0, 2), before);
  });

  it('keeps no chunk of minified code (#27: its 64 lines can be a whole file)', () => {
    const ring = new ExtraContextRing();
    assert.equal(ring.add('bundle.min.js', minifiedJs(1_900_000, 1)), false);
    assert.equal(ring.add('app.min.js', minifiedJs(300_000, 1000), 500), false);
    assert.equal(ring.chunks.length, 0);
    // Hand-written code of the same line count is kept.
    assert.equal(ring.add('a.ts', file(1000), 500), true);
    assert.ok(ring.chunks[0]!.text.length <= MAX_CHUNK_CHARS);
  });

  it('removes a file and clears', () => {
    const ring = new ExtraContextRing();
    ring.add('a.ts', file(5));
    ring.add('b.ts', file(5, 'b'));
    ring.removeFile('a.ts');
    assert.deepEqual(
      ring.chunks.map((c) => c.path),
      ['b.ts'],
    );
    ring.clear();
    assert.equal(ring.chunks.length, 0);
    assert.equal(jaccard(new Set(['x']), new Set(['x', 'y'])), 0.5);
  });

  it("a request's chunks reach the prompt and the n-gram index (kept while the ring keeps them)", async () => {
    const pair = embeddedPairPaths(path.resolve(__dirname, '../..'), 'tiny');
    const session = await InferenceSession.load({ targetModel: pair.target, draftModel: '', gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 256 }, DEFAULT_SPECULATION, () => undefined);
    try {
      const util = 'export function twice(x: number): number {\n  return 2 * x;\n}\n';
      const request = {
        prefix: 'const y = ',
        suffix: ';\n',
        maxTokens: 4,
        mode: 'ngram' as const,
        languageId: 'typescript',
        extraContext: { files: [{ path: 'util.ts', text: util }], path: 'main.ts', maxTokens: 64 },
      };
      const withContext = await session.complete(request);
      assert.ok(withContext.stats.extraContext && withContext.stats.extraContext.files === 1 && withContext.stats.extraContext.tokens > 0, JSON.stringify(withContext.stats.extraContext));
      assert.equal(session.documents.documentText(`${EXTRA_CONTEXT_KEY}util.ts`), util);
      const without = await session.complete({ ...request, extraContext: undefined });
      assert.equal(without.stats.extraContext, undefined);
      assert.ok(without.stats.promptTokens < withContext.stats.promptTokens);
    } finally {
      await session.dispose();
    }
  });
});
