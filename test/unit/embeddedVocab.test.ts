// Random targets are written with the embedded vocabulary. The bench kit carries the v3 pair alone,
// so the vocabulary must also be readable where tiny-code-target.gguf is absent.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { embeddedVocabFile, readVocabFromGguf } from '../support/ggufWriter';

const MODELS = path.resolve(__dirname, '../../models');

describe('embedded vocabulary', () => {
  it('is the same in the tiny target and the v3 draft', async () => {
    const tiny = await readVocabFromGguf(path.join(MODELS, 'tiny-code-target.gguf'));
    const v3 = await readVocabFromGguf(path.join(MODELS, 'draftline-code-draft.gguf'));
    assert.ok(tiny.tokens.length > 1000);
    assert.deepEqual(v3, tiny);
  });

  it('is read from the v3 draft where the tiny pair is absent', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-vocab-'));
    try {
      fs.symlinkSync(path.join(MODELS, 'draftline-code-draft.gguf'), path.join(dir, 'draftline-code-draft.gguf'));
      assert.equal(embeddedVocabFile(dir), path.join(dir, 'draftline-code-draft.gguf'));
      fs.symlinkSync(path.join(MODELS, 'tiny-code-target.gguf'), path.join(dir, 'tiny-code-target.gguf'));
      assert.equal(embeddedVocabFile(dir), path.join(dir, 'tiny-code-target.gguf'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
