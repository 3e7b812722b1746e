// node-llama-cpp's insides are reached from src/llama/ only: its private members (`_ctx`, `_sequenceId`,
// `_bindings`…, read or declared in a type), the lock module it loads, and the native addon compiled
// against its C++ headers and llama.cpp's C API. A node-llama-cpp upgrade then touches that folder and
// nothing else (the layer table, test/unit/layerDirection.test.ts, says why it sits where it does).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { filesUnder } from '../support/relativeImports';

const SRC = path.resolve(__dirname, '../../src');
const LLAMA = path.join(SRC, 'llama') + path.sep;
const rel = (file: string) => path.relative(SRC, file).split(path.sep).join('/');

/** "file:line name" for each private member a file reads or declares (`x._name`, `x['_name']`, `{ _name: T }`). */
function privateMembers(file: string): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const note = (node: ts.Node, name: string) => {
    if (/^_[A-Za-z]/.test(name)) found.push(`${rel(file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${name}`);
  };
  const visit = (node: ts.Node) => {
    if (ts.isPropertyAccessExpression(node)) note(node, node.name.text);
    else if (ts.isElementAccessExpression(node) && ts.isStringLiteral(node.argumentExpression)) note(node, node.argumentExpression.text);
    else if (ts.isPropertySignature(node) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))) note(node, node.name.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Files that load a module from inside node-llama-cpp's own dependencies (its lock). */
const reachesLibraryModules = (file: string) => /['"]lifecycle-utils['"]/.test(fs.readFileSync(file, 'utf8'));

describe('node-llama-cpp internals stay in src/llama/', () => {
  const files = filesUnder(SRC, /\.ts$/);

  it('no TypeScript outside src/llama/ reads or declares a private member, or loads the library’s lock module', () => {
    const outside = files.filter((f) => !f.startsWith(LLAMA));
    assert.ok(outside.length > 100, `found only ${outside.length} files`);
    assert.deepEqual(outside.flatMap(privateMembers), []);
    assert.deepEqual(outside.filter(reachesLibraryModules).map(rel), []);
  });

  it('the check finds the ones src/llama/ has (it is not vacuous)', () => {
    const inside = files.filter((f) => f.startsWith(LLAMA));
    const names = new Set(inside.flatMap(privateMembers).map((m) => m.split(' ')[1]));
    for (const name of ['_ctx', '_sequenceId', '_bindings', '_modelUrl']) assert.ok(names.has(name), `no ${name} found in src/llama/`);
    assert.ok(inside.some(reachesLibraryModules));
  });

  it('the native addon’s sources (C++ on node-llama-cpp’s headers and llama.cpp’s C API) are all in src/llama/native/', () => {
    const native = filesUnder(SRC, /\.(c|cc|cpp|h|hpp)$/);
    assert.ok(native.length > 0, 'no native source found');
    assert.deepEqual(native.filter((f) => !f.startsWith(path.join(LLAMA, 'native') + path.sep)).map(rel), []);
  });
});
