// The lossless suite (test/support/losslessSuite.ts) on its pairs of this group: long and fixed-shape verify batches, the device greedy path, a perfect draft.
// test/model/lossless.test.ts says how the suite is split.
import { losslessSuite } from '../support/losslessSuite';
import { LOSSLESS_PAIRS, loadOnCpu, losslessGroup } from '../support/losslessPairs';

for (const pair of LOSSLESS_PAIRS.filter((p) => losslessGroup(p) === 'shapes')) losslessSuite(pair, { load: loadOnCpu });
