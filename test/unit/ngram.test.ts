// Prompt lookup over one sequence and over the multi-document index: which occurrence wins and
// what it proposes. Incremental edits live in ngramEdits.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findInSequence, indexOccurrences, NgramIndex } from '../../src/ngram';
import { splitIntoChunks } from '../../src/ngram/chunkBoundaries';

/** Words, single punctuation marks and whitespace runs, each distinct string one token id. */
function wordTokenizer() {
  const ids = new Map<string, number>();
  const names: string[] = [];
  const tokenize = (text: string) =>
    (text.match(/\w+|\s+|[^\w\s]/g) ?? []).map((piece) => {
      let id = ids.get(piece);
      if (id === undefined) {
        id = names.length;
        ids.set(piece, id);
        names.push(piece);
      }
      return id;
    });
  const detokenize = (tokens: readonly number[]) => tokens.map((t) => names[t]).join('');
  return { tokenize, detokenize };
}

const chars = (text: string) => Array.from(text, (c) => c.codePointAt(0)!);
const text = (tokens: readonly number[]) => String.fromCodePoint(...tokens);

describe('findInSequence', () => {
  it('proposes what followed the earlier occurrence of the tail', () => {
    const match = findInSequence([1, 2, 3, 4, 5, 9, 1, 2, 3], { minN: 2, maxN: 4, maxLen: 2 });
    assert.deepEqual(match, { tokens: [4, 5], n: 3, source: 'context' });
  });

  it('prefers the longest match over a more recent shorter one', () => {
    // Tail [7, 1, 2]: [1, 2] recurs at index 6 (followed by 8), [7, 1, 2] only at index 0 (followed by 3).
    const haystack = [7, 1, 2, 3, 0, 0, 1, 2, 8, 0, 7, 1, 2];
    assert.deepEqual(findInSequence(haystack, { minN: 2, maxN: 3, maxLen: 1 })?.tokens, [3]);
    assert.deepEqual(findInSequence(haystack, { minN: 2, maxN: 2, maxLen: 1 })?.tokens, [8]);
  });

  it('takes the most recent occurrence among equally long matches', () => {
    const haystack = [1, 2, 10, 1, 2, 20, 1, 2];
    assert.deepEqual(findInSequence(haystack, { minN: 2, maxN: 5, maxLen: 1 }), { tokens: [20], n: 2, source: 'context' });
  });

  it('never matches the tail with itself', () => {
    assert.equal(findInSequence([1, 2, 3, 4], { minN: 1, maxN: 3, maxLen: 4 }), null);
    assert.equal(findInSequence([5], { minN: 1, maxN: 3, maxLen: 4 }), null);
    assert.equal(findInSequence([], { minN: 1, maxN: 3, maxLen: 4 }), null);
  });

  it('lets the proposal run into the tail (self-overlapping repeats)', () => {
    assert.deepEqual(findInSequence([3, 3, 3, 3], { minN: 1, maxN: 2, maxLen: 5 }), { tokens: [3], n: 2, source: 'context' });
    assert.deepEqual(findInSequence([5, 1, 2, 1, 2, 1, 2], { minN: 2, maxN: 4, maxLen: 9 })?.tokens, [1, 2]);
  });

  it('respects minN, maxLen and searchEnd', () => {
    const haystack = [1, 2, 3, 4, 5, 6, 1, 2];
    assert.equal(findInSequence(haystack, { minN: 3, maxN: 4, maxLen: 3 }), null);
    assert.deepEqual(findInSequence(haystack, { minN: 2, maxN: 4, maxLen: 3 })?.tokens, [3, 4, 5]);
    assert.equal(findInSequence(haystack, { minN: 2, maxN: 4, maxLen: 0 }), null);
    // The occurrence ends at index 2: a bound of 1 excludes it, 2 includes it.
    assert.equal(findInSequence(haystack, { minN: 2, maxN: 4, maxLen: 3, searchEnd: 1 }), null);
    assert.deepEqual(findInSequence(haystack, { minN: 2, maxN: 4, maxLen: 3, searchEnd: 2 })?.n, 2);
  });

  it('rejects impossible sizes', () => {
    assert.throws(() => findInSequence([1, 2], { minN: 0, maxN: 2, maxLen: 1 }), RangeError);
    assert.throws(() => findInSequence([1, 2], { minN: 3, maxN: 2, maxLen: 1 }), RangeError);
  });

  it('works on characters of real code', () => {
    const source = 'for (let i = 0; i < rows.length; i++) {\n  total += rows[i];\n}\nfor (let j = 0; j < rows.length; j++) {\n  total += rows[';
    const match = findInSequence(chars(source), { minN: 3, maxN: 12, maxLen: 4 });
    assert.equal(match?.n, 12);
    assert.equal(text(match!.tokens), 'i];\n');
  });

  it('scans an 8k-token haystack in one cheap pass', () => {
    let seed = 7;
    const random = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % 5000;
    const haystack = Array.from({ length: 8192 }, random);
    haystack.push(...haystack.slice(100, 106));
    const started = process.hrtime.bigint();
    for (let i = 0; i < 20; i++) assert.equal(findInSequence(haystack, { minN: 2, maxN: 6, maxLen: 4 })?.n, 6);
    // Generous bound: catches quadratic behaviour, not machine speed.
    assert.ok(Number(process.hrtime.bigint() - started) / 1e6 < 2000);
  });
});

