// limitScopeByIndentation golden cases, and the streaming contract of blockEndOffset: the offset
// it reports for a partial completion never changes as more text arrives, and agrees with the filter.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blockEndOffset, limitScopeByIndentation } from '../../src/postprocess/limitScopeByIndentation';
import { type FilterCase, at, filterCases } from '../support/postprocessCases';

const GOLDEN: FilterCase[] = [
  {
    name: 'single-line completions are never cut',
    ctx: at('function f() {\n  let x =║\n}\n'),
    completion: ' 42;',
    expected: ' 42;',
  },
  {
    name: 'mid-statement: later statements of the same block stay, the duplicate closing brace goes',
    ctx: at('function f() {\n  let a =║\n}\n'),
    completion: ' 1;\n  let b = 2;\n}\nfoo();',
    expected: ' 1;\n  let b = 2;',
  },
  {
    name: 'cursor line opens a block between auto-closed braces: keep the body and one closing line',
    ctx: at('function findMax(arr) {║}\n'),
    completion: '\n  let max = arr[0];\n  for (const x of arr) {\n    if (x > max) max = x;\n  }\n  return max;\n}\nconsole.log(findMax([1, 2, 3]));',
    expected: '\n  let max = arr[0];\n  for (const x of arr) {\n    if (x > max) max = x;\n  }\n  return max;\n}',
  },
  {
    name: 'opened block at the end of the file: the closing line is kept',
    ctx: at('if (ready) {║'),
    completion: '\n  start();\n}\nstop();',
    expected: '\n  start();\n}',
  },
  {
    name: 'the suffix already closes the block: the closing line goes',
    ctx: at('if (ready) {║\n}\n'),
    completion: '\n  start();\n}\nstop();',
    expected: '\n  start();',
  },
  {
    name: "the block's body goes on below the cursor: no closing line",
    ctx: at('if (ready) {║\n  existing();\n}\n'),
    completion: '\n  start();\n}\n',
    expected: '\n  start();',
  },
  {
    name: 'nested block: a closer below belongs to the outer block, so ours is kept',
    ctx: at('function a() {\n  if (x) {║\n}\n'),
    completion: '\n    y();\n  }\n  z();\n}',
    expected: '\n    y();\n  }',
  },
  {
    name: 'the first completion line opens the block: cut after its closing line',
    ctx: at('function sum(rows) {\n  let total = 0;\n  ║\n}\n'),
    completion: 'for (const row of rows) {\n    total += row;\n  }\n  return total;\n}',
    expected: 'for (const row of rows) {\n    total += row;\n  }',
  },
  {
    name: '} else { continues the block',
    ctx: at('if (ok) {║'),
    completion: '\n  a();\n} else {\n  b();\n}\nc();',
    expected: '\n  a();\n} else {\n  b();\n}',
  },
  {
    name: 'closing line of the enclosing block is allowed once at the end of the file',
    ctx: at('function safeParse(json) {\n  try {\n    return JSON.parse(json);\n  } catch (e) {\n    return null;║'),
    completion: '\n  }\n}',
    expected: '\n  }',
  },
  {
    name: 'no closing line when the next suffix line is a statement of the block',
    ctx: at('function hello() {\n  console.log("hello");║\n  console.log("world");\n}\n'),
    completion: '\n}',
    expected: '',
  },
  {
    name: 'cursor on an indented empty line: the suffix closes the try, so `} catch` is cut',
    ctx: at('function safeParse(json) {\n  try {\n    ║\n  }\n}\n'),
    completion: 'return JSON.parse(json);\n  } catch (e) {\n    return null;\n  }\n}',
    expected: 'return JSON.parse(json);',
  },
  {
    // The cursor's line is a continuation line, so its indentation is the "block": the statement's end is the scope.
    name: 'chained calls: the dedent after the chain ends the completion',
    ctx: at('function words(input) {\n  const out = input\n    .trim()║\n}\n', 'javascript'),
    completion: '\n    .split(" ")\n    .sort();\n  return out;\n}',
    expected: '\n    .split(" ")\n    .sort();',
  },
  {
    name: 'tabs count as tabSize columns',
    ctx: at('\tif (x) {║', 'typescript', 4),
    completion: '\n\t\tgo();\n\t}\nafter();',
    expected: '\n\t\tgo();\n\t}',
  },
  {
    name: 'python: def body ends at the dedent',
    ctx: at('def area(w, h):║', 'python'),
    completion: '\n    return w * h\n\nprint(area(2, 3))',
    expected: '\n    return w * h',
  },
  {
    name: 'python: else: continues the if block',
    ctx: at('def sign(x):\n    if x >= 0:║', 'python'),
    completion: '\n        return 1\n    else:\n        return -1\nprint(sign(3))',
    expected: '\n        return 1\n    else:\n        return -1',
  },
  {
    name: 'python: a call opened with ( keeps its closing parenthesis',
    ctx: at('result = compute(║', 'python'),
    completion: '\n    alpha,\n    beta,\n)\nprint(result)',
    expected: '\n    alpha,\n    beta,\n)',
  },
  {
    name: 'python: cursor on an empty line, first completion line blank: the first code line sets the block',
    ctx: at('def f():\n║', 'python'),
    completion: '\n    return 1\nprint(f())',
    expected: '\n    return 1',
  },
  {
    name: 'python: a comment ending in ":" does not open a block',
    ctx: at('def main():\n    # steps:║', 'python'),
    completion: '\n    load()\n    save()\nmain()',
    expected: '\n    load()\n    save()',
  },
  {
    name: 'python: statements at the block level stay, the module level goes',
    ctx: at('def total(items):\n    s = 0║', 'python'),
    completion: '\n    for item in items:\n        s += item\n    return s\n\n\nif __name__ == "__main__":\n    main()',
    expected: '\n    for item in items:\n        s += item\n    return s',
  },
];

