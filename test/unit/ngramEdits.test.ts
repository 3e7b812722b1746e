// Incremental indexing: edits must leave the index exactly as a fresh setDocument of the new text
// would, while re-tokenizing only the chunks they touch.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NgramIndex, type TextEdit } from '../../src/ngram';
import { HARD_MAX_CHARS, splitIntoChunks } from '../../src/ngram/chunkBoundaries';
import { wordTokenizer } from '../../testbed/syntheticText';

function seededRandom(seed: number) {
  return (below: number) => {
    seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return seed % below;
  };
}

const STATEMENTS = [
  'const result = await client.fetch(url, { retries: 3 });',
  'if (!response.ok) throw new Error(response.statusText);',
  'for (const item of items) total += item.price * item.quantity;',
  'return rows.filter((row) => row.visible).map(render);',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: source text with a template literal in it
  'logger.debug(`loaded ${count} records in ${elapsed} ms`);',
  '}',
  '',
  'export function handle(event: Event): void {',
  'value = compute(value, factor);',
  '// TODO: cache this lookup',
];

function codeLikeText(random: (below: number) => number, chars: number): string {
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < chars; i++) {
    const line = ' '.repeat(2 * random(4)) + STATEMENTS[random(STATEMENTS.length)]!.replace('value', `value${i}`);
    lines.push(line);
    length += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

function applyToText(text: string, edits: readonly TextEdit[]): string {
  for (const { offset, deleteCount, text: inserted } of edits) text = text.slice(0, offset) + inserted + text.slice(offset + deleteCount);
  return text;
}

/** Chunk boundaries of the canonical chunking, where edits are most likely to go wrong. */
function boundaries(text: string): number[] {
  const result: number[] = [];
  let offset = 0;
  for (const chunk of splitIntoChunks(text)) result.push((offset += chunk.length));
  return result;
}

function randomEdit(random: (below: number) => number, text: string): TextEdit {
  const bounds = boundaries(text);
  const near = bounds[random(bounds.length)]! + random(3) - 1;
  const offset = Math.max(0, Math.min(text.length, random(2) ? near : random(text.length + 1)));
  const room = text.length - offset;
  const insertions = ['', 'x', '\n', '  next();\n', '\n\n}\n', 'é😀', `${STATEMENTS[random(STATEMENTS.length)]!}\n`];
  switch (random(5)) {
    case 0: // delete just the newline before a boundary: chunks must merge
      return { offset: Math.max(0, Math.min(offset, text.length - 1)), deleteCount: Math.min(1, room), text: '' };
    case 1: // a long deletion across several chunks
      return { offset, deleteCount: Math.min(room, random(3000)), text: '' };
    default:
      return { offset, deleteCount: Math.min(room, random(8)), text: insertions[random(insertions.length)]! };
  }
}

describe('NgramIndex incremental edits', () => {
  it('leaves text, tokens and lookups as a fresh setDocument would (random edits at chunk boundaries)', () => {
    const tokenize = wordTokenizer();
    const random = seededRandom(42);
    let text = codeLikeText(random, 30_000);
    const index = new NgramIndex({ minN: 2, maxN: 5, tokenize });
    index.setDocument('doc', text);
    for (let step = 0; step < 120; step++) {
      const edits: TextEdit[] = [];
      for (let i = 1 + random(3); i > 0; i--) {
        const edit = randomEdit(random, text);
        edits.push(edit);
        text = applyToText(text, [edit]);
      }
      assert.equal(index.applyEdits('doc', edits), true);
      assert.equal(index.documentText('doc'), text, `text after step ${step}`);
      const fresh = new NgramIndex({ minN: 2, maxN: 5, tokenize });
      fresh.setDocument('doc', text);
      assert.deepEqual(index.documentTokens('doc'), fresh.documentTokens('doc'), `tokens after step ${step}`);
      const probeAt = random(text.length);
      const context = tokenize(text.slice(Math.max(0, probeAt - 40), probeAt));
      assert.deepEqual(index.lookup(context, 8), fresh.lookup(context, 8), `lookup after step ${step}`);
    }
  });

  it('handles edits of an empty document and deleting everything', () => {
    const tokenize = wordTokenizer();
    const index = new NgramIndex({ minN: 1, maxN: 3, tokenize });
    index.setDocument('doc', '');
    assert.equal(index.stats().chunks, 0);
    index.applyEdits('doc', [{ offset: 0, deleteCount: 0, text: 'let a = b;\nlet c = d;\n' }]);
    assert.equal(index.documentText('doc'), 'let a = b;\nlet c = d;\n');
    assert.deepEqual(index.lookup(tokenize('let a ='), 2)?.tokens, tokenize(' b'));
    index.applyEdits('doc', [
      { offset: 4, deleteCount: 1, text: 'alpha' }, // VS Code order: each offset refers to the text so far
      { offset: 0, deleteCount: 0, text: '// header\n' },
    ]);
    assert.equal(index.documentText('doc'), '// header\nlet alpha = b;\nlet c = d;\n');
    index.applyEdits('doc', [{ offset: 0, deleteCount: index.documentText('doc')!.length, text: '' }]);
    assert.equal(index.documentText('doc'), '');
    assert.equal(index.lookup(tokenize('let a ='), 2), null);
  });

  it('drops a document whose edit does not fit its text (out of step) and reports it', () => {
    const index = new NgramIndex({ minN: 1, maxN: 3, tokenize: wordTokenizer() });
    index.setDocument('doc', 'short');
    assert.equal(index.applyEdits('doc', [{ offset: 3, deleteCount: 10, text: '' }]), false);
    assert.equal(index.documentText('doc'), undefined);
    assert.equal(index.applyEdits('unknown', [{ offset: 0, deleteCount: 0, text: 'x' }]), false);
  });

  it('re-tokenizes under 5% of a 1 MB document per edit', () => {
    const tokenize = wordTokenizer();
    const random = seededRandom(7);
    let text = codeLikeText(random, 1_000_000);
    const index = new NgramIndex({ minN: 2, maxN: 6, tokenize });
    index.setDocument('big', text);
    assert.equal(index.stats().tokenizedChars, text.length);
    const middle = text.indexOf('\n', text.length >> 1) + 1;
    const bound = boundaries(text)[200]!;
    const keystrokes: TextEdit[][] = [
      [{ offset: middle, deleteCount: 0, text: 'x' }],
      [{ offset: middle + 1, deleteCount: 0, text: '\n' }],
      [{ offset: bound, deleteCount: 0, text: 'paste();\nmore();\nlines();\n' }],
      [{ offset: bound - 1, deleteCount: 1, text: '' }],
      [
        { offset: 10, deleteCount: 0, text: 'a' },
        { offset: text.length - 10, deleteCount: 3, text: '' },
      ],
    ];
    for (const edits of keystrokes) {
      const before = index.stats().tokenizedChars;
      index.applyEdits('big', edits);
      text = applyToText(text, edits);
      const retokenized = index.stats().tokenizedChars - before;
      assert.ok(retokenized < 0.05 * text.length, `re-tokenized ${retokenized} chars`);
    }
    assert.equal(index.documentText('big'), text);
    const fresh = new NgramIndex({ minN: 2, maxN: 6, tokenize });
    fresh.setDocument('big', text);
    assert.deepEqual(index.documentTokens('big'), fresh.documentTokens('big'));
  });

  it('stays incremental on one-line (minified) and highly repetitive documents', () => {
    const tokenize = wordTokenizer();
    const random = seededRandom(3);
    const minified = Array.from({ length: 60_000 }, () => `v${random(1000)}=f(${random(50)});`).join('');
    const repetitive = '    return null;\n'.repeat(60_000);
    for (const original of [minified, repetitive]) {
      const index = new NgramIndex({ minN: 2, maxN: 6, tokenize });
      index.setDocument('doc', original);
      const edits = [{ offset: original.length >> 1, deleteCount: 0, text: 'inserted;\n' }];
      const before = index.stats().tokenizedChars;
      index.applyEdits('doc', edits);
      assert.ok(index.stats().tokenizedChars - before < 0.05 * original.length);
      assert.equal(index.documentText('doc'), applyToText(original, edits));
    }
  });
});

describe('content-defined chunking', () => {
  it('covers the text with bounded chunks that never split a surrogate pair', () => {
    const random = seededRandom(11);
    const texts = [codeLikeText(random, 50_000), '😀'.repeat(20_000), 'x'.repeat(30_000), 'a\n'.repeat(1000), ''];
    for (const text of texts) {
      const chunks = splitIntoChunks(text);
      assert.equal(chunks.join(''), text);
      for (const chunk of chunks) {
        assert.ok(chunk.length > 0 && chunk.length <= HARD_MAX_CHARS + 1);
        const last = chunk.charCodeAt(chunk.length - 1);
        assert.ok(!(last >= 0xd800 && last <= 0xdbff), 'chunk ends inside a surrogate pair');
      }
    }
  });

  it('decides each boundary from the text before it (appending text keeps earlier chunks)', () => {
    const random = seededRandom(5);
    const text = codeLikeText(random, 40_000);
    const chunks = splitIntoChunks(text);
    const extended = splitIntoChunks(text + codeLikeText(random, 5_000));
    assert.deepEqual(extended.slice(0, chunks.length - 1), chunks.slice(0, -1));
  });
});
