// Issue #27 item 1: a large minified file gets a bounded path. The mirror decision (what
// DocumentSync sends to the worker) in plain TS, then the editor's path without the editor: the
// bundled worker (dist/worker.js) with the tiny pair, the document opened as DocumentSync does it,
// typing with the provider's debounce and cancellation, CompletionEngine over a TextSource that
// counts what it reads. Bounds: the text read per request, the worker's tokenized characters, and
// the time from the last keystroke to the completion.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CompletionEngine, type EngineDocument } from '../../src/engine/completionEngine';
import { MAX_MIRRORED_CHARS, looksMinified, mirrorDecision } from '../../src/engine/documentMirror';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import type { CompletionRequest, DocumentEdit } from '../../src/shared/completion';
import { WorkerClient } from '../../src/worker/workerClient';
import { type TypedDocument, typeWithCompletions } from '../../testbed/keystrokes';
import { minifiedJs, syntheticSource } from '../../testbed/syntheticText';

const ROOT = path.resolve(__dirname, '../..');
const WORKER = path.join(ROOT, 'dist/worker.js');

describe('mirror decision (what the worker indexes)', () => {
  it('does not mirror minified code, however it is laid out', () => {
    // Like the demo's bundle: ~300-character lines. And one line for a whole file.
    const lines = minifiedJs(1_800_000, 6000);
    const oneLine = minifiedJs(500_000, 1);
    assert.ok(lines.length <= MAX_MIRRORED_CHARS, 'under the size cap: only the minified rule keeps it out');
    assert.deepEqual(
      mirrorDecision(lines.length, () => lines),
      { mirror: false, reason: 'minified (very long lines)' },
    );
    assert.equal(mirrorDecision(oneLine.length, () => oneLine).mirror, false);
    // A few short header lines do not hide one huge line.
    const banner = `/*! lib v1 */\n/* license */\n${'x'.repeat(60_000)}\n`;
    assert.equal(looksMinified(banner), true);
  });

  it('mirrors hand-written code up to the size cap, and small files whatever their lines', () => {
    const source = syntheticSource('big', 1_900_000);
    assert.deepEqual(
      mirrorDecision(source.length, () => source),
      { mirror: true },
    );
    const small = `const data = "${'a'.repeat(5000)}";\n`;
    assert.deepEqual(
      mirrorDecision(small.length, () => small),
      { mirror: true },
    );
  });

  it('decides a huge document by its length alone, without reading its text', () => {
    let read = false;
    const decision = mirrorDecision(3_340_000, () => {
      read = true;
      return '';
    });
    assert.equal(decision.mirror, false);
    assert.equal(read, false);
  });
});

describe('a large minified file in the editor path', { skip: fs.existsSync(WORKER) ? false : 'dist/worker.js missing: run `node esbuild.mjs`' }, () => {
  let client: WorkerClient;
  before(async () => {
    client = new WorkerClient({ workerPath: WORKER });
    await client.request('load', {
      models: { targetModel: path.join(ROOT, 'models/tiny-code-target.gguf'), draftModel: path.join(ROOT, 'models/tiny-code-draft.gguf'), gpu: 'cpu', gpuLayers: 0, threads: 1, contextSize: 2048 },
      speculation: DEFAULT_SPECULATION,
    });
  });
  after(() => client.dispose());

  // 3.3 M characters in 10,637 lines (the file) is over the size cap; 1.9 M in 6,200 lines
  // is under it and was mirrored and tokenized whole before the minified rule.
  for (const [chars, lines] of [
    [3_150_000, 10_637],
    [1_850_000, 6_200],
  ] as const) {
    it(`${(chars / 1e6).toFixed(2)} MB in ${lines} lines: bounded reads, nothing indexed, ghost text soon after typing stops`, async () => {
      const typing: TypedDocument = { text: minifiedJs(chars, lines), cursor: 0 };
      typing.cursor = typing.text.indexOf('\n', Math.floor(typing.text.length * 0.66));
      const key = `file:///big-${lines}.min.js`;
      const engine = new CompletionEngine({ complete: (request: CompletionRequest, signal?: AbortSignal) => client.request('complete', { request }, signal) });
      // What the engine reads of the document, per request (engineDocument reads through getText(range)).
      let readChars = 0;
      let mostReadInOneRequest = 0;
      const doc = (): EngineDocument => {
        readChars = 0;
        return {
          uri: key,
          languageId: 'javascript',
          offset: typing.cursor,
          length: typing.text.length,
          slice: (start, end) => {
            readChars += end - start;
            mostReadInOneRequest = Math.max(mostReadInOneRequest, readChars);
            return typing.text.slice(start, end);
          },
        };
      };
      // Open: DocumentSync's decision.
      const decision = mirrorDecision(typing.text.length, () => typing.text);
      if (decision.mirror) client.notify({ kind: 'documentOpen', key, text: typing.text });
      // Type 16 characters 40 ms apart: each keystroke cancels the request before it (VS Code's
      // token), each request waits the 150 ms debounce before it asks the model.
      let shownAt: number | null = null;
      const { lastKeyAt, answered } = await typeWithCompletions({
        engine,
        document: typing,
        view: doc,
        typed: 'var sum=list[i];',
        keyGapMs: 40,
        debounceMs: 150,
        ...(decision.mirror ? { sendEdit: (edit: DocumentEdit) => client.notify({ kind: 'documentEdit', key, edits: [edit] }) } : {}),
        onShown: (_completion, at) => {
          shownAt = at;
        },
      });
      await answered;
      assert.ok(shownAt !== null, 'the last keystroke got a completion');
      const ourMs = shownAt - lastKeyAt;
      // The window only: prefix (3000) + suffix (1000) + the 256 characters looked at for a line start.
      const window = engine.settings.maxPrefixChars + engine.settings.maxSuffixChars + 256;
      assert.ok(mostReadInOneRequest <= window, `read ${mostReadInOneRequest} characters of a ${typing.text.length}-character document in one request`);
      const diagnostics = await client.request('diagnostics', {});
      assert.equal(diagnostics.index?.tokenizedChars, 0, 'minified text is not tokenized for the n-gram index');
      assert.equal(diagnostics.index?.documents, 0);
      // Debounce (150 ms) + a tiny-model completion: well under a second on an idle machine; the
      // bound leaves room for a loaded 2-core CI machine, and is far from the 50 s.
      assert.ok(ourMs < 5000, `ghost text ${Math.round(ourMs)} ms after the last keystroke`);
    });
  }
});
