// npm run bench:profile [-- --targets tiny,v3,qwen-vocab] [--threads N] [--gpu auto|cuda|vulkan|cpu] [--tasks N] [--flash-attention auto|on|off] [--device-greedy auto|on|off] [--next-edit-cases N]
// With qwen-coder-small among the targets, also the next-edit loop against the decoder's plain step.
// Where a decode step's wall time goes, plain and speculative, on both ways of reading the target's
// greedy tokens (src/llama/llamaSequenceEvaluator.ts: `library` = node-llama-cpp's
// controlledEvaluate, `direct` = our batch + reused native sampler, `native` = our batch + Draftline's
// native greedy reader), side by side in one run.
// The native calls are timed by wrapping the context's binding object: decodeBatch is the forward
// pass V(b); sampleToken (or one native reader call a step) is reading the greedy tokens.
import { backendExplanation } from '../src/stats/statusText';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS } from '../src/engine/completionEngine';
import type { CompletionRequest } from '../src/shared/completion';
import type { ModelSettings, SpeculationSettings } from '../src/shared/settings';
import { DEFAULT_SPECULATION, type InferenceSession } from '../src/inference/inferenceSession';
import { loadBenchSession } from './decodePath';
import type { EvaluatorPath, LlamaSequenceEvaluator } from '../src/llama/llamaSequenceEvaluator';
import { CostModel } from '../src/speculation/costModel';
import { AcceptanceTracker, SpeculationPolicy } from '../src/speculation/policy';
import { syncPromptAndPredictNext } from '../src/speculation/greedyEvaluator';
import { emptyStepProfile, type StepProfile } from '../src/speculation/speculativeDecoder';
import { ensureCorpus, sampleTasks, sourceFiles } from './corpus';
import { engineDocument, flashAttentionOption } from './engineView';
import { OracleProposer } from './oracleProposer';
import { fmt, median } from './stats';
import { benchTarget } from './targets';
import { clockNative, measureForwardPass, measureWarmForwardPass } from './nativeClock';
import { runBenchmark, saveReport } from './savedRun';
import { editsCases, nextEditRequestOf, promptTokensOf } from './edits';
import { NEXT_EDIT_FORMATS } from '../src/nextEdit/formats';
import { generateNextEdit, StreamedEdits } from '../src/nextEdit/generation';
import { decode } from '../src/speculation/speculativeDecoder';
import { StopRules } from '../src/stopping/stopRules';
import type { LlamaToken } from '../src/llama/llamaTypes';
import type { Token } from '../src/shared/decoding';