describe('limitScopeByIndentation', () => {
  filterCases(limitScopeByIndentation, GOLDEN);
});

function seededRandom(seed: number) {
  return (below: number) => {
    seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return seed % below;
  };
}

/** Random completions from lines that exercise every rule: openers, closers, keywords, blanks, dedents. */
function randomCompletion(random: (below: number) => number): string {
  const bodies = ['call();', '}', '} else {', 'else:', 'elif x:', 'if (x) {', 'def g():', 'return 1', ')', '});', 'e = 1', 'finally:', '', 'el', '.map(f)'];
  const lines: string[] = [];
  for (let i = 1 + random(7); i > 0; i--) {
    const indent = [' ', '\t'][random(2)]!.repeat(random(4) * (random(2) ? 2 : 1));
    lines.push(indent + bodies[random(bodies.length)]!);
  }
  return lines.join('\n') + (random(3) === 0 ? '\n' : '');
}

describe('blockEndOffset streaming contract', () => {
  const random = seededRandom(2024);
  const contexts = [...GOLDEN.map((golden) => golden.ctx), at('x = [║]'), at('  ║'), at('║'), at('while (true) {║\n  }\n')];
  const cases = [
    ...GOLDEN.map(({ ctx, completion }) => ({ ctx, completion })),
    ...Array.from({ length: 400 }, () => ({ ctx: contexts[random(contexts.length)]!, completion: randomCompletion(random) })),
  ];

  it('never changes its answer as the completion grows, and agrees with the filter', () => {
    for (const { ctx, completion } of cases) {
      let decided: number | undefined;
      for (let length = 0; length <= completion.length; length++) {
        const partial = completion.slice(0, length);
        const offset = blockEndOffset(partial, ctx);
        if (decided !== undefined) assert.equal(offset, decided, `${JSON.stringify(completion)} at ${length}`);
        else if (offset !== undefined) {
          assert.ok(offset <= length);
          decided = offset;
        }
        // Stopping at the streamed offset gives exactly what the filter gives the whole text.
        if (offset !== undefined) assert.equal(limitScopeByIndentation(completion, ctx), completion.slice(0, offset));
      }
    }
  });

  it('is idempotent: a cut completion is not cut again', () => {
    for (const { ctx, completion } of cases) {
      const once = limitScopeByIndentation(completion, ctx);
      assert.equal(limitScopeByIndentation(once, ctx), once, JSON.stringify(completion));
    }
  });

  it('stops streaming as soon as the dedent is visible', () => {
    const ctx = at('def area(w, h):║', 'python');
    assert.equal(blockEndOffset('\n    return w * h\n', ctx), undefined);
    assert.equal(blockEndOffset('\n    return w * h\np', ctx), '\n    return w * h'.length);
    // "el" could still become "else:", which would continue the block.
    assert.equal(blockEndOffset('\n    return w * h\nel', ctx), undefined);
  });
});
