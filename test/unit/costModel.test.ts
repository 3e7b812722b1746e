// What the cost model takes from a generation's steps: outliers clamped, changes of batch size
// charged to the speculation that caused them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CostModel, VariableStepCosts } from '../../src/speculation/costModel';

describe('cost model', () => {
  it('one outlier step moves an estimate by at most the smoothing of twice the estimate', () => {
    const cost = new CostModel(0.35, 0.2);
    for (let i = 0; i < 20; i++) cost.recordTarget(1, 1);
    cost.recordTarget(1, 50);
    assert.ok(Math.abs(cost.verifyCost(1) - 1.2) < 1e-9, `one outlier of 50x moved the estimate to ${cost.verifyCost(1)}`);
    // A lasting change is followed: each step moves the estimate up to twice itself.
    for (let i = 0; i < 40; i++) cost.recordTarget(1, 5);
    assert.ok(Math.abs(cost.verifyCost(1) - 5) < 0.01);
  });

  it("a size's first step is taken at most at twice what the sizes already timed estimate", () => {
    const cost = new CostModel(0.35, 0.2);
    cost.recordTarget(1, 1);
    cost.recordTarget(3, 1.4);
    // A batch of 2 estimated at 1.2 from those; its first evaluation (buffers sized) took 9.
    cost.recordTarget(2, 9);
    assert.ok(Math.abs(cost.verifyCost(2) - 2.4) < 1e-9, `${cost.verifyCost(2)}`);
    // Nothing timed yet: the first step is all there is to go by.
    const fresh = new CostModel();
    fresh.recordTarget(4, 9);
    assert.equal(fresh.verifyCost(4), 9);
  });

  it('estimates sizes between and beyond the measured ones, and says which were timed', () => {
    const cost = new CostModel(0.35, 1);
    cost.recordTarget(1, 2);
    cost.recordTarget(3, 4);
    cost.recordTarget(5, 5);
    assert.equal(cost.verifyCost(4), 4.5);
    assert.equal(cost.verifyCost(7), 6);
    assert.ok(cost.measured(3) && !cost.measured(4));
    assert.deepEqual(cost.snapshot().verifyMs, { 1: 2, 3: 4, 5: 5 });
  });
});

describe('variable-length steps', () => {
  it('the first step after the prompt is not recorded; a one-token step only after another', () => {
    const cost = new CostModel(0.35, 1);
    const steps = new VariableStepCosts(cost);
    steps.record(1, 9);
    assert.equal(cost.measured(1), false);
    steps.record(1, 1);
    assert.equal(cost.verifyCost(1), 1);
  });

  it('a return to one token after a speculative step is charged to that step', () => {
    const cost = new CostModel(0.35, 1);
    const steps = new VariableStepCosts(cost);
    for (const [batch, ms] of [
      [1, 9],
      [1, 1],
      [3, 1.5],
      [1, 1.4],
    ] as const)
      steps.record(batch, ms);
    // The plain step after the batch of 3 cost 0.4 over a plain step: the batch of 3 is 1.9, plain stays 1.
    assert.equal(cost.verifyCost(1), 1);
    assert.ok(Math.abs(cost.verifyCost(3) - 1.9) < 1e-9);
    // Speculative steps in a row are recorded as they were; the last is recorded when the generation ends.
    steps.record(4, 2);
    steps.record(4, 2.1);
    assert.equal(cost.verifyCost(4), 2);
    steps.finish();
    assert.ok(Math.abs(cost.verifyCost(4) - 2.1) < 1e-9);
  });
});
