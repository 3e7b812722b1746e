// Which KV sequence a prompt decodes on (inference/promptStates.ts) and how many sequences the
// memory allows (inference/sequenceBudget.ts): pure, table-driven.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseSlot, PromptStates, type SequenceSlot } from '../../src/inference/promptStates';
import { cellsPerSequence, chooseSequenceBudget, DEFAULT_MAX_SEQUENCES, kvBytesPerToken, kvMemory } from '../../src/inference/sequenceBudget';

const slot = (owner: string | null, tokens: number[], lastUsed: number): SequenceSlot => ({ owner, tokens, lastUsed });

describe('chooseSlot', () => {
  const cases: { name: string; slots: SequenceSlot[]; owner: string; prompt: number[]; index: number; evicted: string | null; reusable: number }[] = [
    { name: 'the owner keeps its own sequence', slots: [slot('a', [1, 2], 5), slot('b', [1, 2, 3], 1)], owner: 'b', prompt: [1, 2, 3, 4], index: 1, evicted: null, reusable: 3 },
    { name: 'a new owner takes a free sequence before an owned one', slots: [slot('a', [1, 2, 3], 1), slot(null, [], 0)], owner: 'c', prompt: [1, 2, 3], index: 1, evicted: null, reusable: 0 },
    {
      name: 'among free ones, the longest common prefix',
      slots: [slot(null, [9], 0), slot(null, [1, 2, 7], 3), slot(null, [1, 2, 3, 8], 2)],
      owner: 'c',
      prompt: [1, 2, 3, 4],
      index: 2,
      evicted: null,
      reusable: 3,
    },
    { name: 'all owned: the least recently used is taken', slots: [slot('a', [1], 7), slot('b', [1, 2], 3), slot('c', [5], 9)], owner: 'd', prompt: [1, 2], index: 1, evicted: 'b', reusable: 2 },
    { name: 'one sequence: everyone shares it', slots: [slot('a', [1, 2, 3], 1)], owner: 'b', prompt: [1, 2, 4], index: 0, evicted: 'a', reusable: 2 },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.deepEqual(chooseSlot(c.slots, c.owner, c.prompt), { index: c.index, evicted: c.evicted, reusable: c.reusable });
    });
  }
  it('refuses to choose among no sequences', () => {
    assert.throws(() => chooseSlot([], 'a', [1]), /no KV sequence/);
  });
});

describe('PromptStates', () => {
  const evaluator = () => ({ tokens: [] as number[] });
  it('gives each owner its own sequence, takes the least recently used one when full, and logs why', () => {
    const logs: string[] = [];
    const targets = [evaluator(), evaluator()];
    const drafts = [evaluator()];
    const states = new PromptStates(targets, drafts, 1000, (m) => logs.push(m));
    const a = states.acquire('window 1 · completion', [1]);
    a.target.tokens.push(1, 2, 3);
    const b = states.acquire('window 2 · completion', [4]);
    assert.notEqual(a.target, b.target);
    // A draft with fewer sequences shares its first.
    assert.equal(a.draft, drafts[0]);
    assert.equal(b.draft, drafts[0]);
    assert.equal(states.acquire('window 1 · completion', [1]).target, a.target);
    assert.equal(logs.length, 0);
    // Window 2's is now the least recently used.
    const c = states.acquire('window 3 · completion', [7]);
    assert.equal(c.target, b.target);
    assert.equal(states.evictions, 1);
    assert.match(logs[0]!, /KV sequence 1 \(0 tokens of window 2 · completion\) given to window 3 · completion: all 2 sequences were in use/);
    assert.deepEqual(
      states.report().map((r) => [r.owner, r.tokens, r.bytes]),
      [
        ['window 1 · completion', 3, 3000],
        ['window 3 · completion', 0, 0],
      ],
    );
    // A window that went away frees its sequence without eviction for the next owner.
    states.release((owner) => owner.startsWith('window 1 '));
    assert.equal(states.acquire('window 4 · completion', [1, 2]).target, a.target);
    assert.equal(states.evictions, 1);
  });
});

