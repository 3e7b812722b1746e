// The edits regime's corpus (bench/editCorpus.ts): case extraction on a tiny synthetic pair of
// versions (no network), and the package list kept apart from the training corpora and the bench's.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { CORPUS_PACKAGES } from '../../corpus';
import { casesFromVersions, EDIT_PAIRS, fileCases, MAX_EDIT_LINES, parsePair, selectFiles, WINDOW_LINES } from '../../editCorpus';

const numbered = (from: number, to: number, f: (i: number) => string) => Array.from({ length: to - from }, (_, k) => f(from + k));

describe('edit corpus: cases from two versions of a file', () => {
  // 60 lines; version b changes line 10, inserts a line after 30, and rewrites lines 45-59 (too big).
  const oldLines = numbered(0, 60, (i) => `  const v${i} = f(${i});`);
  const newLines = [...oldLines.slice(0, 10), '  const v10 = g(10);', ...oldLines.slice(11, 31), '  log(v30);', ...oldLines.slice(31, 45), ...numbered(45, 60, (i) => `  let w${i} = h(${i});`)];
  const oldText = `${oldLines.join('\n')}\n`;
  const newText = `${newLines.join('\n')}\n`;
  const cases = fileCases({ source: 'npm:x@1..2', idPrefix: 'x@1..2', file: 'src/a.ts', oldText, newText });

  it('one case a hunk, the huge one skipped', () => {
    assert.equal(cases.length, 2);
    assert.deepEqual(
      cases.map((c) => c.id),
      ['x@1..2:src/a.ts#0', 'x@1..2:src/a.ts#1'],
    );
    assert.ok(15 > MAX_EDIT_LINES);
  });

  it('the first hunk: no history, the window centred on it, the region becomes the new lines', () => {
    const c = cases[0]!;
    assert.equal(c.language, 'typescript');
    assert.equal(c.path, 'src/a.ts');
    assert.deepEqual(c.events, []);
    assert.equal(c.before, oldText);
    const region = c.before.slice(c.regionStart, c.regionEnd);
    assert.equal(region, `${oldLines.slice(0, 21).join('\n')}\n`);
    assert.equal(c.expected, `${[...oldLines.slice(0, 10), '  const v10 = g(10);', ...oldLines.slice(11, 21)].join('\n')}\n`);
    // No earlier edit: the cursor on the edit's line, at its first non-blank character.
    assert.equal(c.cursorOffset, c.before.indexOf('  const v10 = f(10);') + 2);
  });

  it('the second hunk: the first made, as the history; the cursor where it can see it', () => {
    const c = cases[1]!;
    const afterFirst = `${[...oldLines.slice(0, 10), '  const v10 = g(10);', ...oldLines.slice(11)].join('\n')}\n`;
    assert.equal(c.before, afterFirst);
    assert.deepEqual(c.events, [
      '--- a/src/a.ts\n+++ b/src/a.ts\n@@ -8,7 +8,7 @@\n   const v7 = f(7);\n   const v8 = f(8);\n   const v9 = f(9);\n-  const v10 = f(10);\n+  const v10 = g(10);\n   const v11 = f(11);\n   const v12 = f(12);\n   const v13 = f(13);\n',
    ]);
    const regionLines = c.before.slice(c.regionStart, c.regionEnd).split('\n').slice(0, -1);
    assert.equal(regionLines.length, WINDOW_LINES);
    // An insertion after line 30: the window is lines 21..41, the new line in its middle.
    assert.equal(regionLines[0], oldLines[21]);
    assert.equal(c.expected, `${[...oldLines.slice(21, 31), '  log(v30);', ...oldLines.slice(31, 42)].join('\n')}\n`);
    // The previous edit (line 10) is outside the window: the cursor goes to the edit.
    assert.equal(c.cursorOffset, c.before.indexOf('  const v31 = f(31);') + 2);
  });

  it('the cursor stays at the end of the previous edit when the window holds it', () => {
    const a = `${numbered(0, 30, (i) => `x${i}`).join('\n')}\n`;
    const b = a.replace('x5\n', 'y5\n').replace('x14\n', 'y14\n');
    const [, second] = fileCases({ source: 's', idPrefix: 'p', file: 'a.js', oldText: a, newText: b });
    assert.equal(second!.language, 'javascript');
    assert.equal(second!.cursorOffset, second!.before.indexOf('y5\n') + 2);
  });

  it('whitespace-only hunks are no edits; compiled twins count once; files in one version only are left out', () => {
    const a = `${numbered(0, 30, (i) => `x${i};`).join('\n')}\n`;
    const reindented = a.replace('x3;', '    x3;');
    assert.equal(fileCases({ source: 's', idPrefix: 'p', file: 'a.js', oldText: a, newText: reindented }).length, 0);
    const b = a.replace('x20;', 'y20;');
    const v1 = new Map([
      ['dist/a.js', a],
      ['dist/a.mjs', `import z from 'z';\n${a}`],
      ['dist/gone.js', a],
    ]);
    const v2 = new Map([
      ['dist/a.js', b],
      ['dist/a.mjs', `import z from 'z';\n${b}`],
      ['dist/new.js', b],
    ]);
    const cases = casesFromVersions({ name: 'p', from: '1', to: '2' }, v1, v2);
    assert.deepEqual(
      cases.map((c) => c.id),
      ['p@1..2:dist/a.js#0'],
    );
  });

  it('selects src/*.ts when a package ships its sources, and leaves minified and UMD builds out', () => {
    const body = `${numbered(0, 10, (i) => `let a${i} = ${i};`).join('\n')}\n`;
    const files = new Map([
      ['src/index.ts', body],
      ['lib/index.js', body],
      ['README.md', body],
      ['dist/x.min.js', body],
    ]);
    assert.deepEqual([...selectFiles(files).keys()], ['src/index.ts']);
    const noSrc = new Map([
      ['lib/index.js', body],
      ['umd/index.js', body],
      ['lib/packed.js', `${'x'.repeat(500)}\n`.repeat(6)],
      ['lib/index.d.ts', body],
    ]);
    assert.deepEqual([...selectFiles(noSrc).keys()], ['lib/index.d.ts', 'lib/index.js']);
  });
});

