// Random targets are written with the embedded vocabulary. The bench kit carries the tiny draft alone
// of the tiny pair and the v3 pair apart, so the vocabulary must also be readable from either.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { embeddedVocabFile, readVocabFromGguf } from '../../testbed/ggufWriter';

const MODELS = path.resolve(__dirname, '../../models');

describe('embedded vocabulary', () => {
  it('is the same in the tiny target, the tiny draft and the v3 draft', async () => {
    const tiny = await readVocabFromGguf(path.join(MODELS, 'tiny-code-target.gguf'));
    assert.ok(tiny.tokens.length > 1000);
    for (const other of ['tiny-code-draft.gguf', 'draftline-code-draft.gguf']) assert.deepEqual(await readVocabFromGguf(path.join(MODELS, other)), tiny, other);
  });

  it('is read from the first of them that is there', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-vocab-'));
    try {
      const add = (file: string) => fs.symlinkSync(path.join(MODELS, file), path.join(dir, file));
      add('draftline-code-draft.gguf');
      assert.equal(embeddedVocabFile(dir), path.join(dir, 'draftline-code-draft.gguf'));
      add('tiny-code-draft.gguf');
      assert.equal(embeddedVocabFile(dir), path.join(dir, 'tiny-code-draft.gguf'));
      add('tiny-code-target.gguf');
      assert.equal(embeddedVocabFile(dir), path.join(dir, 'tiny-code-target.gguf'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