describe('the KV sequence budget', () => {
  const v3 = { blockCount: 8, headCount: 8, headCountKv: 8, embeddingLength: 512 };
  const qwen15 = { blockCount: 28, headCount: 12, headCountKv: 2, embeddingLength: 1536 };
  it('KV bytes per token: layers x KV heads x head size x (K and V) x F16', () => {
    assert.equal(kvBytesPerToken(v3), 8 * 8 * 64 * 2 * 2);
    assert.equal(kvBytesPerToken(qwen15), 28 * 2 * 128 * 2 * 2);
    assert.equal(cellsPerSequence(1000), 1024);
    assert.equal(cellsPerSequence(2048), 2048);
  });
  const GiB = 2 ** 30;
  const MiB = 2 ** 20;
  const cases: { name: string; input: Parameters<typeof chooseSequenceBudget>[0]; sequences: number; reason: RegExp }[] = [
    {
      name: 'plenty of memory: the default cap',
      input: { bytesPerToken: 16_384, contextSize: 2048, freeBytes: 16 * GiB, weightBytes: 30 * MiB, cap: 'auto', memoryName: 'RAM' },
      sequences: DEFAULT_MAX_SEQUENCES,
      reason: /4 \(the default of 4\), 32 MiB each/,
    },
    {
      name: 'a setting caps it',
      input: { bytesPerToken: 16_384, contextSize: 2048, freeBytes: 16 * GiB, weightBytes: 30 * MiB, cap: 2, memoryName: 'RAM' },
      sequences: 2,
      reason: /draftline\.kvSequences 2/,
    },
    {
      name: 'a setting beyond the most allowed is cut to it',
      input: { bytesPerToken: 16, contextSize: 256, freeBytes: 16 * GiB, weightBytes: 0, cap: 99, memoryName: 'RAM' },
      sequences: 16,
      reason: /16/,
    },
    {
      name: 'memory for some: as many as half the room after the weights holds',
      input: { bytesPerToken: 57_344, contextSize: 4096, freeBytes: 6 * GiB, weightBytes: 4.5 * GiB, cap: 'auto', memoryName: 'GPU memory' },
      sequences: 3,
      reason: /3 of the default of 4: 224 MiB each, half the GPU memory free after the weights holds 3/,
    },
    {
      name: 'too little memory for even one: one sequence, and a message that says so',
      input: { bytesPerToken: 57_344, contextSize: 4096, freeBytes: 4 * GiB, weightBytes: 4.5 * GiB, cap: 'auto', memoryName: 'RAM' },
      sequences: 1,
      reason: /one sequence: a sequence takes 224 MiB and 4096 MiB of free RAM leaves room for none next to 4608 MiB of weights; every prompt shares it/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const budget = chooseSequenceBudget(c.input);
      assert.equal(budget.sequences, c.sequences);
      assert.match(budget.reason, c.reason);
      assert.equal(budget.bytesPerSequence, c.input.bytesPerToken * cellsPerSequence(c.input.contextSize));
    });
  }
});

describe('where the KV budget is counted', () => {
  const GiB = 2 ** 30;
  it('a GPU that reports its memory: GPU memory', () => {
    assert.deepEqual(kvMemory(true, { total: 8 * GiB, free: 6 * GiB }, 3 * GiB), { freeBytes: 6 * GiB, memoryName: 'GPU memory' });
  });
  it('a backend naming a GPU that reports none (a CPU-only machine): RAM, not "0 MiB of free GPU memory"', () => {
    const memory = kvMemory(true, { total: 0, free: 0 }, 3 * GiB);
    assert.deepEqual(memory, { freeBytes: 3 * GiB, memoryName: 'RAM' });
    const budget = chooseSequenceBudget({ bytesPerToken: 12_288, contextSize: 2048, weightBytes: GiB, cap: 'auto', ...memory });
    assert.doesNotMatch(budget.reason, /GPU/);
  });
  it('the CPU: RAM', () => {
    assert.deepEqual(kvMemory(false, null, 3 * GiB), { freeBytes: 3 * GiB, memoryName: 'RAM' });
  });
});
