// The next-edit generation loop (nextEdit/generation.ts) on a stand-in model that rewrites a
// window: the same output as plain decoding in every mode, edits streamed once final, the first one
// long before the window's end, a keystroke (the abort) ends it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DecodeMode, Token } from '../../src/shared/decoding';
import type { SpeculationSettings } from '../../src/shared/settings';
import { findInSequence } from '../../src/ngram';
import { generateNextEdit } from '../../src/nextEdit/generation';
import type { NextEditPrompt, TextReplacement } from '../../src/nextEdit/types';
import { NgramProposer } from '../../src/speculation/ngramProposer';
import { SpeculationPolicy } from '../../src/speculation/policy';
import type { GreedyEvaluator } from '../../src/speculation/greedyEvaluator';
import { FakeEvaluator, hashModel } from '../support/fakeModel';
import { sourceStats } from '../../src/shared/generationStats';

const tokenize = (text: string): Token[] => [...text].map((c) => c.charCodeAt(0));
const detokenize = (tokens: readonly Token[]) => String.fromCharCode(...tokens);

const SOURCE = `${Array.from({ length: 20 }, (_, i) => `  const value${i} = compute(${i}, "line ${i}");`).join('\n')}\n`;
/** The edit a next-edit model would make: line 2 changed, line 12 changed. */
const UPDATED = SOURCE.replace('compute(2, "line 2")', 'computeFast(2, "line 2", cache)').replace('value12 =', 'renamed12 =');
const STOP = '<|end|>';

function nextEditPrompt(source = SOURCE): NextEditPrompt {
  return {
    format: 'sweep',
    prompt: `<|file_sep|>original\n${source}<|file_sep|>updated\n`,
    region: { start: 0, end: source.length },
    copySource: source,
    stop: [STOP],
    maxTokens: 2 * source.length,
  };
}

/** Stand-in next-edit model: after the prompt it writes `updated` then the stop string; hashes elsewhere. */
function rewriter(promptTokens: number, updated: string) {
  const expected = tokenize(`${updated}${STOP}garbage after the stop`);
  const h = hashModel(5, 128, 3);
  return (history: readonly Token[]): Token => {
    const i = history.length - promptTokens;
    return i >= 0 && i < expected.length && history.slice(promptTokens).every((t, j) => t === expected[j]) ? expected[i] : h(history);
  };
}

/** Stand-in for outputToEdit's streaming reduction: a changed line is final once the next line agrees again. */
function finalEdits(source: string) {
  const src = source.split('\n');
  return (partial: string): TextReplacement[] => {
    const out = partial
      .slice(0, partial.lastIndexOf('\n') + 1)
      .split('\n')
      .slice(0, -1);
    const edits: TextReplacement[] = [];
    let offset = 0;
    for (let i = 0; i + 1 < out.length; i++) {
      if (out[i] !== src[i] && out[i + 1] === src[i + 1]) edits.push({ start: offset, end: offset + src[i].length, text: out[i] });
      offset += src[i].length + 1;
    }
    return edits;
  };
}

/** A clock that advances with each target evaluation as a CPU's does (1 + 0.3 per extra token, issue #39's shape). */
function clocked(evaluator: FakeEvaluator): { target: GreedyEvaluator; now: () => number } {
  let clock = 0;
  return {
    target: {
      get tokens() {
        return evaluator.tokens;
      },
      capacity: evaluator.capacity,
      append: async (input, outputs, conf) => {
        clock += 1 + 0.3 * (input.length - 1);
        return evaluator.append(input, outputs, conf);
      },
      truncate: (n) => evaluator.truncate(n),
    },
    now: () => clock,
  };
}

const settings: SpeculationSettings = { maxProposal: 8, ngramMinMatch: 2, ngramMaxMatch: 6, draftMinConfidence: 0, adaptive: false, lookahead: false };

