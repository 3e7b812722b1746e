// The suffix proposer (speculation/suffixProposer.ts) on made-up histories and documents: every
// occurrence of the history's ending found (in the history itself, from one token up, and through
// the n-gram index's hash chains), merged by frequency, scored with rates learned per match length;
// its chain is the tree's likeliest path; what it keeps is bounded; decoding with it equals plain.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { documentSuffixProposer, SUFFIX_MAX_OCCURRENCES } from '../../src/inference/documentNgrams';
import { HISTORY_INSPECTED, HistoryIndex, NgramIndex, suffixMatches } from '../../src/ngram';
import { DEFAULT_SPECULATION } from '../../src/settings/declaredSettings';
import { sourceStats } from '../../src/shared/generationStats';
import type { Token } from '../../src/shared/decoding';
import { proposersFor } from '../../src/speculation/modeProposers';
import { SpeculationPolicy } from '../../src/speculation/policy';
import { decode } from '../../src/speculation/speculativeDecoder';
import { priorRate, SuffixAcceptance, SuffixRates } from '../../src/speculation/suffixAcceptance';
import { likeliestPath, SuffixProposer } from '../../src/speculation/suffixProposer';
import { isTokenTree, ScoredTrie } from '../../src/speculation/tokenTree';
import { StopRules } from '../../src/stopping/stopRules';
import { FakeEvaluator, fakeDetokenize, repetitiveModel } from '../support/fakeModel';

const chars = (text: string) => Array.from(text, (c) => c.codePointAt(0)!);
const text = (tokens: readonly number[]) => String.fromCodePoint(...tokens);
const speculation = { ...DEFAULT_SPECULATION, ngramMinMatch: 3, ngramMaxMatch: 8 };

function indexOf(documents: Record<string, string>): NgramIndex {
  const index = new NgramIndex({ minN: 3, maxN: 8, tokenize: chars });
  for (const [key, body] of Object.entries(documents)) index.setDocument(key, body);
  return index;
}

const proposer = (index: NgramIndex | null, policy = new SpeculationPolicy({ ...speculation }), key?: string) => documentSuffixProposer(index, key, speculation, policy);

describe('suffix matches', () => {
  it('finds every occurrence of the longest ending in the open documents through the index', () => {
    const index = indexOf({ a: 'call(alpha); call(alpha); call(beta);', b: 'x = call(alpha);' });
    const m = suffixMatches(new HistoryIndex(), index, chars('go call('), { maxN: 8, maxLen: 6, limit: 32 })!;
    // " call(" (6 tokens) ends three times in the documents (the first "call(" has no blank before it).
    assert.equal(m.matchLength, 6);
    assert.deepEqual(m.continuations.map(text).sort(), ['alpha)', 'alpha)', 'beta);']);
  });

  it('finds matches of a single token in the history itself, below the index n-gram size', () => {
    const index = indexOf({ a: 'nothing alike here' });
    const m = suffixMatches(new HistoryIndex(), index, chars(' a1 a2 a'), { maxN: 8, maxLen: 2, limit: 32 })!;
    assert.equal(m.matchLength, 2);
    assert.deepEqual(m.continuations.map(text), ['2 ', '1 ']);
    const one = suffixMatches(new HistoryIndex(), index, chars('zazbz'), { maxN: 8, maxLen: 2, limit: 32 })!;
    assert.equal(one.matchLength, 1);
    assert.deepEqual(one.continuations.map(text), ['bz', 'az']);
  });

  it('counts once an occurrence seen both in the prompt and in the document it was cut from', () => {
    const body = 'const total = sum(values);\nconst count = sum(values);\n';
    const index = indexOf({ doc: body });
    const history = chars(`${body}const mean = sum(`);
    const m = suffixMatches(new HistoryIndex(), index, history, { maxN: 8, maxLen: 4, limit: 32 })!;
    assert.deepEqual(m.continuations.map(text), ['valu', 'valu']);
  });

  it('keeps at most `limit` occurrences and looks at a bounded number of them', () => {
    const history = new Array<number>(HISTORY_INSPECTED * 4).fill(7);
    const index = new HistoryIndex();
    const m = suffixMatches(index, null, history, { maxN: 8, maxLen: 3, limit: 5 })!;
    assert.equal(m.matchLength, 8);
    // Every occurrence has the same surroundings and counts once, but the newest two, whose
    // continuations the history's end cuts short.
    assert.deepEqual(m.continuations, [[7], [7, 7], [7, 7, 7]]);
    // Token 1 ten thousand times, each after and before another token: one-token matches everywhere.
    const varied = Array.from({ length: 20_000 }, (_, i) => (i % 2 === 0 ? 1 : 2 + ((i * 7919) % 100_003)));
    const many = suffixMatches(new HistoryIndex(), null, [...varied, 200_000, 1], { maxN: 8, maxLen: 3, limit: SUFFIX_MAX_OCCURRENCES })!;
    assert.equal(many.matchLength, 1);
    assert.equal(many.continuations.length, SUFFIX_MAX_OCCURRENCES);
  });

  it('follows a growing history, and starts afresh on another one', () => {
    const index = new HistoryIndex();
    index.follow([1, 2, 3]);
    index.follow([1, 2, 3, 1, 2]);
    assert.equal(index.length, 5);
    assert.deepEqual(index.longestMatches(8, 8), { n: 2, ends: [2] });
    index.follow([9, 9]);
    assert.equal(index.length, 2);
    assert.deepEqual(index.longestMatches(8, 8), { n: 1, ends: [1] });
  });
});

