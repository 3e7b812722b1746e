// No src file over 400 lines, the native addon's C++ included: a file that grows past it is split by
// job (what it does), not cut at a line.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { filesUnder } from '../support/relativeImports';

const SRC = path.resolve(__dirname, '../../src');
const MAX_LINES = 400;

describe('src file sizes', () => {
  it(`every source file of src/ has at most ${MAX_LINES} lines`, () => {
    const files = filesUnder(SRC, /\.(ts|cpp|h)$/);
    assert.ok(files.some((f) => f.endsWith('.cpp')) && files.length > 100, `found only ${files.length} files`);
    const lines = (file: string) => {
      const text = fs.readFileSync(file, 'utf8');
      return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    };
    const over = files.filter((f) => lines(f) > MAX_LINES).map((f) => `${path.relative(SRC, f)}: ${lines(f)} lines`);
    assert.deepEqual(over, []);
  });
});
