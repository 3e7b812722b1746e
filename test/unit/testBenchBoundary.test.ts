// Issue #49 item 5: tests and the bench do not import each other. What both use (the GGUF writer, the
// test models and real vocabularies, the next-edit case reader, synthetic text, batch-drift measurement,
// the llama-server launcher, the editor harness) lives in testbed/, which imports neither. The bench's
// own tests sit beside it (bench/test/unit, bench/test/model) and may import bench/, never test/.
// Every relative import counts: type-only, re-exports and import() too.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { filesUnder, relativeImports } from '../support/relativeImports';

const ROOT = path.resolve(__dirname, '../..');
const rel = (file: string) => path.relative(ROOT, file).split(path.sep).join('/');

/** The folders each side may not reach: a file under the key may not import a file under any of these. */
/** What the boundary reads: sources, not caches, results or test data. */
const SOURCE_NAMES = /\.(ts|mts|cts|mjs|js)$/;
const SKIPPED_FOLDERS = new Set(['cache', 'results', 'fixtures']);

export const FORBIDDEN: Record<string, string[]> = {
  test: ['bench'],
  bench: ['test'],
  testbed: ['test', 'bench'],
};

export interface Import {
  /** Both relative to the repository root, with '/'. */
  from: string;
  to: string;
}

/** "from → to" for each import that crosses a forbidden line. */
export function crossings(imports: Import[], forbidden = FORBIDDEN): string[] {
  const top = (p: string) => p.split('/')[0]!;
  return imports.filter(({ from, to }) => forbidden[top(from)]?.includes(top(to))).map(({ from, to }) => `${from} → ${to}`);
}

/** Every relative import of these files, resolved to the file it lands on (or its bare path when none). */
function importsOf(files: string[]): Import[] {
  return files.flatMap((file) => relativeImports(file).map(({ specifier, target }) => ({ from: rel(file), to: rel(target ?? path.resolve(path.dirname(file), specifier)) })));
}

describe('the checker', () => {
  it('fails test → bench, bench → test and testbed → either, naming both files', () => {
    const found = crossings([
      { from: 'test/unit/a.test.ts', to: 'bench/corpus.ts' },
      { from: 'bench/run.ts', to: 'test/support/models.ts' },
      { from: 'bench/test/unit/b.test.ts', to: 'test/support/fakeModel.ts' },
      { from: 'testbed/models.ts', to: 'bench/stats.ts' },
      { from: 'testbed/models.ts', to: 'test/support/prompts.ts' },
    ]);
    assert.deepEqual(found, [
      'test/unit/a.test.ts → bench/corpus.ts',
      'bench/run.ts → test/support/models.ts',
      'bench/test/unit/b.test.ts → test/support/fakeModel.ts',
      'testbed/models.ts → bench/stats.ts',
      'testbed/models.ts → test/support/prompts.ts',
    ]);
  });

  it('passes imports of testbed/, src/ and their own side', () => {
    const found = crossings([
      { from: 'test/unit/a.test.ts', to: 'testbed/ggufWriter.ts' },
      { from: 'bench/run.ts', to: 'testbed/batchDrift.ts' },
      { from: 'bench/test/model/c.test.ts', to: 'bench/edits.ts' },
      { from: 'testbed/realVocab.ts', to: 'src/gguf/ggufReader.ts' },
      { from: 'testbed/realVocab.ts', to: 'scripts/llamaSource.mjs' },
      { from: 'test/e2e/x.e2e.test.ts', to: 'test/e2e/expected.ts' },
    ]);
    assert.deepEqual(found, []);
  });
});

describe('test/, bench/ and testbed/ do not import across', () => {
  const files = ['test', 'bench', 'testbed'].flatMap((dir) => filesUnder(path.join(ROOT, dir), SOURCE_NAMES, SKIPPED_FOLDERS));
  const imports = importsOf(files);

  it('reads all three trees', () => {
    for (const dir of ['test/', 'bench/', 'testbed/', 'bench/test/']) {
      assert.ok(
        imports.some((i) => i.from.startsWith(dir)),
        `no imports read under ${dir}`,
      );
    }
    assert.ok(imports.length > 300, `found only ${imports.length} imports`);
  });

  it('no test/ file imports bench/, no bench/ file imports test/, and testbed/ imports neither', () => {
    assert.deepEqual(crossings(imports), [], 'move what both sides use to testbed/, or the test beside the bench (bench/test/unit or bench/test/model)');
  });
});
