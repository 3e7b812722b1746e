import type { InferenceSession } from '../src/inference/inferenceSession';

// Test-only access to the node-llama-cpp sequence behind the evaluator.
type Next = { logits?: Map<number, number>; probabilities?: Map<number, number> };
type Sequence = { controlledEvaluate(input: unknown[]): Promise<Array<{ next: Next } | undefined>> };
/** A target on Draftline's unified context (src/llama/unifiedSequenceEvaluator.ts) reads its top logits itself. */
type TopLogits = { appendTopLogits(input: readonly number[], outputs: number, top: number): Promise<{ tokens: number[]; logits: number[] }[]> };

/**
 * Evaluates `tokens` after the target's cache and gives the top candidates (token → logit) of every
 * position (`all`) or of the last: through node-llama-cpp's sequence behind the evaluator (bypassing
 * its bookkeeping: the callers reset it after), or the unified evaluator's own read.
 */
function topsAfter(session: InferenceSession, tokens: readonly number[], all: boolean): Promise<Map<number, number>[]> {
  const ev = session.target.evaluator as unknown as Partial<TopLogits> & { sequence?: Sequence };
  if (ev.appendTopLogits) {
    return ev.appendTopLogits(tokens, all ? tokens.length : 1, TOP_COUNT).then((rows) => rows.map((r) => new Map(r.tokens.map((t, i) => [t, r.logits[i]!]))));
  }
  const seq = ev.sequence!;
  return seq.controlledEvaluate(tokens.map((t, i) => (all || i === tokens.length - 1 ? [t, topRequest()] : t))).then((results) => {
    const out = all ? results : results.slice(-1);
    return out.map((r) => topCandidates(r?.next));
  });
}

/**
 * What the drift probe evaluates: ordinary code with no line repeated, as a real prompt is (the probe
 * used to cycle a 40-token snippet to its depth). Cycled only by a tokenizer that packs it into
 * fewer tokens than the deepest probe needs.
 */
export const PROBE_TEXT = `import * as fs from 'node:fs';
import * as path from 'node:path';

export interface Entry {
  name: string;
  size: number;
  modified: Date;
}

/** Lists a folder's files, largest first, skipping hidden ones. */
export function listFiles(dir: string): Entry[] {
  const out: Entry[] = [];
  for (const name of fs.readdirSync(dir)) {
    if (name.startsWith('.')) continue;
    const stat = fs.statSync(path.join(dir, name));
    if (stat.isFile()) out.push({ name, size: stat.size, modified: stat.mtime });
  }
  return out.sort((a, b) => b.size - a.size);
}

def parse_header(line):
    key, _, value = line.partition(":")
    return key.strip().lower(), value.strip()


class Cache:
    def __init__(self, limit=128):
        self.limit = limit
        self.items = {}

    def get(self, key, default=None):
        return self.items.get(key, default)

    def put(self, key, value):
        if len(self.items) >= self.limit:
            oldest = next(iter(self.items))
            del self.items[oldest]
        self.items[key] = value

const totals = new Map<string, number>();
for (const order of orders) {
  const customer = order.customer.trim();
  totals.set(customer, (totals.get(customer) ?? 0) + order.amount * (1 - order.discount));
}
console.log([...totals.entries()].filter(([, total]) => total > 1000).map(([name]) => name).join(', '));

SELECT id, title, created_at FROM posts WHERE author_id = $1 AND deleted IS NULL ORDER BY created_at DESC LIMIT 20;
`;

const TOP_COUNT = 8;
/**
 * The next token's top candidates come from node-llama-cpp's `logits` option (3.22+); 3.21 has no
 * such option (it ignores it) but has `probabilities`: log p = logit − log Σ exp(logit), the logits
 * shifted by one number, so every difference between two candidates (a top-two margin) is the same,
 * and a drift is measured on what decides the greedy token. Until the first answer says which this
 * version gives, both are asked for.
 */
let libraryGivesLogits: boolean | undefined;
const topRequest = () => ({
  generateNext: {
    ...(libraryGivesLogits !== false ? { logits: { filter: { tokens: [], includeTop: TOP_COUNT } } } : {}),
    ...(libraryGivesLogits !== true ? { probabilities: true } : {}),
  },
});

/** The top candidates of one output, token → logit (or log-probability, see topRequest). */
function topCandidates(next: Next | undefined): Map<number, number> {
  if (next?.logits) {
    libraryGivesLogits = true;
    return next.logits;
  }
  if (!next?.probabilities) throw new Error('node-llama-cpp returned neither logits nor probabilities');
  libraryGivesLogits = false;
  const top = new Map<number, number>();
  // The library orders them most probable first; one whose probability underflowed to 0 says nothing.
  for (const [token, p] of next.probabilities) {
    if (top.size === TOP_COUNT || !(p > 0)) break;
    top.set(token, Math.log(p));
  }
  return top;
}

