import type { LlamaContextSequence } from './llamaTypes';
import type { Token } from '../shared/decoding';
import type { EvaluatedNext, RankedNext } from '../speculation/greedyEvaluator';
import type { TotalLogitWeightSupport } from './evaluatorPaths';

/**
 * The library path (EvaluatorPath `library`): node-llama-cpp's public `controlledEvaluate`, for a
 * version whose internals the other paths need are missing. Slower, same tokens.
 */

/**
 * What the library path asks controlledEvaluate for, and what it reads back. `totalLogitWeight` is
 * node-llama-cpp 3.22+ only (3.21's types lack it and it ignores it), hence typed here, not imported.
 */
interface LibraryGenerateNext {
  token: true;
  totalLogitWeight?: true;
  confidence?: true;
  options: { temperature: number };
}
interface LibraryNext {
  token?: Token | null;
  confidence?: number;
  totalLogitWeight?: number;
}

/**
 * Evaluates `input` and reads the greedy token after each position from `firstOutput` on, with its
 * probability when `withConfidence`; learns into `reports.library` whether this version reports
 * totalLogitWeight.
 */
export async function libraryGreedy(sequence: LlamaContextSequence, input: readonly Token[], firstOutput: number, withConfidence: boolean, reports: TotalLogitWeightSupport): Promise<EvaluatedNext[]> {
  // totalLogitWeight, not confidence: the same number for a greedy token, without a sort. Until it
  // is known whether this version reports it, both are asked for (one sort, once): a version
  // without it answers with its confidence, one with it with both.
  const known = reports.library;
  const generateNext: LibraryGenerateNext = {
    token: true,
    ...(withConfidence && known !== false ? { totalLogitWeight: true } : {}),
    ...(withConfidence && known !== true ? { confidence: true } : {}),
    options: { temperature: 0 },
  };
  const items = input.map((token, i) => (i >= firstOutput ? ([token, { generateNext }] as const) : token));
  const results = await sequence.controlledEvaluate(items as never);
  const out: EvaluatedNext[] = [];
  for (let i = firstOutput; i < input.length; i++) {
    const next = results[i]?.next as LibraryNext | undefined;
    if (next?.token == null) throw new Error(`no next token at input position ${i}`);
    const weight = next.totalLogitWeight;
    if (withConfidence && known === undefined) reports.library = weight !== undefined;
    const confidence = weight !== undefined ? (weight > 0 ? 1 / weight : undefined) : next.confidence;
    out.push(withConfidence && confidence !== undefined ? { token: next.token, confidence } : { token: next.token });
  }
  return out;
}

/** Evaluates `input` and ranks the `top` best tokens after each position from `firstOutput` on, from the library's probabilities. */
export async function libraryRanked(sequence: LlamaContextSequence, input: readonly Token[], firstOutput: number, top: number, withProbabilities = false): Promise<RankedNext[]> {
  const items = input.map((token, i) => (i >= firstOutput ? ([token, { generateNext: { token: true, probabilities: true, options: { temperature: 0 } } }] as const) : token));
  const results = await sequence.controlledEvaluate(items as never);
  const out: RankedNext[] = [];
  for (let i = firstOutput; i < input.length; i++) {
    const next = results[i]?.next as { token?: Token | null; probabilities?: Map<Token, number> } | undefined;
    if (next?.token == null || !next.probabilities) throw new Error(`no next token at input position ${i}`);
    const pairs: [Token, number][] = [];
    for (const pair of next.probabilities) {
      if (pairs.length > top) break;
      pairs.push(pair);
    }
    out.push(rankedFromProbabilities(next.token, pairs, top, withProbabilities));
  }
  return out;
}

/**
 * RankedNext from the library's probabilities, most probable first (`pairs`: at least top + 1 of them
 * when the vocabulary has that many): the greedy token `selected` first whatever the (unstable) sort
 * put first among equals, and the margin ln(p1 / p2) = logit1 − logit2; with `withProbabilities`, the probabilities themselves.
 */
export function rankedFromProbabilities(selected: Token, pairs: readonly (readonly [Token, number])[], top: number, withProbabilities = false): RankedNext {
  const best = pairs.find(([token]) => token === selected);
  const ordered = best ? [best, ...pairs.filter(([token]) => token !== selected)] : [...pairs];
  const kept = ordered.slice(0, top);
  const [first, second] = ordered;
  const margin = first && second && second[1] > 0 ? Math.log(first[1]) - Math.log(second[1]) : Number.POSITIVE_INFINITY;
  const ranked: RankedNext = { tokens: kept.map(([token]) => token), margin: Math.max(0, margin) };
  if (withProbabilities) ranked.probabilities = kept.map(([, p]) => p);
  return ranked;
}
