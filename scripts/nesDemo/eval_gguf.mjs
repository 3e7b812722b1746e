// Greedy next-edit outputs of a GGUF via node-llama-cpp (prebuilt CPU binary, 1 thread) on held-out examples.
// usage: node eval_gguf.mjs MODEL.gguf EXAMPLES.jsonl OUT.json [N_PER_KIND]
import fs from 'node:fs';
const { getLlama, LlamaCompletion } = await import('node-llama-cpp');
const [model, exPath, outPath, nPer = '20'] = process.argv.slice(2);
const all = fs
  .readFileSync(exPath, 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l));
const byKind = {};
for (const x of all) (byKind[x.kind] ??= []).length < Number(nPer) && byKind[x.kind].push(x);
const cases = Object.values(byKind).flat();
const llama = await getLlama({ gpu: false, build: 'never', maxThreads: 1 });
const m = await llama.loadModel({ modelPath: model });
const ctx = await m.createContext({ contextSize: 1024, threads: 1, sequences: 1 });
const seq = ctx.getSequence();
const completion = new LlamaCompletion({ contextSequence: seq });
const out = [];
for (const x of cases) {
  const regionTokens = m.tokenize(x.region).length;
  const t0 = performance.now();
  let tFirst = 0;
  let n = 0;
  const text = await completion.generateCompletion(x.prompt, {
    maxTokens: Math.min(2 * regionTokens + 48, 1024 - m.tokenize(x.prompt).length - 2),
    temperature: 0,
    repeatPenalty: false,
    customStopTriggers: ['<|editable_region_end|>'],
    onToken: (t) => {
      if (!n) tFirst = performance.now();
      n += t.length;
    },
  });
  const t1 = performance.now();
  await seq.clearHistory();
  out.push({ kind: x.kind, path: x.path, region: x.region, expected: x.expected, output: text, tokens: n, ms: t1 - t0, msFirst: tFirst - t0 });
  process.stdout.write(`${out.length}/${cases.length} ${x.kind} ${n} tok ${(t1 - t0).toFixed(0)} ms\n`);
}
fs.writeFileSync(outPath, JSON.stringify(out));
await ctx.dispose();
await m.dispose();
