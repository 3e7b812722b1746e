// Issue #27 item 1: a large minified file, as the editor drives it, without the editor. The bundled
// worker (dist/worker.js) with the demo pair, the document mirrored the way DocumentSync does it
// (the same decision, src/engine/documentMirror.ts), typing at a cursor deep in the file with the
// provider's debounce and cancellation, and CompletionEngine over a TextSource that reads only the
// window (as inlineProvider's engineDocument does). Prints a timeline: open, each keystroke, the
// ghost text after the last one, and what the worker's index did meanwhile.
//
//   node esbuild.mjs && node --import tsx bench/bigFile.ts [--mb 3.15] [--lines 10637] [--threads N (default: the extension's)] [--before]
import * as os from 'node:os';
import * as path from 'node:path';
import { CompletionEngine, SkippedCompletion, type EngineDocument } from '../src/engine/completionEngine';
import { mirrorDecision } from '../src/engine/documentMirror';
import { DEFAULT_SPECULATION } from '../src/inference/inferenceSession';
import { resolveThreads } from '../src/inference/llamaRuntime';
import type { CompletionRequest, DocumentEdit } from '../src/shared/completion';
import { WorkerClient } from '../src/worker/workerClient';
import { type TypedDocument, typeWithCompletions } from '../testbed/keystrokes';
import { minifiedJs } from '../testbed/syntheticText';

const ROOT = path.resolve(__dirname, '..');
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};

/** A TextSource over a string: the engine reads only the window, as engineDocument does over a TextDocument. */
function documentOver(text: () => string, offset: () => number): EngineDocument {
  return {
    uri: 'file:///demo/big.min.js',
    languageId: 'javascript',
    get offset() {
      return offset();
    },
    get length() {
      return text().length;
    },
    slice: (start, end) => text().slice(start, end),
  };
}

async function main() {
  const mb = arg('mb', 3.15);
  const lines = arg('lines', 10_637);
  // The extension's default (0: cores - 1, so 1 on the 2-core machines of the issue).
  const threads = resolveThreads(arg('threads', 0), os.availableParallelism());
  const debounceMs = 150;
  const keyGapMs = 80;
  const text = minifiedJs(Math.round(mb * 1_000_000), lines);
  // The cursor: the end of a line two thirds into the file, where the user types a new statement.
  const twoThirds = Math.floor(text.length * 0.66);
  const lineEnd = text.indexOf('\n', twoThirds);
  const typing: TypedDocument = { text, cursor: lineEnd < 0 ? twoThirds : lineEnd };
  const typed = 'var sum=list[i];';
  const key = 'file:///demo/big.min.js';
  const t0 = performance.now();
  const at = () => Math.round(performance.now() - t0);
  const timeline: string[] = [];
  const mark = (what: string) => timeline.push(`${String(at()).padStart(7)} ms  ${what}`);

  const client = new WorkerClient({ workerPath: path.join(ROOT, 'dist/worker.js') });
  await client.request('load', {
    models: {
      targetModel: path.join(ROOT, 'models/draftline-code-target.gguf'),
      draftModel: path.join(ROOT, 'models/draftline-code-draft.gguf'),
      gpu: 'cpu',
      gpuLayers: 0,
      threads,
      contextSize: 2048,
    },
    speculation: DEFAULT_SPECULATION,
  });
  const backend = { complete: (request: CompletionRequest, signal?: AbortSignal) => client.request('complete', { request }, signal) };
  const engine = new CompletionEngine(backend);
  engine.settings.draftAvailable = true;
  const doc = documentOver(
    () => typing.text,
    () => typing.cursor,
  );
  mark(`models loaded (${threads} thread(s)); document: ${(text.length / 1e6).toFixed(2)} M chars, ${lines} lines (longest ${Math.max(...text.split('\n').map((l) => l.length))} chars)`);

  // Open: what DocumentSync does with the file.
  // --before: the rule before #27 (every document up to 2 M characters mirrored, minified or not), for the A/B figure.
  const decision = process.argv.includes('--before')
    ? text.length <= 2_000_000
      ? { mirror: true as const }
      : { mirror: false as const, reason: 'larger than 2000000 characters' }
    : mirrorDecision(text.length, () => text);
  const sendStart = performance.now();
  if (decision.mirror) client.notify({ kind: 'documentOpen', key, text });
  mark(`opened: ${decision.mirror ? `mirrored in full to the worker (send ${Math.round(performance.now() - sendStart)} ms)` : `not mirrored (${decision.reason})`}`);

  // Typing: one request per keystroke, each cancelling the one before (VS Code's token), each
  // waiting out the debounce before it asks the model.
  let shown: { text: string; at: number; latencyMs: number; promptMs: number; totalMs: number } | null = null;
  const { lastKeyAt, answered } = await typeWithCompletions({
    engine,
    document: typing,
    view: () => doc,
    typed,
    keyGapMs,
    debounceMs,
    ...(decision.mirror ? { sendEdit: (edit: DocumentEdit) => client.notify({ kind: 'documentEdit', key, edits: [edit] }) } : {}),
    onShown: (r, shownAt) => {
      shown = { text: r.text, at: shownAt, latencyMs: r.latencyMs, promptMs: r.result?.stats.promptMs ?? 0, totalMs: r.result?.stats.totalMs ?? 0 };
    },
    onError: (e) => mark(`completion failed: ${e.message}`),
  });
  mark(`typed "${typed}" (${typed.length} keys, ${keyGapMs} ms apart)`);
  await answered;
  const s = shown as { text: string; at: number; latencyMs: number; promptMs: number; totalMs: number } | null;
  if (s) {
    mark(
      `ghost text ${JSON.stringify(s.text.slice(0, 40))}: ${Math.round(s.at - lastKeyAt)} ms after the last keystroke (engine latency ${Math.round(s.latencyMs)} ms, worker total ${Math.round(s.totalMs)} ms, prompt ${Math.round(s.promptMs)} ms)`,
    );
  } else mark('no ghost text');
  let diag = await client.request('diagnostics', {});
  mark(`worker index: ${JSON.stringify(diag.index)}`);
  while (diag.index && diag.index.pending > 0) {
    await new Promise((r) => setTimeout(r, 250));
    diag = await client.request('diagnostics', {});
  }
  mark(`worker index settled: ${JSON.stringify(diag.index)}, rss ${Math.round(diag.rssBytes / 1e6)} MB`);
  // A second completion a moment later, as the issue's "next completion in the same file".
  const again = await engine.complete({ ...doc, offset: typing.cursor }, undefined);
  if (!(again instanceof SkippedCompletion)) mark(`next completion: ${Math.round(again.latencyMs)} ms (from cache: ${again.fromCache})`);
  client.dispose();
  console.log(timeline.join('\n'));
  const result = {
    mb,
    lines,
    mirrored: decision.mirror,
    ghostAfterLastKeyMs: s ? Math.round(s.at - lastKeyAt) : null,
    tokenizedChars: diag.index?.tokenizedChars ?? 0,
    workerRssMB: Math.round(diag.rssBytes / 1e6),
  };
  console.log(JSON.stringify(result));
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
