// A model file chosen by the user is checked for the job it was chosen for, at once (issue #55 item
// 2: the embedded completion model, chosen as the next-edit model, was taken in silence and then
// answered every pause with "noFormat").
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { inspectModelFile, type ModelFileInfo } from '../../src/gguf/modelFileCheck';
import { NEXT_EDIT_CATALOG } from '../../src/models/catalog';
import { checkInfoForRole, checkModelForRole } from '../../src/models/modelRole';

const ROOT = path.resolve(__dirname, '../..');
const TARGET = path.join(ROOT, 'models', 'draftline-code-target.gguf');
const DRAFT = path.join(ROOT, 'models', 'draftline-code-draft.gguf');

describe('a chosen model file, checked for its role', () => {
  let target: ModelFileInfo;
  /** A file with the target's header but another name and shape (the catalog's next-edit models are Qwen2.5-Coder fine-tunes). */
  const variant = (changes: Partial<ModelFileInfo>): ModelFileInfo => ({ ...target, ...changes });
  const sweepShaped = () => variant({ path: '/models/model-q8_0.gguf', name: 'model', architecture: 'qwen2', vocabSize: 151_936 });

  before(async () => {
    target = await inspectModelFile(TARGET);
  });

  it('the embedded completion model as the next-edit model: refused, saying why and what would do', async () => {
    const check = await checkModelForRole(TARGET, 'nextEdit');
    assert.equal(check.ok, false);
    assert.ok(!check.ok);
    assert.match(
      check.problem,
      /^draftline-code-target\.gguf is not a next-edit model: its name "draftline-code-target" names no next-edit prompt layout Draftline knows \(Sweep Next-Edit 1\.5B, Zeta 7B\)/,
    );
    assert.match(check.problem, /draftline\.nextEdit\.format/);
    // Chosen in place of Sweep's download: its body and vocabulary are not Sweep's either, and the message says both.
    const instead = await checkModelForRole(TARGET, 'nextEdit', { standsFor: NEXT_EDIT_CATALOG.sweep15 });
    assert.ok(!instead.ok);
    assert.match(instead.problem, /it is not a qwen2 \(qwen2 vocabulary of 151,936 tokens\) model as Sweep Next-Edit 1\.5B \(Q8_0\) is \(it is a llama \(qwen2 vocabulary of 4,096 tokens\) model\)/);
  });

  it('a next-edit model is taken by the layout it names, or by the shape of the catalog model it stands in for', () => {
    const named = checkInfoForRole(variant({ path: '/m/x.gguf', name: 'Sweep Next Edit 1.5B' }), 'nextEdit');
    assert.ok(named.ok && named.format === 'sweep');
    const byBasename = checkInfoForRole(variant({ path: '/m/x.gguf', name: 'x' }), 'nextEdit', {}, { basename: 'zeta' });
    assert.ok(byBasename.ok && byBasename.format === 'zeta');
    const byFileName = checkInfoForRole(variant({ path: '/m/sweep-next-edit-1.5b.q8_0.v2.gguf', name: null }), 'nextEdit');
    assert.ok(byFileName.ok && byFileName.format === 'sweep');
    // A renamed Sweep file, chosen for Sweep's entry: its qwen2 body and 151,936-token vocabulary say it may be, and Sweep's layout is used.
    const renamed = checkInfoForRole(sweepShaped(), 'nextEdit', { standsFor: NEXT_EDIT_CATALOG.sweep15 });
    assert.ok(renamed.ok && renamed.format === 'sweep');
    // The same file for Zeta's entry (a 7B: 152,064 rows), or with no entry to stand in for: nothing names its layout.
    assert.equal(checkInfoForRole(sweepShaped(), 'nextEdit', { standsFor: NEXT_EDIT_CATALOG.zeta7 }).ok, false);
    assert.equal(checkInfoForRole(sweepShaped(), 'nextEdit').ok, false);
    // A layout forced in the settings is the user's word.
    const forced = checkInfoForRole(target, 'nextEdit', { format: 'zeta' });
    assert.ok(forced.ok && forced.format === 'zeta');
  });

  it("a draft must share the target's vocabulary; the target and a draft with no target known take any usable GGUF", async () => {
    assert.equal((await checkModelForRole(DRAFT, 'draft', { target })).ok, true);
    assert.equal((await checkModelForRole(DRAFT, 'draft', { target: null })).ok, true);
    const other = variant({ path: '/m/other.gguf', tokens: target.tokens.map((t, i) => (i === 100 ? 'другой' : t)) });
    const check = checkInfoForRole(other, 'draft', { target });
    assert.ok(!check.ok);
    assert.equal(check.problem, 'other.gguf cannot draft for draftline-code-target: their vocabularies differ (token 100 differs: "d" vs "другой"), and a draft must share the target\'s');
    assert.equal((await checkModelForRole(TARGET, 'target')).ok, true);
  });

  it('a file that is no GGUF model is refused for any role, naming the file', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'draftline-role-'));
    try {
      const page = path.join(dir, 'model.gguf');
      fs.writeFileSync(page, '<!doctype html><html><body>Not found</body></html>');
      for (const role of ['target', 'draft', 'nextEdit'] as const) {
        const check = await checkModelForRole(page, role);
        assert.ok(!check.ok);
        assert.match(check.problem, /^model\.gguf cannot be used as the (completion|draft|next-edit) model: .*HTML page/);
      }
      const missing = await checkModelForRole(path.join(dir, 'gone.gguf'), 'nextEdit');
      assert.ok(!missing.ok);
      assert.match(missing.problem, /gone\.gguf/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