const argv = process.argv.slice(2);
const opt = (name: string, fallback: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const targetNames = opt('targets', 'tiny,v3,qwen-vocab').split(',').filter(Boolean);
const threads = Number(opt('threads', '1'));
const gpu = opt('gpu', 'auto') as ModelSettings['gpu'];
const flashAttention = flashAttentionOption(opt('flash-attention', 'auto'));
const taskCount = Number(opt('tasks', '6'));
/** The device greedy path (llama/llamaSequenceEvaluator.ts): auto = on a GPU; on = wherever llama.cpp offloads it (the CPU too). */
const deviceGreedy = opt('device-greedy', 'auto') as NonNullable<ModelSettings['deviceGreedy']>;
const K = 5;
/** Fixed verify shapes timed in runs of their own. */
const WARM_SIZES = [1, 2, 4, 8, 16, 32, 64];
const MAX_TOKENS = 48;
/** The next-edit loop's section (nextEditLoop): on a target with a real tokenizer, these output lengths. */
const NEXT_EDIT_LENGTHS = [64, 256];
const nextEditCases = Number(opt('next-edit-cases', '6'));

interface StepRow {
  target: string;
  /** The evaluator path, and for the native readers' paths how batches were decoded. */
  path: string;
  kind: string;
  steps: number;
  /** Per step, ms. */
  total: number;
  nativeDecode: number;
  sampling: number;
  verifyJs: number;
  erase: number;
  propose: number;
  bookkeeping: number;
  /** Raw forward pass of the step's batch size, ms (decodeBatch alone, measured apart). */
  v: number;
  v1: number;
  batch: number;
}

/**
 * One token evaluated with its greedy token's probability, as the draft proposer asks for every
 * drafted token: the library's `confidence` option (a sort of the whole vocabulary) vs the direct
 * path's 1 / totalLogitWeight (one pass; where the library has no totalLogitWeight, node-llama-cpp
 * 3.21, the direct path falls back to `confidence` too: `directSource` says which it used), the
 * native reader, and without any confidence.
 */
async function confidenceCost(
  session: InferenceSession,
  depth: number,
): Promise<{ libraryConfidence: number; directConfidence: number; directSource: string; nativeConfidence: number | null; noConfidence: number }> {
  const ev = session.target.evaluator as LlamaSequenceEvaluator;
  const seq = (ev as unknown as { sequence: { controlledEvaluate(input: unknown[]): Promise<unknown> } }).sequence;
  await session.resetCaches();
  const filler = Array.from({ length: depth }, (_, i) => 100 + (i % 3000));
  for (let i = 0; i < depth; i += 256) await ev.append(filler.slice(i, i + 256), 0);
  const time = async (run: () => Promise<unknown>) => {
    const times: number[] = [];
    for (let rep = 0; rep < 15; rep++) {
      const t0 = performance.now();
      await run();
      times.push(performance.now() - t0);
      await ev.truncate(depth);
    }
    return median(times.slice(3))!;
  };
  const native = ev.nativeUnavailable ? null : (ev.usePath('native'), await time(() => ev.append([300], 1, true)));
  ev.usePath('direct');
  const noConfidence = await time(() => ev.append([300], 1));
  const directConfidence = await time(() => ev.append([300], 1, true));
  const directSource = ev.confidenceSource ?? 'unknown';
  // The old way: the library's confidence option (the evaluator's mirror of the cache is kept in step by hand).
  const libraryConfidence = await time(async () => {
    await seq.controlledEvaluate([[300, { generateNext: { token: true, confidence: true, options: { temperature: 0 } } }]]);
    (ev as unknown as { cached: number[] }).cached.push(300);
  });
  await session.resetCaches();
  return { libraryConfidence, directConfidence, directSource, nativeConfidence: native, noConfidence };
}

async function profileTarget(name: string): Promise<{
  rows: StepRow[];
  v: Record<number, number>;
  warm: Record<number, number>;
  depth: number;
  confidence: Awaited<ReturnType<typeof confidenceCost>>;
  backend: string;
  note: string;
  differing: number;
  runs: number;
}> {
  const target = await benchTarget(name);
  const session = await loadBenchSession(
    { targetModel: target.file, draftModel: '', gpu, gpuLayers: 'auto', threads, contextSize: 1024, flashAttention, deviceGreedy },
    { ...DEFAULT_SPECULATION, maxProposal: K },
    () => undefined,
  );
  const deviceTried = (session.target.evaluator as LlamaSequenceEvaluator).path === 'device';
  const clock = clockNative(session);
  const evaluator = session.target.evaluator as LlamaSequenceEvaluator;
  const engine = new CompletionEngine(
    { complete: () => Promise.reject(new Error('unused')) },
    { ...DEFAULT_ENGINE_SETTINGS, maxTokens: MAX_TOKENS, maxPrefixChars: 1500, maxSuffixChars: 400, timeBudgetMs: 0 },
  );
  const tasks = sampleTasks(sourceFiles(ensureCorpus()), taskCount, 99);
  const requests = tasks.map((task) => ({ ...(engine.buildRequest(engineDocument(task)) as CompletionRequest), stopAtBlockEnd: false, singleLine: false, maxLines: undefined, maxTokens: MAX_TOKENS }));
  // At the prompts' depth: attention over the prompt is much of a small model's forward pass.
  const depth = Math.round(median(requests.map((r) => session.promptFor(r).length))!);
  const v = await measureForwardPass(session, clock, [1, K + 1], depth);
  // Each size in a run of its own: on a graph backend (CUDA) the steady cost of a fixed verify shape.
  const warm = await measureWarmForwardPass(session, clock, WARM_SIZES, depth);
  const rows: StepRow[] = [];
  let totalDiffering = 0;
  // library: controlledEvaluate; direct: our batch + one reused sampler, outputs read in order up to
  // the first rejection; native: the same with all reads in one native call (the default when built).
  // device: greedy sampled on the target's device (a GPU's default), where the session attached it.
  // The native readers' paths twice: through the library's batch queue, and straight to llama_decode (the default).
  const variant = (path: EvaluatorPath, decode: 'direct' | 'library' = 'library') => ({
    label: path === 'native' || path === 'device' ? `${path}, ${decode === 'direct' ? 'direct decode' : 'library queue'}` : path,
    path,
    decode,
  });
  const direct = evaluator.directDecodeUnavailable === undefined;
  if (!direct) process.stderr.write(`direct decode unavailable: ${evaluator.directDecodeUnavailable}\n`);
  const paths = evaluator.nativeUnavailable
    ? [variant('library'), variant('direct')]
    : [
        variant('library'),
        variant('direct'),
        variant('native'),
        ...(direct ? [variant('native', 'direct')] : []),
        ...(deviceTried ? [variant('device'), ...(direct ? [variant('device', 'direct')] : [])] : []),
      ];
  if (evaluator.nativeUnavailable) process.stderr.write(`native reader unavailable: ${evaluator.nativeUnavailable}\n`);
  // Oracle at a = 1: every proposal right (k+1 tokens a step); a = 0: every proposal wrong.
  const kinds = [
    { kind: 'plain', a: -1, batch: 1 },
    { kind: `k=${K} all accepted`, a: 1, batch: K + 1 },
    { kind: `k=${K} all rejected`, a: 0, batch: K + 1 },
  ];
  const acc = new Map<string, { p: StepProfile; decodeMs: number; sampleMs: number; samples: number; differing: number }>();
  // Interleaved per task, so both paths see the same machine state.
  for (const [t, task] of tasks.entries()) {
    const request = requests[t];
    await session.resetCaches();
    const reference = await session.complete({ ...request, mode: 'plain' });
    const promptLength = session.promptFor(request).length;
    for (const kind of kinds) {
      for (const p of paths) {
        evaluator.usePath(p.path);
        evaluator.useDecode(p.decode);
        await session.resetCaches();
        const profile = emptyStepProfile();
        // The prompt is evaluated before the clock starts, split as the decoder splits it (another
        // split changes the numerics a little: a near-tie could flip): only decode steps are profiled.
        await syncPromptAndPredictNext(session.target.evaluator, session.promptFor(request));
        const before = { decodeMs: clock.decodeMs, sampleMs: clock.sampleMs, samples: clock.samples };
        const policy = new SpeculationPolicy({ ...DEFAULT_SPECULATION, maxProposal: K, adaptive: false, draftMinConfidence: 0 } as SpeculationSettings, new CostModel(), new AcceptanceTracker());
        const oracle = kind.a < 0 ? undefined : new OracleProposer(promptLength, reference.tokens, kind.a, session.info.target.vocabSize, 7 + task.id);
        const r = await session.complete({ ...request, mode: kind.a < 0 ? 'plain' : 'draft' }, undefined, { draft: oracle, policy, profile });
        const key = `${kind.kind}|${p.label}`;
        const a = acc.get(key) ?? { p: emptyStepProfile(), decodeMs: 0, sampleMs: 0, samples: 0, differing: 0 };
        for (const f of Object.keys(profile) as (keyof StepProfile)[]) a.p[f] += profile[f];
        a.decodeMs += clock.decodeMs - before.decodeMs;
        a.sampleMs += clock.sampleMs - before.sampleMs;
        a.samples += clock.samples - before.samples;
        acc.set(key, a);
        // Timing only: with 2+ threads a random model's near-ties may flip between batch sizes (the
        // lossless checks, with their tie rules, are the tests' and regimes 1-2's business).
        if (r.tokens.join() !== reference.tokens.join()) a.differing++;
      }
    }
    process.stderr.write('.');
  }
  process.stderr.write('\n');
  for (const kind of kinds) {
    for (const p of paths) {
      const { p: prof, decodeMs, sampleMs, samples, differing } = acc.get(`${kind.kind}|${p.label}`)!;
      totalDiffering += differing;
      const n = prof.steps;
      // The totals include each request's first token (the cached prompt's last token evaluated
      // again: one decode of V(1), one sample), which is not a decode step.
      const perStepDecode = (decodeMs - tasks.length * v[1]) / n;
      const perStepSample = (sampleMs * (1 - tasks.length / samples)) / n;
      rows.push({
        target: name,
        path: p.label,
        kind: kind.kind,
        steps: n,
        total: prof.totalMs / n,
        nativeDecode: perStepDecode,
        sampling: perStepSample,
        verifyJs: prof.verifyMs / n - perStepDecode - perStepSample,
        erase: prof.eraseMs / n,
        propose: prof.proposeMs / n,
        bookkeeping: prof.bookkeepingMs / n,
        v: v[kind.batch],
        v1: v[1],
        batch: kind.batch,
      });
    }
  }
  const confidence = await confidenceCost(session, depth);
  const backend = backendExplanation(session.info);
  await session.dispose();
  return { rows, v, warm, depth, confidence, backend, note: target.note, differing: totalDiffering, runs: tasks.length * kinds.length * paths.length };
}

/**
 * The next-edit loop against the decoder's own plain step, on the same next-edit prompts (issue #46):
 * plain decoding through decode() with its stop rules (what a completion's plain step is), and the
 * next-edit generation's plain mode (generateNextEdit with its edits streamed by StreamedEdits, as the
 * worker runs it), interleaved per case, the prompt cached for both. Per token: the whole window's ms
 * over its tokens, at two output lengths (the loop's cost per token must not grow with the output).
 */
async function nextEditLoop(name: string): Promise<{ md: string[]; rows: { tokens: number; decoderMs: number; nextEditMs: number; cases: number }[] }> {
  const target = await benchTarget(name);
  const session = await loadBenchSession(
    { targetModel: target.file, draftModel: '', gpu, gpuLayers: 'auto', threads, contextSize: 8192, flashAttention, deviceGreedy },
    DEFAULT_SPECULATION,
    () => undefined,
  );
  const model = session.target.model;
  const detokenize = (tokens: readonly Token[]) => model.detokenize(tokens as readonly LlamaToken[], false);
  const tokenize = (text: string, specials: boolean) => model.tokenize(text, specials) as Token[];
  const cases = editsCases({ npm: Math.ceil((nextEditCases * 2) / 3), shared: Math.floor(nextEditCases / 3) });
  const per = new Map<number, { decoder: number[]; nextEdit: number[] }>();
  for (const [index, c] of cases.entries()) {
    const request = nextEditRequestOf(c, 'plain', 'sweep');
    const prompt = NEXT_EDIT_FORMATS.sweep.buildPrompt(request);
    const promptTokens = promptTokensOf(session, prompt);
    if (promptTokens.length + Math.max(...NEXT_EDIT_LENGTHS) + 8 > session.target.evaluator.capacity) continue;
    const viaDecoder = async (tokens: number) => {
      const t0 = performance.now();
      const stop = new StopRules({ detokenize, isEndToken: () => false, maxTokens: tokens, stopStrings: prompt.stop });
      await decode({ mode: 'plain', target: session.target.evaluator, prompt: promptTokens, stop, policy: session.policy });
      return (performance.now() - t0) / stop.tokens.length;
    };
    const viaNextEdit = async (tokens: number) => {
      const streamed = new StreamedEdits(NEXT_EDIT_FORMATS.sweep, prompt, request);
      const t0 = performance.now();
      const generation = await generateNextEdit({
        target: session.target.evaluator,
        tokenize,
        detokenize,
        isEndToken: () => false,
        prompt: { ...prompt, maxTokens: tokens },
        promptTokens,
        mode: 'plain',
        policy: session.policy,
        finalEdits: (text) => streamed.finalSoFar(text),
      });
      streamed.finish(generation.text);
      return (performance.now() - t0) / generation.tokens.length;
    };
    // The prompt into the cache, untimed.
    await viaDecoder(1);
    for (const tokens of NEXT_EDIT_LENGTHS) {
      const row = per.get(tokens) ?? { decoder: [], nextEdit: [] };
      per.set(tokens, row);
      for (const first of index % 2 ? ['nextEdit', 'decoder'] : ['decoder', 'nextEdit']) {
        if (first === 'decoder') row.decoder.push(await viaDecoder(tokens));
        else row.nextEdit.push(await viaNextEdit(tokens));
      }
    }
    process.stderr.write('.');
  }
  process.stderr.write('\n');
  await session.dispose();
  const rows = NEXT_EDIT_LENGTHS.map((tokens) => {
    const r = per.get(tokens)!;
    return { tokens, decoderMs: median(r.decoder)!, nextEditMs: median(r.nextEdit)!, cases: r.decoder.length };
  });
  const md = [
    `## The next-edit loop against the decoder's plain step (${name}: ${target.note}; sweep prompts of the edits corpus)`,
    '',
    '| output tokens | cases | decoder, plain (ms / token) | next-edit generation, plain (ms / token) | next edit / decoder |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.tokens} | ${r.cases} | ${fmt(r.decoderMs, 3)} | ${fmt(r.nextEditMs, 3)} | ${fmt(r.nextEditMs / r.decoderMs, 3)} |`),
    '',
    "Per token: the whole window's ms over its tokens, medians over cases, the prompt cached for both (interleaved per case). decoder: decode() with its stop rules, as a completion's plain steps; next-edit generation: generateNextEdit with its final edits streamed by StreamedEdits, as the worker runs it. Goal (issue #46): within 10% of the decoder's own plain step.",
    '',
  ];
  return { md, rows };
}

async function main() {
  const started = Date.now();
  const md: string[] = [`# Decode step profile (${new Date().toISOString()}, ${threads} thread${threads === 1 ? '' : 's'})`, ''];
  const all: StepRow[] = [];
  const confidences: Record<string, unknown> = {};
  const warmForwardPass: Record<string, Record<number, number>> = {};
  for (const name of targetNames) {
    const { rows, v, warm, depth, confidence, backend, note, differing, runs } = await profileTarget(name);
    all.push(...rows.map((r) => ({ ...r, depth })));
    md.push(
      `## ${name} (${note}), backend ${backend}`,
      '',
      `Raw forward pass (decodeBatch alone, median, after ${depth} cached tokens as in the tasks): V(1) = ${fmt(v[1], 3)} ms, V(${K + 1}) = ${fmt(v[K + 1], 3)} ms (${fmt(v[K + 1] / v[1], 2)}x).`,
      '',
      `Each size in a run of its own (a fixed verify shape; where a backend replays captured graphs, warm), V(b) / V(1): ${WARM_SIZES.map((b) => `${b}: ${fmt(warm[b]! / warm[1]!, 2)}`).join(', ')} (V(1) ${fmt(warm[1], 3)} ms).`,
      '',
    );
    md.push('| step | path | ms / step | forward pass | reading | rest of verify | erase | propose | loop bookkeeping | overhead (step - forward pass) | overhead / V(1) | step / V(b) |');
    md.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      const overhead = r.total - r.nativeDecode;
      md.push(
        `| ${r.kind} | ${r.path} | ${fmt(r.total, 3)} | ${fmt(r.nativeDecode, 3)} | ${fmt(r.sampling, 3)} | ${fmt(r.verifyJs, 3)} | ${fmt(r.erase, 3)} | ${fmt(r.propose, 3)} | ${fmt(r.bookkeeping, 3)} | ${fmt(overhead, 3)} | ${fmt(overhead / r.v1, 2)} | ${fmt(r.total / r.v, 2)} |`,
      );
    }
    md.push(
      '',
      `One token with its greedy token's probability (what the draft proposer asks per drafted token), ms: library \`confidence\` ${fmt(confidence.libraryConfidence, 3)}, direct (${confidence.directSource === 'confidence' ? "the library's `confidence`: this node-llama-cpp has no totalLogitWeight" : '1 / totalLogitWeight'}) ${fmt(confidence.directConfidence, 3)}, native reader ${confidence.nativeConfidence === null ? 'n/a' : fmt(confidence.nativeConfidence, 3)}, no confidence (direct) ${fmt(confidence.noConfidence, 3)}.`,
    );
    md.push('', `Runs whose output differs from plain decoding (near-ties under batch drift): ${differing} of ${runs}.`);
    confidences[name] = confidence;
    warmForwardPass[name] = warm;
    md.push('');
  }
  const nextEdit = targetNames.includes('qwen-coder-small') ? await nextEditLoop('qwen-coder-small') : null;
  if (nextEdit) md.push(...nextEdit.md);
  md.push(
    `Columns, per step in ms: forward pass = the native decodeBatch calls (or, decoding directly, the native addon's decode calls); reading = the native sampleToken calls (one per output read), native reader calls (one per step, host logits) or, on the device path, the sampled ids read back (one call a step); rest of verify = the evaluator's own JS and the library's batch queue; overhead = everything but the forward pass. Goals (issue 11): a plain step ≤ 1.1 × V(1), a speculative step ≤ V(k+1) + 0.1 × V(1) (overhead / V(1) ≤ 0.1). ${taskCount} tasks × ${MAX_TOKENS} tokens per row, output checked equal to plain decoding. ${((Date.now() - started) / 1000).toFixed(0)} s.`,
  );
  saveReport(`profile${threads > 1 ? `-threads-${threads}` : ''}`, 'profile', md, { threads, gpu, rows: all, confidences, warmForwardPass, nextEditLoop: nextEdit?.rows ?? null });
}

runBenchmark(main);
