// What the engine returns for a document and cursor when called directly, in-process, with the
// extension's default settings (flash attention pinned as in the editor's settings) and the embedded
// models: the reference the real editor must match.
import * as path from 'node:path';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS, SkippedCompletion } from '../../src/engine/completionEngine';
import { DEFAULT_SPECULATION, InferenceSession } from '../../src/inference/inferenceSession';
import { embeddedPairPaths } from '../../src/models/embedded';

const ROOT = path.resolve(__dirname, '../..');

export async function directCompletion(text: string, offset: number, languageId: string, tabSize: number): Promise<string> {
  return withDirectEngine(async (engine) => {
    const result = await engine.complete(directDocument(text, offset, languageId, tabSize));
    return result instanceof SkippedCompletion ? '' : result.text;
  });
}

/** The suggestions Alt+] cycles through at this cursor (issue #32), the greedy one first, as the engine offers them called directly. */
export async function directAlternatives(text: string, offset: number, languageId: string, tabSize: number, count = 2): Promise<string[]> {
  return withDirectEngine(async (engine) => {
    const result = await engine.alternatives(directDocument(text, offset, languageId, tabSize), count);
    return result instanceof SkippedCompletion ? [] : result.items.map((i) => i.text);
  });
}

const directDocument = (text: string, offset: number, languageId: string, tabSize: number) => ({
  uri: 'file:///direct',
  languageId,
  offset,
  length: text.length,
  slice: (s: number, e: number) => text.slice(s, e),
  tabSize,
  insertSpaces: true,
});

async function withDirectEngine<T>(use: (engine: CompletionEngine) => Promise<T>): Promise<T> {
  const embedded = embeddedPairPaths(ROOT);
  const session = await InferenceSession.load(
    // flashAttention as the editor is set in extension.e2e.test.ts (EDITOR_SETTINGS).
    { targetModel: embedded.target, draftModel: embedded.draft, gpu: 'auto', gpuLayers: 'auto', threads: 1, contextSize: 2048, flashAttention: 'on' },
    DEFAULT_SPECULATION,
    () => undefined,
  );
  try {
    // No time budget: it cuts where the clock says, and the editor's worker and this engine run on clocks of their own.
    return await use(new CompletionEngine(session, { ...DEFAULT_ENGINE_SETTINGS, timeBudgetMs: 0 }));
  } finally {
    await session.dispose();
  }
}
