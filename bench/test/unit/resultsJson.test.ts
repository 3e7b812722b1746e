// A results folder names no folder of the machine that ran it: paths inside the repository are written
// relative to it (bench/savedRun.ts resultsJson, used for results.json, runs.json and the reports' JSON).
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { resultsJson } from '../../savedRun';

const ROOT = path.resolve(__dirname, '../../..');

describe('resultsJson', () => {
  it('writes a path inside the repository relative to it, and leaves every other value as it is', () => {
    const run = {
      models: { target: { path: path.join(ROOT, 'models', 'draftline-code-target.gguf'), sizeMB: 29.7 } },
      replay: [path.join(ROOT, 'test-output', 'models', 'q.gguf')],
      userModel: '/data/models/qwen.gguf',
      neighbour: `${ROOT}-other/models/x.gguf`,
      text: 'models/x.gguf',
      count: 3,
    };
    assert.deepEqual(JSON.parse(resultsJson(run, 2)), {
      models: { target: { path: 'models/draftline-code-target.gguf', sizeMB: 29.7 } },
      replay: ['test-output/models/q.gguf'],
      userModel: '/data/models/qwen.gguf',
      neighbour: `${ROOT}-other/models/x.gguf`,
      text: 'models/x.gguf',
      count: 3,
    });
    assert.equal(resultsJson({ a: 1 }, 2), JSON.stringify({ a: 1 }, null, 2));
  });
});