describe('suffix proposer', () => {
  it('merges the continuations by frequency: the majority is the chain, the others hang beside it', () => {
    const index = indexOf({ a: ' f(one); f(one); f(one); f(two);' });
    const offer = proposer(index).offer(chars('g = f('), 6)!;
    assert.equal(text(offer.chain), 'one); ');
    assert.ok(isTokenTree(offer.tree) && offer.tree.tokens.length <= 6);
    // Its root holds both first tokens: 'o' (3 of 4 occurrences) and 't' (1 of 4).
    const roots = offer.tree.tokens.filter((_, i) => offer.tree.parents[i] === -1).map((t) => String.fromCodePoint(t));
    assert.deepEqual(roots.sort(), ['o', 't']);
    // " f(": three tokens.
    assert.equal(offer.matchLength, 3);
    assert.equal(offer.shares[0], 0.75);
    // Scored share × the rate of a 3-token match, then of 4, ... (the match grows with each token).
    const rates = new SuffixRates();
    assert.ok(Math.abs(offer.scores[0]! - 0.75 * rates.rate(3)) < 1e-12);
    assert.ok(Math.abs(offer.scores[1]! - 0.75 * rates.rate(3) * rates.rate(4)) < 1e-12);
  });

  it("offers the trie's likeliest path as its chain, whatever the tree keeps", () => {
    const trie = new ScoredTrie();
    const a = trie.addNode(-1, 1, 0.5);
    trie.addNode(-1, 2, 0.4);
    const b = trie.addNode(a, 3, 0.2);
    const d = trie.addNode(a, 4, 0.3);
    trie.addNode(b, 5, 0.1);
    assert.deepEqual(likeliestPath(trie, 8), [a, d]);
    const e = trie.addNode(d, 6, 0.25);
    assert.deepEqual(likeliestPath(trie, 8), [a, d, e]);
    assert.deepEqual(likeliestPath(trie, 1), [a]);
  });

  it('learns per match length: rejected guesses lower what later offers of that length score, accepted ones raise it', () => {
    const policy = new SpeculationPolicy({ ...speculation });
    const index = indexOf({ a: 'f(one); f(one); f(two); f(two);' });
    const before = proposer(index, policy).offer(chars('g = f('), 4)!;
    const model = policy.model('suffix') as SuffixAcceptance;
    assert.ok(model instanceof SuffixAcceptance);
    for (let i = 0; i < 20; i++) policy.record('suffix', before, 4, 0);
    const after = proposer(index, policy).offer(chars('g = f('), 4)!;
    assert.ok(after.scores[0]! < before.scores[0]! / 2, `${after.scores[0]} after rejections, ${before.scores[0]} before`);
    // A longer match is learned apart: still at its prior.
    assert.equal(model.rates.rate(6), Math.min(0.98, priorRate(6)));
    for (let i = 0; i < 40; i++) policy.record('suffix', before, 4, 4);
    const trusted = proposer(index, policy).offer(chars('g = f('), 4)!;
    assert.ok(trusted.scores[0]! > before.scores[0]!, `${trusted.scores[0]} after acceptances, ${before.scores[0]} at the prior`);
  });

  it("weighs an offer by its chain's scores: the expected tokens of verifying k of them", () => {
    const rates = new SuffixRates();
    const model = new SuffixAcceptance(rates);
    const offer = { kind: 'tree' as const, tree: { tokens: [1, 2], parents: [-1, 0] }, chain: [1, 2], matchLength: 3, shares: [1, 0.5], scores: [0.6, 0.2] };
    assert.deepEqual(Array.from(model.expectedTokensUpTo(3, offer)), [1, 1.6, 1.8, 1.8]);
    assert.equal(model.usable(offer), true);
    assert.equal(model.usable({ ...offer, chain: [] }), false);
  });

  it('proposes nothing where the ending never occurred, or under its floor', () => {
    assert.equal(proposer(indexOf({ a: 'abc' })).offer(chars('xyz'), 4), null);
    const weak = new SuffixProposer(() => ({ matchLength: 1, continuations: [[1], [2], [3]] }), new SuffixRates(), { floor: 0.5 });
    assert.equal(weak.offer([9], 4), null);
    const strong = new SuffixProposer(() => ({ matchLength: 8, continuations: [[1], [1], [1]] }), new SuffixRates(), { floor: 0.5 });
    assert.deepEqual(strong.offer([9], 4)?.chain, [1]);
  });

  it('keeps its tree within the batch: at most maxLen nodes however many continuations', () => {
    const continuations = Array.from({ length: 32 }, (_, i) => [i % 5, i, i + 1, i + 2]);
    const p = new SuffixProposer(() => ({ matchLength: 2, continuations }));
    for (const maxLen of [1, 3, 7, 15]) {
      const offer = p.offer([0], maxLen)!;
      assert.ok(offer.tree.tokens.length <= maxLen && isTokenTree(offer.tree), `maxLen ${maxLen}`);
      assert.ok(offer.chain.length <= maxLen);
    }
  });

  it('decoding with it in ngram mode equals plain decoding, with guesses accepted', async () => {
    const model = repetitiveModel(11, 3);
    const prompt: Token[] = Array.from({ length: 40 }, (_, i) => (i * 7) % 50);
    const run = async (mode: 'plain' | 'ngram') => {
      const target = new FakeEvaluator(model);
      // A clock that moves only with the target's batches (a CPU-like cost), so the policy weighs the same costs every run.
      const clock = { t: 0 };
      const append = target.append.bind(target);
      target.append = (input, outputs, confidence) => {
        clock.t += 1 + 0.1 * (input.length - 1);
        return append(input, outputs, confidence);
      };
      const stop = new StopRules({ detokenize: fakeDetokenize, isEndToken: () => false, maxTokens: 120 });
      const policy = new SpeculationPolicy({ ...speculation, adaptive: true });
      const proposers = proposersFor(mode, [documentSuffixProposer(null, undefined, speculation, policy)]);
      const stats = await decode({ mode, target, prompt, stop, policy, proposers, now: () => clock.t });
      return { tokens: [...stop.tokens], stats };
    };
    const plain = await run('plain');
    const spec = await run('ngram');
    assert.deepEqual(spec.tokens, plain.tokens);
    const by = sourceStats(spec.stats.speculation, 'suffix');
    assert.ok(by.acceptedTokens > 20, `accepted ${by.acceptedTokens} of ${by.proposedTokens}`);
    assert.ok(spec.stats.speculation.targetEvaluations < plain.stats.speculation.targetEvaluations);
  });
});