describe('edit corpus: the packages', () => {
  const names = EDIT_PAIRS.map((spec) => parsePair(spec).name);

  it('every pair reads name@from..to', () => {
    assert.deepEqual(parsePair('@tanstack/query-core@5.1.0..5.2.0'), { name: '@tanstack/query-core', from: '5.1.0', to: '5.2.0' });
    for (const spec of EDIT_PAIRS) {
      const p = parsePair(spec);
      assert.notEqual(p.from, p.to, spec);
    }
    assert.ok(new Set(names).size >= 10, 'about ten packages');
  });

  it("none is the bench's corpus (CORPUS_PACKAGES)", () => {
    const corpus = CORPUS_PACKAGES.map((spec) => spec.replace(/(.)@.*$/, '$1'));
    for (const name of names) assert.ok(!corpus.includes(name), name);
  });

  // The embedded models' training packages as their recipes list them (../shared/models/recipe/RECIPE.md
  // and recipe/gpu/README.md), read from ../shared when it is there.
  const V2 = 'typescript @types/node lodash express react vue rxjs axios moment webpack eslint prettier zod date-fns';
  const V3 = `${V2} react-dom three d3 @angular/core @angular/common @angular/router lit svelte vite rollup jest mocha chai sinon socket.io mongoose sequelize typeorm knex pg ioredis graphql fastify @nestjs/core @nestjs/common yup joi ajv uuid ramda immutable mobx redux @reduxjs/toolkit jquery chart.js leaflet marked markdown-it highlight.js cheerio @babel/core @babel/traverse @babel/types mathjs luxon async bluebird commander inquirer webpack-dev-server @vue/compiler-core @vue/runtime-core @aws-sdk/client-s3 openai pixi.js codemirror @codemirror/view @codemirror/state prosemirror-model prosemirror-view prosemirror-state`;
  const recipes = path.resolve(__dirname, '../../../../shared/models/recipe');

  it('none is a training package of the embedded models', () => {
    const training = new Set(V3.split(' '));
    for (const file of [path.join(recipes, 'RECIPE.md'), path.join(recipes, 'gpu/README.md')]) {
      if (!fs.existsSync(file)) continue;
      const text = fs.readFileSync(file, 'utf8').replace(/\\\n/g, ' ');
      for (const m of text.matchAll(/npm install ([^\n]+)/g)) for (const word of m[1]!.split(/\s+/)) if (word && !word.startsWith('-')) training.add(word);
    }
    assert.ok(training.has('lodash') && training.has('prosemirror-state'));
    for (const name of names) assert.ok(!training.has(name), name);
  });

  it('none is excluded from training for the bench or held out for evaluation (by hash)', () => {
    let exclude = ['preact', 'immer', 'hono', 'valibot', 'zustand', 'mitt'];
    let heldOut: string[] = [];
    const script = path.join(recipes, 'gpu/build_corpus.py');
    if (fs.existsSync(script)) {
      const text = fs.readFileSync(script, 'utf8');
      exclude = [...(/^EXCLUDE = \{([^}]*)\}/m.exec(text)?.[1] ?? '').matchAll(/'([^']+)'/g)].map((m) => m[1]!);
      heldOut = [...(/^HELD_OUT = \{([^}]*)\}/m.exec(text)?.[1] ?? '').matchAll(/'([0-9a-f]{16})'/g)].map((m) => m[1]!);
      assert.ok(exclude.length >= 6 && heldOut.length >= 1, 'the lists were read');
    }
    for (const name of names) {
      assert.ok(!exclude.includes(name), name);
      assert.ok(!heldOut.includes(createHash('sha256').update(name).digest('hex').slice(0, 16)), `${name} is held out`);
    }
  });
});
