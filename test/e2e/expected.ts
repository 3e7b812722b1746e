// What the engine returns for a document and cursor when called directly, in-process, with the
// extension's default settings (flash attention pinned as in the editor's settings) and the embedded
// models: the reference the real editor must match.
import * as path from 'node:path';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, SkippedCompletion } from '../../src/engine/completionEngine';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import { embeddedPairPaths } from '../../src/models/embedded';

const ROOT = path.resolve(__dirname, '../..');

export async function directCompletion(text: string, offset: number, languageId: string, tabSize: number): Promise<string> {
  const embedded = embeddedPairPaths(ROOT);
  const session = await InferenceSession.load(
    // flashAttention as the editor is set in extension.e2e.test.ts (EDITOR_SETTINGS).
    { targetModel: embedded.target, draftModel: embedded.draft, gpu: 'auto', gpuLayers: 'auto', threads: 1, contextSize: 2048, flashAttention: 'on' },
    DEFAULT_SPECULATION,
    () => undefined,
  );
  try {
    const engine = new CompletionEngine(session, { ...DEFAULT_ENGINE_SETTINGS });
    const result = await engine.complete({ uri: 'file:///direct', languageId, offset, length: text.length, slice: (s, e) => text.slice(s, e), tabSize, insertSpaces: true });
    return result instanceof SkippedCompletion ? '' : result.text;
  } finally {
    await session.dispose();
  }
}
