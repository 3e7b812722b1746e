// How the post-processing filters' golden cases are written: a document with the cursor marked by ║,
// and one test per case that runs a filter on the completion there.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { CompletionContext } from '../../src/postprocess/context';

/** The context of a document with the cursor marked by ║ (TypeScript, tabs of 4 columns unless said). */
export function at(document: string, languageId = 'typescript', tabSize = 4): CompletionContext {
  const cursor = document.indexOf('║');
  return { prefix: document.slice(0, cursor), suffix: document.slice(cursor + 1), languageId, tabSize };
}

/** A filter's golden case: `completion` at `ctx` comes out as `expected`. */
export interface FilterCase {
  name: string;
  ctx: CompletionContext;
  completion: string;
  expected: string;
}

/** One test per case (call it inside a describe). */
export function filterCases(filter: (completion: string, ctx: CompletionContext) => string, cases: readonly FilterCase[]): void {
  for (const { name, ctx, completion, expected } of cases) {
    it(name, () => assert.equal(filter(completion, ctx), expected));
  }
}
