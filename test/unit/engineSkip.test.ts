// Why a document gets no completions: the engine says it in words the editor can show (the status
// bar), before anyone types and for each skipped request.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, SkippedCompletion, type EngineDocument } from '../../src/engine/completionEngine';

const neverCalled = { complete: () => assert.fail('the model was asked') };

function document(uri: string, languageId: string, text = 'hello world\n'): EngineDocument {
  return { uri, languageId, offset: text.length, length: text.length, slice: (start, end) => text.slice(start, end) };
}

describe('no completion, and why', () => {
  const engine = new CompletionEngine(neverCalled, { ...DEFAULT_ENGINE_SETTINGS, disabledLanguages: ['scminput', 'plaintext', 'markdown'] });

  it('an untitled file is plain text: the reason says so and how to change it', async () => {
    const untitled = document('untitled:Untitled-1', 'plaintext');
    const result = await engine.complete(untitled);
    assert.ok(result instanceof SkippedCompletion);
    assert.equal(result.reason, 'language');
    assert.match(result.message, /completions are off for plaintext \(draftline\.disabledLanguages\): an untitled file is plain text until you pick its language/);
    assert.deepEqual(engine.skipReason(untitled), result);
  });

  it('a disabled language names the setting; an enabled one has no reason', () => {
    assert.equal(engine.skipReason(document('file:///notes.md', 'markdown'))?.message, 'completions are off for markdown (draftline.disabledLanguages)');
    assert.equal(engine.skipReason(document('file:///a.ts', 'typescript')), null);
    assert.equal(engine.skipReason(document('untitled:Untitled-2', 'python')), null);
  });

  it('a document over the size limit, and completions turned off', () => {
    const small = new CompletionEngine(neverCalled, { ...DEFAULT_ENGINE_SETTINGS, maxDocumentChars: 5 });
    assert.equal(small.skipReason(document('file:///big.ts', 'typescript'))?.reason, 'tooLarge');
    const off = new CompletionEngine(neverCalled, { ...DEFAULT_ENGINE_SETTINGS, enabled: false });
    assert.match(off.skipReason(document('file:///a.ts', 'typescript'))!.message, /turned off \(Draftline: Toggle Completions\)/);
  });
});