/**
 * Where the target verifies token trees: the largest |logit| difference after its own greedy
 * continuation of `prompt` written by tree steps (each a decoy branch first, then the target's next
 * two tokens beside it) against the same tokens evaluated afresh. A tree step keeps the accepted
 * nodes' KV cells where the batch put them, after the rejected ones', and later tokens fill the
 * freed cells: attention then sums over the cells in another order than a fresh evaluation does.
 * Where that sum is order-sensitive (llama.cpp's CPU flash attention accumulates V in F16), a
 * position's logits move with it, also where every chain batch computes them bitwise the same.
 */
async function treeStepDrift(session: InferenceSession, prompt: readonly number[]): Promise<number> {
  const ev = session.target.evaluator;
  const reset = () => (ev as unknown as { reset(): Promise<void> }).reset();
  const fill = async (tokens: readonly number[]) => {
    await reset();
    for (let i = 0; i < tokens.length; i += 32) await ev.append(tokens.slice(i, i + 32), 0);
  };
  // The target's own continuation, one token at a time.
  await fill(prompt.slice(0, -1));
  const greedy: number[] = [];
  let [next] = await ev.append(prompt.slice(-1), 1);
  for (let i = 0; i < 13; i++) {
    greedy.push(next!.token);
    [next] = await ev.append([next!.token], 1);
  }
  // The same tokens by tree steps: [decoy, truth] under the pending token, [decoy, truth] under that truth.
  await fill(prompt);
  const decoy = (t: number, from: number) => prompt.find((x, i) => i >= from % prompt.length && x !== t) ?? prompt.find((x) => x !== t) ?? t + 1;
  let at = 0;
  while (at + 2 < greedy.length) {
    const [a, b] = [greedy[at + 1]!, greedy[at + 2]!];
    const verdict = await ev.verifyTree!(greedy[at]!, { tokens: [decoy(a, at * 7), a, decoy(b, at * 7 + 3), b], parents: [-1, -1, 1, 1] });
    at += verdict.path.length + 1;
  }
  const written = ev.tokens.slice(prompt.length);
  const last = greedy[written.length];
  // A greedy token that a tree step's numerics turned (a near-tie): nothing to compare.
  if (last === undefined || written.some((t, i) => t !== greedy[i])) {
    await reset();
    return 0;
  }
  const [afterTrees] = await topsAfter(session, [last], false);
  await fill([...prompt, ...written]);
  const [fresh] = await topsAfter(session, [last], false);
  await reset();
  let drift = 0;
  for (const [tok, v] of fresh!) {
    const t = afterTrees!.get(tok);
    if (t !== undefined) drift = Math.max(drift, Math.abs(t - v));
  }
  return drift;
}

/**
 * Largest |logit| difference between evaluating 33 tokens one by one and in batches of 2, 3, 4, 6, 8,
 * 24 and 33 (verify steps are 2-9 tokens, the window copy's up to 33, prompt chunks 32): llama.cpp
 * may pick another kernel or split for some batch sizes only (more threads, larger batches), so one
 * size says too little. Measured after prompts of several depths (PROBE_DEPTHS): one says too little too.
 * Where the target verifies token trees, also what tree steps move (treeStepDrift).
 */
export async function batchDrift(session: InferenceSession): Promise<number> {
  const ev = session.target.evaluator;
  const tokens = session.vocabulary.tokenize(PROBE_TEXT);
  let drift = 0;
  for (const depth of probeDepths(ev.capacity)) {
    const prompt = Array.from({ length: depth }, (_, i) => tokens[i % tokens.length]);
    const rest = Array.from({ length: 33 }, (_, i) => tokens[(depth + i) % tokens.length]);
    const evaluate = async (batch: number): Promise<Map<number, number>[]> => {
      await session.resetCaches();
      for (let i = 0; i < prompt.length; i += 32) await ev.append(prompt.slice(i, i + 32), i + 32 >= prompt.length ? 1 : 0);
      const out: Map<number, number>[] = [];
      for (let i = 0; i < rest.length; i += batch) out.push(...(await topsAfter(session, rest.slice(i, i + batch), true)));
      return out;
    };
    const single = await evaluate(1);
    for (const batch of [2, 3, 4, 6, 8, 24, 33]) {
      const batched = await evaluate(batch);
      rest.forEach((_, i) => {
        for (const [tok, v] of single[i]) {
          const b = batched[i].get(tok);
          if (b !== undefined) drift = Math.max(drift, Math.abs(b - v));
        }
      });
    }
    if (ev.verifyTree) drift = Math.max(drift, await treeStepDrift(session, prompt));
  }
  // The raw evaluations above bypassed the evaluator's own bookkeeping: start clean.
  await (ev as unknown as { reset(): Promise<void> }).reset();
  return drift;
}

