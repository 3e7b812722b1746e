// The lossless suite (test/support/losslessSuite.ts) on its pairs of this group: random-weight targets of other shapes with unrelated drafts.
// test/model/lossless.test.ts says how the suite is split.
import { losslessSuite } from '../support/losslessSuite';
import { LOSSLESS_PAIRS, loadOnCpu, losslessGroup } from '../support/losslessPairs';

for (const pair of LOSSLESS_PAIRS.filter((p) => losslessGroup(p) === 'random')) losslessSuite(pair, { load: loadOnCpu });
