// The lossless suite (test/support/losslessSuite.ts) on its pairs of this group: the target on its unified KV context, token trees verified on a fixed shape.
// test/model/lossless.test.ts says how the suite is split.
import { losslessSuite } from '../support/losslessSuite';
import { LOSSLESS_PAIRS, loadOnCpu, losslessGroup } from '../support/losslessPairs';

for (const pair of LOSSLESS_PAIRS.filter((p) => losslessGroup(p) === 'trees')) losslessSuite(pair, { load: loadOnCpu });