/**
 * Prompt depths the drift is measured after: a short prompt's, a next-edit window's (~100-160
 * tokens) and one as deep as a completion's (~400 tokens: with 2+ threads llama.cpp's attention
 * splits its work by the cache's length, and a short probe can read 0 where completions drift).
 * One depth is not enough: on the v3 target with flash attention off, batches drift by 0.04-0.09
 * logits after 60, 100, 150 or 300 tokens and by exactly 0 after 216, the only depth the probe
 * used at context 512 (test/model/batchDriftProbe.test.ts).
 */
export function probeDepths(capacity: number): number[] {
  const deep = Math.max(8, Math.min(400, Math.floor(capacity / 2) - 40));
  return [...new Set([64, 128, deep].map((d) => Math.min(d, deep)))];
}

/**
 * A divergence whose top-two logit margin is below this many times the batch drift is a numerical
 * tie, not a decoder error (a prompt batch drifts more than the 24-token probe: 50x covers what CI saw).
 */
export const TIE_FACTOR = 50;

/**
 * The drift rule never accepts a margin above this many logits, however large the drift measured
 * (on a GPU the drift of a deep random model reaches 4 logits: 50x would accept any divergence). At
 * a margin of 0.5 the runner-up is still 0.6x as likely as the winner: a near-tie by any measure.
 */
export const TIE_CAP = 0.5;

/** Largest top-two margin the drift rule accepts as a numerical tie. */
export function tieTolerance(drift: number): number {
  return Math.min(TIE_FACTOR * drift, TIE_CAP);
}

/** How a divergence from plain decoding was judged, by each rule (the bench reports all three). */
export interface DivergenceVerdict {
  /** Top-two margin of the target's logits where the two outputs part (token by token). */
  margin: number;
  /** margin < 50 x drift: the old rule, unbounded. */
  driftRule: boolean;
  /** margin < tieTolerance(drift). */
  cappedRule: boolean;
  /**
   * Re-evaluated: alone (token by token) the target picks plain's token there, and with the last
   * tokens before it evaluated as one batch (as a verify step does) it picks the other one — the
   * divergence is the batch's numerics, shown directly.
   */
  batchConfirmed: boolean;
  /** Counted as a tie: cappedRule or batchConfirmed. */
  tie: boolean;
}

export async function judgeDivergence(session: InferenceSession, prompt: readonly number[], plain: readonly number[], tokens: readonly number[], drift: number): Promise<DivergenceVerdict> {
  const margin = await marginAtDivergence(session, prompt, plain, tokens);
  const at = tokens.findIndex((t, i) => t !== plain[i]);
  let batchConfirmed = false;
  if (at >= 0 && at < plain.length) {
    const history = [...prompt, ...plain.slice(0, at)];
    const alone = await topTokenAfter(session, history, 1);
    // Verify steps batch up to 9 tokens with variable shapes, and 16 on the fixed shape the bench forces for trees; try the sizes a step may have had.
    for (const batch of [2, 3, 4, 6, 9, 16]) {
      if (batch >= history.length) break;
      if (alone === plain[at] && (await topTokenAfter(session, history, batch)) === tokens[at]) {
        batchConfirmed = true;
        break;
      }
    }
  }
  const cappedRule = margin < tieTolerance(drift);
  return { margin, driftRule: margin < TIE_FACTOR * drift, cappedRule, batchConfirmed, tie: cappedRule || batchConfirmed };
}

/** The target's greedy token after `history`, its last `batch` tokens evaluated as one batch with an output each. */
async function topTokenAfter(session: InferenceSession, history: readonly number[], batch: number): Promise<number> {
  const ev = session.target.evaluator;
  await (ev as unknown as { reset(): Promise<void> }).reset();
  const head = history.slice(0, history.length - batch);
  for (let i = 0; i < head.length; i += 256) await ev.append(head.slice(i, i + 256), 0);
  const out = await ev.append(history.slice(history.length - batch), batch);
  await (ev as unknown as { reset(): Promise<void> }).reset();
  return out.at(-1)!.token;
}

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
  await (ev as unknown as { reset(): Promise<void> }).reset();
  const [last] = await topsAfter(session, history, false);
  const values = [...last!.values()].sort((a, b) => b - a);
  await (ev as unknown as { reset(): Promise<void> }).reset();
  // A runner-up whose probability underflowed (3.21's probabilities) is infinitely far behind.
  return [values[0], values[1] ?? Number.NEGATIVE_INFINITY];
}
