// The benchmark sees a task as the editor would: the engine's document view and the ghost text a
// raw completion becomes after the engine's post-processing.
import type { EngineDocument } from '../src/engine/completionEngine';
import type { CompletionRequest } from '../src/shared/types';
import { defaultFilters, postprocess } from '../src/postprocess';
import type { BenchTask } from './corpus';

export function engineDocument(task: BenchTask): EngineDocument {
  return {
    uri: `bench:${task.file}`,
    languageId: /\.tsx?$/.test(task.file) ? 'typescript' : 'javascript',
    offset: task.offset,
    tabSize: 2,
    insertSpaces: true,
    length: task.text.length,
    slice: (s, e) => task.text.slice(s, e),
  };
}

/** The ghost text a raw completion becomes: the same post-processing as CompletionEngine.complete. */
export function shownText(raw: string, request: CompletionRequest, doc: EngineDocument, maxLines: number): string {
  const ctx = { prefix: request.prefix, suffix: request.suffix, languageId: doc.languageId, tabSize: doc.tabSize, insertSpaces: doc.insertSpaces };
  return postprocess(raw, ctx, defaultFilters(maxLines));
}
