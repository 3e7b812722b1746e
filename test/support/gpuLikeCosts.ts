// A session's adaptive policy on the costs of a machine where a verify batch costs little more than one
// token (a GPU's), fixed: it then verifies the guesses it expects to be accepted whatever this CPU
// measures. On a CPU the adaptive policy may rightly find that a small pair's guesses do not pay and
// propose nothing; a lossless check of its adaptive path needs proposals to check.
import type { InferenceSession } from '../../src/inference/inferenceSession';
import type { SpeculationSettings } from '../../src/shared/settings';
import { CostModel } from '../../src/speculation/costModel';
import { SpeculationPolicy } from '../../src/speculation/policy';

/** Verify costs on a line, 1 + slope (b − 1) a batch of b, whatever is measured: a GPU's, where a batch costs little more than one token. */
export class LinearCosts extends CostModel {
  constructor(private readonly slope: number) {
    super();
  }

  override recordTarget(): void {}
  override verifyCost(batch: number): number {
    return 1 + this.slope * (batch - 1);
  }
  override measured(): boolean {
    return true;
  }
}

/** Gives `session` a fresh adaptive policy on GPU-like costs, holding the session's own settings object (so `configure` still reaches it). */
export function assumeGpuLikeCosts(session: InferenceSession): void {
  const inside = session as unknown as { policy: SpeculationPolicy; speculation: SpeculationSettings };
  inside.policy = new SpeculationPolicy(inside.speculation, new LinearCosts(0.02));
}
