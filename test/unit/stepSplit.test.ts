// Verifying an offer in several steps (speculation/stepSplit.ts): the cheapest split against every
// split there is, and when a short first step pays and when one step stays best.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cheapestSplit, firstStepLength } from '../../src/speculation/stepSplit';

/** Expected tokens of one step verifying k tokens (index k), from the chance that each token is right given those before it. */
function expectedFrom(rightAfter: (depth: number) => number, limit: number): Float64Array {
  const out = new Float64Array(limit + 1);
  out[0] = 1;
  let allRight = 1;
  for (let k = 1; k <= limit; k++) {
    allRight *= rightAfter(k);
    out[k] = out[k - 1]! + allRight;
  }
  return out;
}

/** Step costs on a line (a GPU's: 1 + slope (b − 1) a batch of b), index b. */
const line = (slope: number, limit: number) => Float64Array.from({ length: limit + 2 }, (_, b) => (b === 0 ? 0 : 1 + slope * (b - 1)));

/** The expected cost of verifying the first `end` tokens in steps ending at `ends` (the last at `end`), each step only if all before it were right. */
function costOf(ends: number[], expected: Float64Array, stepCost: Float64Array): number {
  let cost = 0;
  let start = 0;
  for (const end of ends) {
    const reach = start === 0 ? 1 : expected[start]! - expected[start - 1]!;
    cost += reach * stepCost[end - start + 1]!;
    start = end;
  }
  return cost;
}

/** Every way to split 1..end into steps. */
function* splits(end: number, start = 0): Generator<number[]> {
  if (start === end) {
    yield [];
    return;
  }
  for (let m = start + 1; m <= end; m++) for (const rest of splits(end, m)) yield [m, ...rest];
}

describe('step split', () => {
  it('finds the cheapest split of an offer among every split there is', () => {
    const end = 10;
    const cases: [string, (d: number) => number, Float64Array][] = [
      ['a coin toss, then sure', (d) => (d === 1 ? 0.5 : 0.99), line(0.06, end)],
      ['geometric', () => 0.8, line(0.06, end)],
      ['wrong by the third token or never', (d) => (d <= 3 ? 0.6 : 1), line(0.3, end)],
      ['a CPU-like steep line', () => 0.9, line(0.8, end)],
    ];
    for (const [name, right, stepCost] of cases) {
      const expected = expectedFrom(right, end);
      const split = cheapestSplit(end, expected, stepCost);
      let best = Number.POSITIVE_INFINITY;
      for (const s of splits(end)) {
        const c = costOf(s, expected, stepCost);
        best = Math.min(best, c);
      }
      assert.ok(Math.abs(split.cost - best) < 1e-9, `${name}: ${split.cost} against the best ${best}`);
      // Its first step begins a split that costs the least.
      let withFirst = Number.POSITIVE_INFINITY;
      for (const s of splits(end)) if (s[0] === split.first) withFirst = Math.min(withFirst, costOf(s, expected, stepCost));
      assert.ok(Math.abs(withFirst - best) < 1e-9, `${name}: a first step of ${split.first}`);
    }
  });

  it('on a GPU, a guess that is wrong at once or right to the end goes in a short step first', () => {
    const limit = 64;
    // Half wrong at once; of the rest, a third right to the end, the others wrong by the third token.
    const expected = expectedFrom((d) => (d === 1 ? 0.5 : d <= 3 ? 0.8 : d === 4 ? 0.5 : 1), limit);
    const stepCost = line(0.06, limit);
    // One step: the whole offer has the most expected tokens per cost.
    let single = 0;
    for (let k = 1; k <= limit; k++) if (expected[k]! / stepCost[k + 1]! > expected[single]! / stepCost[single + 1]!) single = k;
    assert.equal(single, limit);
    const first = firstStepLength(single, limit, expected, stepCost);
    assert.ok(first >= 1 && first <= 8, `first step ${first}`);
    assert.ok(cheapestSplit(limit, expected, stepCost).cost < stepCost[limit + 1]! * 0.75);
  });

  it('keeps one step where the guesses stay right, and on a CPU whose small batches cost nearly a step a token', () => {
    const limit = 64;
    assert.equal(
      firstStepLength(
        limit,
        limit,
        expectedFrom(() => 0.999, limit),
        line(0.06, limit),
      ),
      limit,
    );
    // A 2-core CPU's costs (docs/BENCHMARK.md: a batch of 2 costs ~1.67 steps, 16 ~5.6): what one step would verify.
    const cpu = Float64Array.from({ length: limit + 2 }, (_, b) => (b === 0 ? 0 : b === 1 ? 1 : 1.35 + 0.28 * (b - 1)));
    for (const right of [0.7, 0.9, 0.99]) {
      const expected = expectedFrom(() => right, limit);
      let single = 0;
      for (let k = 1; k <= limit; k++) if (expected[k]! / cpu[k + 1]! > expected[single]! / cpu[single + 1]!) single = k;
      assert.ok(single > 0, `one step at ${right}`);
      assert.equal(firstStepLength(single, limit, expected, cpu), single, `split at ${right}`);
    }
    // Plain decoding stays plain.
    assert.equal(
      firstStepLength(
        0,
        limit,
        expectedFrom(() => 0.5, limit),
        line(0.06, limit),
      ),
      0,
    );
  });

  it('never splits below a fixed verify shape, whose batches up to its size cost one step', () => {
    const limit = 48;
    const shape = 16;
    const flat = Float64Array.from({ length: limit + 2 }, (_, b) => (b === 0 ? 0 : b <= shape ? 1 : 1 + 0.06 * (b - shape)));
    const expected = expectedFrom((d) => (d === 1 ? 0.5 : d === 2 ? 0.3 : 1), limit);
    const first = firstStepLength(limit, limit, expected, flat);
    assert.ok(first >= shape - 1, `first step ${first} within a shape of ${shape}`);
  });
});
