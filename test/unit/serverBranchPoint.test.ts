// Where a server's greedy completion branches into alternatives (issue #32), by the in-process
// path's rules (speculation/branchPoint.ts) over what the server reports: the smallest top-two
// margin among the kept tokens, end tokens and rewrites of the typed blank left out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ReportedToken } from '../../src/remote/serverApi';
import { branchableLength, branchPoint } from '../../src/remote/serverBranchPoint';

const token = (text: string, top: [string, number][], id?: number): ReportedToken => ({ ...(id === undefined ? {} : { id }), text, top: top.map(([t, logprob]) => ({ text: t, logprob })) });

describe('branchPoint (server alternatives)', () => {
  const tokens = [
    token(' a', [
      [' a', -0.1],
      [' b', -2],
    ]),
    token(' +', [
      [' +', -0.5],
      [' -', -0.9],
      [' *', -1.5],
    ]),
    token(' b', [
      [' b', -1],
      [' c', -1.01],
    ]),
  ];

  it('the smallest top-two margin among the tokens that start in the kept text; the others most likely first, the tokens before it', () => {
    const all = branchPoint(tokens, 6);
    assert.equal(all?.tokenIndex, 2);
    assert.deepEqual(all?.others, [{ text: ' c' }]);
    assert.deepEqual(
      all?.before.map((t) => t.text),
      [' a', ' +'],
    );
    // The stop rules kept " a +": the third token is no place to branch.
    const kept = branchPoint(tokens, 4);
    assert.equal(kept?.tokenIndex, 1);
    assert.ok(Math.abs(kept!.margin - 0.4) < 1e-12);
    assert.deepEqual(kept?.others, [{ text: ' -' }, { text: ' *' }]);
  });

  it('the earliest of equal margins; the greedy token by id where there are ids (a near-tie may rank another first)', () => {
    const equal = [
      token(
        'x',
        [
          ['x', -1],
          ['y', -2],
        ],
        1,
      ),
      token(
        'z',
        [
          ['w', -1],
          ['z', -2],
        ],
        3,
      ),
    ];
    equal[1]!.top[0]!.id = 4;
    equal[1]!.top[1]!.id = 3;
    assert.equal(branchPoint(equal, 10)?.tokenIndex, 0);
    const flipped = [
      token(
        'z',
        [
          ['w', -1],
          ['z', -1.5],
        ],
        3,
      ),
    ];
    flipped[0]!.top[0]!.id = 4;
    flipped[0]!.top[1]!.id = 3;
    assert.deepEqual(branchPoint(flipped, 10)?.others, [{ id: 4, text: 'w' }]);
  });

  it('an end of generation (no text) is no alternative; a position with nothing else usable is skipped', () => {
    const ending = [
      token('a', [
        ['a', -1],
        ['', -1.01],
      ]),
      token('b', [
        ['b', -1],
        ['c', -1.5],
      ]),
    ];
    assert.equal(branchPoint(ending, 10)?.tokenIndex, 1);
    assert.equal(branchPoint([token('a', [['a', -1]])], 10), null);
  });

  it('the blank rule: given the forced text and the greedy text through the same token', () => {
    const blank = '  ';
    const writes = (t: string) => t.startsWith(blank) || blank.startsWith(t);
    const allows = (forced: string, greedy: string) => !writes(greedy) || writes(forced);
    const indented = [
      token('  ', [
        ['  ', -1],
        ['x', -1.01],
        [' ', -1.02],
      ]),
      token('return', [
        ['return', -1],
        ['if', -3],
      ]),
    ];
    // "x" would rewrite the two spaces the user typed; " " is the start of them.
    assert.deepEqual(branchPoint(indented, 20, allows)?.others, [{ text: ' ' }]);
  });

  it('branches only within the first line with content, as the in-process default scope', () => {
    assert.equal(branchableLength('a + b;\n  return c;\n'), 7);
    assert.equal(branchableLength('\n\n  foo();\nbar'), 11);
    assert.equal(branchableLength('no newline'), 10);
    const lines = [
      token('x', [
        ['x', -0.1],
        ['y', -3],
      ]),
      token(';\n', [
        [';\n', -0.2],
        [';', -1],
      ]),
      token('z', [
        ['z', -1],
        ['w', -1.001],
      ]),
    ];
    const text = 'x;\nz';
    // Anywhere, the second line's near-tie wins; within the first line, the token that ends it.
    assert.equal(branchPoint(lines, text.length)?.tokenIndex, 2);
    assert.equal(branchPoint(lines, branchableLength(text))?.tokenIndex, 1);
  });
});
