// The n-gram index's bounds: total indexed text capped (least recently used documents dropped), and
// big documents indexed in slices that leave the event loop to completions.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NgramIndex } from '../../src/ngram';
import { syntheticSource, wordTokenizer } from '../../testbed/syntheticText';

const TWO_MB = 2_000_000;

describe('NgramIndex memory budget', () => {
  it('caps the total indexed text, dropping the least recently used documents', () => {
    const tokenize = wordTokenizer();
    const index = new NgramIndex({ minN: 2, maxN: 6, tokenize });
    // Two fit in the default budget of 4 M characters, three do not.
    const [a, b, c] = ['alpha', 'beta', 'gamma'].map((seed) => syntheticSource(seed, 1_900_000));
    index.setDocument('a.ts', a!);
    index.setDocument('b.ts', b!);
    // A completion in a.ts makes it the most recently used: b.ts is the one to go.
    assert.equal(index.useDocument('a.ts'), 'indexed');
    index.setDocument('c.ts', c!);
    const stats = index.stats();
    assert.ok(stats.indexedChars <= 4_000_000, `indexed ${stats.indexedChars} chars`);
    assert.equal(stats.documents, 2);
    assert.equal(stats.evictedDocuments, 1);
    assert.equal(index.useDocument('b.ts'), 'evicted');
    assert.equal(index.documentText('a.ts'), a);
    assert.equal(index.documentText('c.ts'), c);
    // An edit to a dropped document asks for its text again (the worker then sends a resync).
    assert.equal(index.applyEdits('b.ts', [{ offset: 0, deleteCount: 0, text: 'x' }]), false);
    // Sent again, it is indexed and the now least recently used one goes.
    index.setDocument('b.ts', b!);
    assert.equal(index.useDocument('b.ts'), 'indexed');
    assert.equal(index.useDocument('a.ts'), 'evicted');
    assert.ok(index.stats().indexedChars <= 4_000_000);
  });

  it('edits that grow the indexed text past the cap drop other documents, never the edited one', () => {
    const index = new NgramIndex({ minN: 2, maxN: 6, tokenize: wordTokenizer(), maxTotalChars: 10_000 });
    index.setDocument('old.ts', syntheticSource('old', 4_000));
    index.setDocument('new.ts', syntheticSource('new', 4_000));
    assert.equal(index.applyEdits('new.ts', [{ offset: 0, deleteCount: 0, text: syntheticSource('paste', 3_000) }]), true);
    assert.equal(index.useDocument('new.ts'), 'indexed');
    assert.equal(index.useDocument('old.ts'), 'evicted');
  });
});

describe('NgramIndex slices', () => {
  it('indexes a 2 MB document without working more than ~50 ms of CPU between two turns of the event loop', async () => {
    const tokenize = wordTokenizer();
    const text = syntheticSource('big', TWO_MB);
    const sync = new NgramIndex({ minN: 2, maxN: 6, tokenize });
    // CPU time, not wall time: what the event loop spent working between two turns, which a busy
    // machine that takes the core away (another test file, a build) does not stretch.
    const cpuMs = () => {
      const used = process.cpuUsage();
      return (used.user + used.system) / 1000;
    };
    const syncStarted = cpuMs();
    sync.setDocument('big.ts', text);
    const wholeMs = cpuMs() - syncStarted;

    const index = new NgramIndex({ minN: 2, maxN: 6, tokenize });
    let longestGapMs = 0;
    let last = cpuMs();
    let probing = true;
    const probe = () => {
      const now = cpuMs();
      longestGapMs = Math.max(longestGapMs, now - last);
      last = now;
      if (probing) setImmediate(probe);
    };
    setImmediate(probe);
    const started = cpuMs();
    try {
      const indexed = index.setDocumentInSlices('big.ts', text);
      // Edits typed while it is indexed are applied afterwards, in order.
      assert.equal(index.applyEdits('big.ts', [{ offset: 0, deleteCount: 0, text: '// head\n' }]), true);
      assert.equal(index.useDocument('big.ts'), 'pending');
      assert.equal(index.applyEdits('big.ts', [{ offset: 3, deleteCount: 4, text: 'top' }]), true);
      await indexed;
    } finally {
      probing = false;
    }
    const slicedMs = cpuMs() - started;
    console.log(`2 MB: ${wholeMs.toFixed(0)} ms of CPU at once; in slices ${slicedMs.toFixed(0)} ms with the event loop working at most ${longestGapMs.toFixed(1)} ms between turns`);
    // Against the same document indexed at once in the same process: without slices the gap is the whole.
    assert.ok(longestGapMs < Math.max(50, wholeMs / 4), `event loop blocked ${longestGapMs.toFixed(1)} ms of CPU (the whole document at once: ${wholeMs.toFixed(0)} ms)`);
    assert.equal(index.documentText('big.ts'), `// top\n${text}`);
    sync.setDocument('big.ts', `// top\n${text}`);
    assert.deepEqual(index.documentTokens('big.ts'), sync.documentTokens('big.ts'));
    assert.ok(index.lookup(tokenize('const big_1234 = compute_big('), 3));
  });

  it('a newer text, a close or clear stops the slices of the older one', async () => {
    const index = new NgramIndex({ minN: 2, maxN: 6, tokenize: wordTokenizer(), sliceMs: 1 });
    const first = index.setDocumentInSlices('doc.ts', syntheticSource('first', 300_000));
    const second = index.setDocumentInSlices('doc.ts', syntheticSource('second', 300_000));
    await Promise.all([first, second]);
    assert.equal(index.documentText('doc.ts'), syntheticSource('second', 300_000));
    const closed = index.setDocumentInSlices('closed.ts', syntheticSource('closed', 300_000));
    index.removeDocument('closed.ts');
    await closed;
    assert.equal(index.useDocument('closed.ts'), 'unknown');
    const cleared = index.setDocumentInSlices('later.ts', syntheticSource('later', 300_000));
    index.clear();
    await cleared;
    assert.deepEqual([index.stats().documents, index.stats().pendingDocuments], [0, 0]);
  });
});
