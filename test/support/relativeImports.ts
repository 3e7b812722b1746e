// What the import-direction tests (test/unit/layerDirection.test.ts, test/unit/testBenchBoundary.test.ts)
// read: the source files of a tree, and each file's relative imports resolved to the file they land
// on. Type-only imports, re-exports and import() count too (TypeScript's own pre-processor finds them).
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

/** The files under `dir` whose names match `names`, skipping folders named in `skip`. */
export function filesUnder(dir: string, names: RegExp, skip: ReadonlySet<string> = new Set()): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return skip.has(e.name) ? [] : filesUnder(p, names, skip);
    return names.test(e.name) ? [p] : [];
  });
}

/** `file`'s relative imports: each specifier and the file it resolves to (.ts, index.ts or as written), if any. */
export function relativeImports(file: string): { specifier: string; target: string | undefined }[] {
  return ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true).importedFiles.flatMap(({ fileName: specifier }) => {
    if (!specifier.startsWith('.')) return [];
    const base = path.resolve(path.dirname(file), specifier);
    const target = [`${base}.ts`, path.join(base, 'index.ts'), base].find((f) => fs.existsSync(f) && fs.statSync(f).isFile());
    return [{ specifier, target }];
  });
}