describe('NgramIndex lookup', () => {
  const words = wordTokenizer();
  const sizes = { minN: 2, maxN: 6, tokenize: words.tokenize };

  it('finds the context tail in another document and proposes what followed', () => {
    const index = new NgramIndex(sizes);
    index.setDocument('a.ts', 'export function area(width: number, height: number) {\n  return width * height;\n}\n');
    index.setDocument('b.ts', 'const total = sum(values);\nconsole.log(total);\n');
    const match = index.lookup(words.tokenize('function volume(width: number, height'), 10);
    assert.equal(match?.source, 'a.ts');
    assert.equal(words.detokenize(match!.tokens), ': number) {\n  return width');
    assert.equal(index.lookup(words.tokenize('nothing like this anywhere'), 8), null);
  });

  it('prefers the longest match, then preferKey, then the most recently touched source', () => {
    const index = new NgramIndex(sizes);
    index.setDocument('old.ts', 'if (user.isAdmin) { grantAll(); }\nlet x = items.map(fromOld);\n');
    index.setDocument('new.ts', 'let y = items.map(fromNew);\n');
    const context = words.tokenize('items.map(');
    const propose = (opts?: { preferKey?: string; excludeKeys?: string[] }) => words.detokenize(index.lookup(context, 1, opts)!.tokens);
    assert.equal(propose(), 'fromNew');
    assert.equal(propose({ preferKey: 'old.ts' }), 'fromOld');
    assert.equal(propose({ excludeKeys: ['new.ts'] }), 'fromOld');
    index.applyEdits('old.ts', [{ offset: 0, deleteCount: 0, text: '// touched\n' }]);
    assert.equal(propose(), 'fromOld');
    // A longer match beats preference.
    const longer = index.lookup(words.tokenize('if (user.isAdmin) {'), 3, { preferKey: 'new.ts' });
    assert.equal(longer?.source, 'old.ts');
    assert.equal(longer?.n, 6);
  });

  it('takes the latest occurrence inside a document', () => {
    const index = new NgramIndex(sizes);
    index.setDocument('a.py', 'x = load(first)\ny = 1\nx = load(second)\n');
    assert.equal(words.detokenize(index.lookup(words.tokenize('= load('), 1)!.tokens), 'second');
  });

  it('continues a proposal across a chunk boundary', () => {
    const index = new NgramIndex({ minN: 3, maxN: 16, tokenize: chars });
    const doc = Array.from({ length: 400 }, (_, i) => `value_${i} = compute(${i * 7});\n`).join('');
    index.setDocument('big.py', doc);
    const [firstChunk] = splitIntoChunks(doc);
    assert.ok(index.stats().chunks > 3 && firstChunk!.length < doc.length);
    // The tail of the first chunk matches at that chunk's very end: the proposal comes from the next one.
    const match = index.lookup(chars(firstChunk!.slice(-16)), 12);
    assert.equal(match?.n, 16);
    assert.equal(text(match!.tokens), doc.slice(firstChunk!.length, firstChunk!.length + 12));
  });

  it('forgets removed documents', () => {
    const index = new NgramIndex(sizes);
    index.setDocument('a.ts', 'await fetchUser(id);\n');
    const context = words.tokenize('await fetchUser(');
    assert.ok(index.lookup(context, 2));
    index.removeDocument('a.ts');
    assert.equal(index.lookup(context, 2), null);
    assert.equal(index.stats().documents, 0);
  });

  it('searches accepted sequences and keeps only the most recent maxSequences', () => {
    const index = new NgramIndex({ ...sizes, maxSequences: 2 });
    index.addSequence('c1', words.tokenize('retry(fetchOne, 3);'));
    index.addSequence('c2', words.tokenize('retry(fetchTwo, 3);'));
    assert.equal(index.lookup(words.tokenize('x = retry('), 1)?.source, 'c2');
    index.addSequence('c1', words.tokenize('retry(fetchOne, 3);')); // refresh: c2 is now the oldest
    index.addSequence('c3', words.tokenize('parse(input);'));
    assert.deepEqual([index.hasSequence('c1'), index.hasSequence('c2'), index.hasSequence('c3')], [true, false, true]);
    assert.equal(words.detokenize(index.lookup(words.tokenize('x = retry('), 1)!.tokens), 'fetchOne');
    assert.equal(index.stats().sequences, 2);
  });

  it('does not propose from a match at the very end of a source', () => {
    const index = new NgramIndex(sizes);
    index.addSequence('s', words.tokenize('a + b'));
    assert.equal(index.lookup(words.tokenize('x = a + b'), 3), null);
  });

  it('skips binary-looking and oversized documents', () => {
    const index = new NgramIndex({ ...sizes, maxDocumentChars: 1000 });
    index.setDocument('bin', 'PNG\u0000\u0001 header data');
    index.setDocument('huge', 'let a = 1;\n'.repeat(200));
    index.setDocument('ok', 'let a = 1;\n');
    assert.deepEqual({ documents: index.stats().documents, skipped: index.stats().skippedDocuments }, { documents: 1, skipped: 2 });
    assert.equal(index.applyEdits('huge', [{ offset: 0, deleteCount: 0, text: 'x' }]), false);
    // Growing past the limit, or gaining a NUL, drops an indexed document.
    assert.equal(index.applyEdits('ok', [{ offset: 0, deleteCount: 0, text: 'y'.repeat(1000) }]), false);
    index.setDocument('ok', 'let a = 1;\n');
    assert.equal(index.applyEdits('ok', [{ offset: 3, deleteCount: 0, text: '\u0000' }]), false);
    assert.equal(index.stats().documents, 0);
    // A document that shrinks back under the limit is indexed again by setDocument.
    index.setDocument('huge', 'let a = 1;\n');
    assert.equal(index.stats().documents, 1);
  });

  it('validates its sizes', () => {
    assert.throws(() => new NgramIndex({ minN: 0, maxN: 2, tokenize: chars }), RangeError);
  });
});

