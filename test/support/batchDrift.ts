import type { InferenceSession } from '../../src/inference/inferenceSession';

// Test-only access to the node-llama-cpp sequence behind the evaluator.
type Sequence = { controlledEvaluate(input: unknown[]): Promise<Array<{ next: { logits?: Map<number, number> } } | undefined>> };
const sequenceOf = (session: InferenceSession) => (session.target.evaluator as unknown as { sequence: Sequence }).sequence;
const TOP = { generateNext: { logits: { filter: { tokens: [], includeTop: 8 } } } };

/** Largest |logit| difference between evaluating 24 tokens one by one and in one batch. */
export async function batchDrift(session: InferenceSession): Promise<number> {
  const ev = session.target.evaluator;
  const seq = sequenceOf(session);
  const tokens = session.vocabulary.tokenize('export function area(r: number): number {\n  return Math.PI * r * r;\n}\n\nconst sizes = [1, 2, 3].map(area);\n');
  const prompt = tokens.slice(0, 8);
  const rest = tokens.slice(8, 32);
  await session.resetCaches();
  await ev.append(prompt, 1);
  const single: Map<number, number>[] = [];
  for (const t of rest) {
    single.push((await seq.controlledEvaluate([[t, TOP]]))[0]!.next.logits!);
  }
  await session.resetCaches();
  await ev.append(prompt, 1);
  const batch = (await seq.controlledEvaluate(rest.map((t) => [t, TOP]))).map((r) => r!.next.logits!);
  let drift = 0;
  rest.forEach((_, i) => {
    for (const [tok, v] of single[i]) {
      const b = batch[i].get(tok);
      if (b !== undefined) drift = Math.max(drift, Math.abs(b - v));
    }
  });
  // The raw evaluations above bypassed the evaluator's own bookkeeping: start clean.
  await (ev as unknown as { reset(): Promise<void> }).reset();
  return drift;
}

/**
 * A divergence whose top-two logit margin is below this many times the batch drift is a numerical
 * tie, not a decoder error (a prompt batch drifts more than the 24-token probe: 50x covers what CI saw).
 */
export const TIE_FACTOR = 50;

/**
 * The target's top-two logit margin (plain decoding, token by token) where `tokens` first leaves
 * `plain`, or where the shorter one ends.
 */
export async function marginAtDivergence(session: InferenceSession, prompt: readonly number[], plain: readonly number[], tokens: readonly number[]): Promise<number> {
  const at = tokens.findIndex((t, i) => t !== plain[i]);
  const i = at < 0 ? Math.min(tokens.length, plain.length) : at;
  const [first, second] = await topTwoAfter(session, [...prompt, ...plain.slice(0, i)]);
  return first - second;
}

/** The two highest logits after `history`, evaluated token by token as plain decoding does. */
export async function topTwoAfter(session: InferenceSession, history: number[]): Promise<[number, number]> {
  const ev = session.target.evaluator;
  const seq = sequenceOf(session);
  await (ev as unknown as { reset(): Promise<void> }).reset();
  const out = await seq.controlledEvaluate(history.map((t, i) => (i === history.length - 1 ? [t, TOP] : t)));
  const values = [...out.at(-1)!.next.logits!.values()].sort((a, b) => b - a);
  await (ev as unknown as { reset(): Promise<void> }).reset();
  return [values[0], values[1]];
}