async function generate(mode: DecodeMode, opts: { signal?: AbortSignal; onEdit?: (e: TextReplacement, ms: number) => void; updated?: string } = {}) {
  const prompt = nextEditPrompt();
  const promptTokens = tokenize(prompt.prompt).length;
  const { target, now } = clocked(new FakeEvaluator(rewriter(promptTokens, opts.updated ?? UPDATED)));
  return generateNextEdit({
    target,
    tokenize,
    detokenize,
    prompt,
    mode,
    policy: new SpeculationPolicy(settings),
    proposers: [
      new NgramProposer((history, maxLen) => {
        const match = findInSequence(history, { minN: 2, maxN: 6, maxLen });
        return match && { tokens: match.tokens, matchLength: match.n };
      }),
    ],
    finalEdits: finalEdits(SOURCE),
    onEdit: opts.onEdit,
    signal: opts.signal,
    now,
  });
}

describe('next-edit generation', () => {
  it('every mode writes the same window as plain decoding; the copy modes in far fewer target evaluations', async () => {
    const plain = await generate('plain');
    assert.equal(plain.text, UPDATED);
    assert.equal(plain.stats.stopReason, 'stopSequence');
    for (const mode of ['copy', 'hybrid', 'ngram'] as const) {
      const spec = await generate(mode);
      assert.deepEqual(spec.tokens, plain.tokens, mode);
      assert.equal(spec.text, plain.text, mode);
      assert.deepEqual(spec.edits, plain.edits, mode);
    }
    const copy = await generate('copy');
    const perEvaluation = copy.tokens.length / copy.stats.speculation.targetEvaluations;
    assert.ok(perEvaluation > 6, `${perEvaluation.toFixed(1)} tokens per evaluation`);
    assert.ok(sourceStats(copy.stats.speculation, 'copy').acceptedTokens > 0.9 * copy.tokens.length - 40);
    // After the prompt (the same for both): at the CPU-like cost of a batch, over 2.5x.
    const decodeMs = (r: typeof plain) => r.windowMs - r.stats.promptMs;
    assert.ok(decodeMs(copy) < decodeMs(plain) / 2.5, `copy ${decodeMs(copy)} vs plain ${decodeMs(plain)} (virtual ms)`);
  });

  it('streams each edit once, as soon as the line after it agrees with the window, long before the window ends', async () => {
    const seen: { edit: TextReplacement; ms: number }[] = [];
    const copy = await generate('copy', { onEdit: (edit, ms) => seen.push({ edit, ms }) });
    assert.equal(seen.length, 2);
    assert.deepEqual(
      seen.map((s) => s.edit.text),
      ['  const value2 = computeFast(2, "line 2", cache);', '  const renamed12 = compute(12, "line 12");'],
    );
    assert.equal(copy.timeToFirstEditMs, seen[0].ms);
    assert.ok(seen[0].ms < seen[1].ms);
    const plain = await generate('plain');
    assert.ok(copy.timeToFirstEditMs! <= 0.5 * plain.windowMs, `first edit at ${copy.timeToFirstEditMs} vs plain window ${plain.windowMs}`);
    assert.ok(copy.timeToFirstEditMs! < copy.windowMs);
  });

  it('a keystroke (the abort) stops decoding at its next step and streams nothing after it', async () => {
    const plain = await generate('plain');
    const controller = new AbortController();
    const seen: TextReplacement[] = [];
    const partial = await generate('copy', {
      signal: controller.signal,
      onEdit: (edit) => {
        seen.push(edit);
        controller.abort();
      },
    });
    assert.equal(partial.stats.stopReason, 'abort');
    assert.equal(seen.length, 1);
    assert.ok(partial.tokens.length < plain.tokens.length);
    assert.deepEqual(partial.tokens, plain.tokens.slice(0, partial.tokens.length));
    const aborted = new AbortController();
    aborted.abort();
    const none = await generate('copy', { signal: aborted.signal });
    assert.equal(none.tokens.length, 0);
    assert.equal(none.timeToFirstEditMs, undefined);
  });
});