describe('indexOccurrences (every occurrence of the longest ending, for the suffix proposer)', () => {
  const words = wordTokenizer();
  const sizes = { minN: 2, maxN: 6, tokenize: words.tokenize };

  it('gives every occurrence of the longest match, the preferred document first, each one newest first', () => {
    const index = new NgramIndex(sizes);
    index.setDocument('a.ts', 'x = read(a);\nx = read(b);\n');
    index.setDocument('b.ts', 'y = read(c);\nz.read(d);\n');
    const context = words.tokenize('w = read(');
    const found = indexOccurrences(index, context, { atLeast: 1, limit: 8, preferKey: 'a.ts' })!;
    // " = read(" (5 tokens) in three places; "z.read(" matches "read(" only: left out.
    assert.equal(found.n, 5);
    assert.deepEqual(
      found.found.map((o) => [o.source, words.detokenize(o.after(1))]),
      [
        ['a.ts', 'b'],
        ['a.ts', 'a'],
        ['b.ts', 'c'],
      ],
    );
    assert.equal(words.detokenize(found.found[0]!.before(7)), '\nx = read(');
    assert.equal(indexOccurrences(index, context, { atLeast: 1, limit: 2 })!.found.length, 2);
    assert.equal(indexOccurrences(index, context, { atLeast: 6, limit: 8 }), null);
  });

  it('reads around an occurrence across chunk boundaries', () => {
    const index = new NgramIndex({ minN: 3, maxN: 16, tokenize: chars });
    const doc = Array.from({ length: 400 }, (_, i) => `value_${i} = compute(${i * 7});\n`).join('');
    index.setDocument('big.py', doc);
    const [first, second] = splitIntoChunks(doc);
    // The second chunk's first line, once in the document.
    const context = chars(second!.slice(0, 12));
    const found = indexOccurrences(index, context, { atLeast: 1, limit: 4 })!;
    assert.deepEqual([found.n, found.found.length], [12, 1]);
    // Before it: the end of the first chunk, then the match.
    assert.equal(text(found.found[0]!.before(16)), first!.slice(-4) + second!.slice(0, 12));
    assert.equal(text(found.found[0]!.after(4)), second!.slice(12, 16));
  });
});
