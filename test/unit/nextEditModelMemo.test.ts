// The next-edit model's resolution after a failed, interrupted or declined download (issue #48, item 2).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NextEditModelDeclined, NextEditModelMemo } from '../../src/models/nextEditModelMemo';

describe('next-edit model resolution', () => {
  it('a download cut short (the worker ended) is offered again at the next request', async () => {
    const asked: string[] = [];
    let fail = true;
    const memo = new NextEditModelMemo(async (model) => {
      asked.push(model);
      if (fail) throw new Error('the shared inference worker ended (killed by SIGKILL)');
      return '/models/sweep.gguf';
    });
    await assert.rejects(memo.file('hf:sweep'), /worker ended/);
    fail = false;
    assert.equal(await memo.file('hf:sweep'), '/models/sweep.gguf');
    assert.deepEqual(asked, ['hf:sweep', 'hf:sweep']);
    // An answer is kept: no second download.
    assert.equal(await memo.file('hf:sweep'), '/models/sweep.gguf');
    assert.equal(asked.length, 2);
  });

  it('requests while the offer is open share it', async () => {
    let calls = 0;
    let release: (file: string) => void = () => undefined;
    const memo = new NextEditModelMemo(() => {
      calls++;
      return new Promise<string>((resolve) => {
        release = resolve;
      });
    });
    const a = memo.file('hf:sweep');
    const b = memo.file('hf:sweep');
    release('/m.gguf');
    assert.deepEqual(await Promise.all([a, b]), ['/m.gguf', '/m.gguf']);
    assert.equal(calls, 1);
  });

  it('a decline is kept for the value until next edits are toggled, or the model changes', async () => {
    let calls = 0;
    const memo = new NextEditModelMemo(async () => {
      calls++;
      throw new NextEditModelDeclined('Next-edit model not downloaded: hf:sweep');
    });
    await assert.rejects(memo.file('hf:sweep'), NextEditModelDeclined);
    await assert.rejects(memo.file('hf:sweep'), NextEditModelDeclined);
    assert.equal(calls, 1);
    memo.reset();
    await assert.rejects(memo.file('hf:sweep'), NextEditModelDeclined);
    assert.equal(calls, 2);
    await assert.rejects(memo.file('hf:other'), NextEditModelDeclined);
    assert.equal(calls, 3);
  });
});
