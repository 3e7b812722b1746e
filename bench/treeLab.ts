// The `trees` regime: a counted lab of token trees against chains, the headroom measured before a
// tree is verified for real. For each
// generation the target's greedy output is known (a plain run of the same prompt, or the true window
// of a perfect next-edit model); each step is replayed with what a source would verify in one target
// evaluation of B tokens: a chain of up to B − 1 guesses, or a tree of up to B − 1 nodes; the longest
// root path equal to the target's output is accepted, and the target's own token after it.
// Hardware-independent counts (tokens per evaluation), and speedups weighed by an H100's cost table
// and by this machine's measured V(b). Sources: bench/treeSources.ts; counting: bench/treeReplay.ts.
import type { BenchTask } from './corpus';
import type { CompletionRequest } from '../src/shared/completion';
import type { ModelSettings } from '../src/shared/settings';
import type { Token } from '../src/shared/decoding';
import type { NgramIndex } from '../src/ngram';
import { DEFAULT_SPECULATION, InferenceSession } from '../src/inference/inferenceSession';
import { documentNgramProposer } from '../src/inference/documentNgrams';
import { NEXT_EDIT_FORMATS } from '../src/nextEdit/formats';
import { AcceptanceTracker } from '../src/speculation/acceptanceTracker';
import { CopyAcceptance } from '../src/speculation/copyAcceptance';
import { WindowCopyProposer } from '../src/speculation/windowCopyProposer';
import { CompletionEngine, DEFAULT_ENGINE_SETTINGS } from '../src/engine/completionEngine';
import { engineDocument } from './engineView';
import { type CorpusCase, nextEditRequestOf, perfectSweepOutput, promptTokensOf } from './edits';
import { h100VerifyCost } from './editReplay';
import { NgramModProposer, NgramSimpleProposer } from './llamaServerProposers';
import { clockNative, measureForwardPass } from './nativeClock';
import { fmt, median, Progress } from './stats';
import { benchTarget } from './targets';
import {
  candidateBound,
  chainSource,
  CopySource,
  type DraftAt,
  DraftDistributions,
  DraftTrees,
  draftChain,
  draftChainWithLeaves,
  eagleProposal,
  suffixChain,
  hybridChain,
  hybridSuffixChain,
  hybridTree,
  NGRAM_MIN_N,
  SUFFIX_MIN_N,
  SuffixTreeSource,
} from './treeSources';
import { addToTally, type CostTable, emptyTally, interpolatedRatio, monotoneCurve, pooledSpeedup, type ReplaySource, type ReplayTally, replayGeneration, tokensPerEvaluation } from './treeReplay';

/** Batch sizes B compared: tokens verified per target evaluation, the pending one included. */
export const TREE_BATCHES = [8, 16, 32, 64] as const;
const LARGEST = TREE_BATCHES[TREE_BATCHES.length - 1]!;
/** Children per expanded node of EAGLE-2's tree: the draft's k most likely tokens. */
export const EAGLE_K = 8;
const EAGLE_K_SMALL = 4;
/** Batch sizes whose forward pass is timed on this machine (the rest interpolated). */
const TIMED_SIZES = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64];
/** The gate: trees are worth building where they add this much at B = 16. */
export const GATE_GAIN = 1.15;
export const GATE_BATCH = 16;

/** A variant: a named source built afresh per generation, its learned state kept across generations (as a session keeps its policy). */
interface Variant<C> {
  name: string;
  /** bound: the best a tree of the source's candidates could do (knows the output; not a source). */
  shape: 'chain' | 'tree' | 'bound';
  make(ctx: C, batch: number, state: Map<string, unknown>): ReplaySource;
}

const kept = <T>(state: Map<string, unknown>, key: string, create: () => T): T => {
  if (!state.has(key)) state.set(key, create());
  return state.get(key) as T;
};

interface FimCase {
  prompt: Token[];
  truth: Token[];
  /** The session's index, holding the task's document under `key`. */
  documents: NgramIndex;
  key: string;
  ngram: ReturnType<typeof documentNgramProposer>;
  at: DraftAt;
  trees: DraftTrees;
}

const minConfidence = DEFAULT_SPECULATION.draftMinConfidence;

/** llama-server's model-free proposers, ported (bench/llamaServerProposers.ts), as chains. */
const RIVAL_CHAINS: Variant<{ prompt: Token[] }>[] = [
  {
    name: 'ngram-simple chain (llama-server, ported)',
    shape: 'chain',
    make: () => {
      const p = new NgramSimpleProposer();
      return chainSource((h, n) => p.offer(h, n));
    },
  },
  {
    name: 'ngram-mod chain (llama-server, ported)',
    shape: 'chain',
    make: (c) => {
      const p = new NgramModProposer(c.prompt.length);
      return chainSource(
        (h, n) => p.offer(h, n),
        (proposed, accepted) => p.record(proposed, accepted),
      );
    },
  },
];

export const FIM_VARIANTS: Variant<FimCase>[] = [
  { name: 'draft chain', shape: 'chain', make: (c) => ({ propose: (s) => draftChain(c.at, s, minConfidence) }) },
  { name: 'draft chain to B−1', shape: 'chain', make: (c) => ({ propose: (s) => draftChain(c.at, s, 0) }) },
  { name: `draft tree (EAGLE-2, k=${EAGLE_K})`, shape: 'tree', make: (c) => ({ propose: (s) => eagleProposal(c.trees, s, EAGLE_K) }) },
  { name: `draft chain + leaves (k=${EAGLE_K})`, shape: 'tree', make: (c) => ({ propose: (s) => draftChainWithLeaves(c.at, s, minConfidence, EAGLE_K) }) },
  { name: 'draft chain + leaves (k=4)', shape: 'tree', make: (c) => ({ propose: (s) => draftChainWithLeaves(c.at, s, minConfidence, 4) }) },
  { name: 'draft chain + leaves (k=2)', shape: 'tree', make: (c) => ({ propose: (s) => draftChainWithLeaves(c.at, s, minConfidence, 2) }) },
  { name: `draft tree (EAGLE-2, k=${EAGLE_K_SMALL})`, shape: 'tree', make: (c) => ({ propose: (s) => eagleProposal(c.trees, s, EAGLE_K_SMALL) }) },
  { name: 'n-gram chain', shape: 'chain', make: (c) => chainSource((h, n) => c.ngram.offer(h, n)) },
  ...RIVAL_CHAINS,
  { name: 'suffix chain', shape: 'chain', make: (c, _b, state) => suffixChain(suffixFor(state, c)) },
  { name: 'suffix tree', shape: 'tree', make: (c, _b, state) => suffixFor(state, c) },
  { name: `suffix tree, ${NGRAM_MIN_N}+ token matches`, shape: 'tree', make: (c, _b, state) => suffixFor(state, c, NGRAM_MIN_N) },
  { name: 'suffix candidates, bound', shape: 'bound', make: (c, _b, state) => suffixBound(state, c) },
  { name: 'hybrid chain', shape: 'chain', make: (c) => hybridChain(c.ngram, c.at, minConfidence) },
  {
    name: 'hybrid chain, suffix for n-gram',
    shape: 'chain',
    // The draft's rate as a policy learns it (DraftModelProposer's prior), kept across generations.
    make: (c, _b, state) =>
      hybridSuffixChain(
        suffixFor(state, c),
        c.at,
        minConfidence,
        kept(state, 'draft rate', () => new AcceptanceTracker({ draft: 0.5 })),
      ),
  },
  { name: 'hybrid tree, by score', shape: 'tree', make: (c, _b, state) => hybridTree(suffixFor(state, c), c.trees, EAGLE_K, 'by score') },
  { name: 'hybrid tree, suffix first', shape: 'tree', make: (c, _b, state) => hybridTree(suffixFor(state, c), c.trees, EAGLE_K, 'suffix first') },
];

/** The suffix source of a variant and batch size: its rates learned across generations, its index the session's (holding the current document). */
function suffixFor(state: Map<string, unknown>, c: { documents: NgramIndex; key: string }, minN = SUFFIX_MIN_N): SuffixTreeSource {
  const current = kept(state, 'index', () => ({ documents: c.documents, key: c.key }));
  current.documents = c.documents;
  current.key = c.key;
  return kept(state, `suffix ${minN}`, () => new SuffixTreeSource(() => current, minN));
}

interface EditCase {
  prompt: Token[];
  truth: Token[];
  window: Token[];
  documents: NgramIndex;
  key: string;
  ngram: ReturnType<typeof documentNgramProposer>;
}

/** The suffix source's whole candidate trie at each step, and the output's longest path through it. */
function suffixBound(state: Map<string, unknown>, c: { documents: NgramIndex; key: string; truth: Token[] }): ReplaySource {
  const suffix = suffixFor(state, c);
  return candidateBound({ trie: (step) => suffix.trie(step.history, step.budget) }, c.truth);
}

function copyFor(state: Map<string, unknown>, c: EditCase, options: { resync: boolean; suffix: boolean; suffixRoot?: boolean; fallback: boolean }): CopySource {
  const acceptance = kept(state, 'copy', () => new CopyAcceptance());
  return new CopySource(new WindowCopyProposer(c.window, c.prompt.length), c.prompt.length, c.window, acceptance, {
    resync: options.resync,
    suffix: options.suffix ? suffixFor(state, c) : undefined,
    suffixRoot: options.suffixRoot,
    fallbackChain: options.fallback ? c.ngram : undefined,
  });
}

export const EDIT_VARIANTS: Variant<EditCase>[] = [
  { name: 'copy chain', shape: 'chain', make: (c, _b, s) => copyFor(s, c, { resync: false, suffix: false, fallback: false }) },
  { name: 'copy tree (+ other resyncs)', shape: 'tree', make: (c, _b, s) => copyFor(s, c, { resync: true, suffix: false, fallback: false }) },
  { name: 'n-gram chain', shape: 'chain', make: (c) => chainSource((h, n) => c.ngram.offer(h, n)) },
  { name: 'suffix chain', shape: 'chain', make: (c, _b, s) => suffixChain(suffixFor(s, c)) },
  { name: 'suffix tree', shape: 'tree', make: (c, _b, s) => suffixFor(s, c) },
  { name: `suffix tree, ${NGRAM_MIN_N}+ token matches`, shape: 'tree', make: (c, _b, s) => suffixFor(s, c, NGRAM_MIN_N) },
  { name: 'hybrid chain (copy, else n-gram)', shape: 'chain', make: (c, _b, s) => copyFor(s, c, { resync: false, suffix: false, fallback: true }) },
  { name: 'hybrid tree (copy + resyncs + suffix)', shape: 'tree', make: (c, _b, s) => copyFor(s, c, { resync: true, suffix: true, fallback: false }) },
  { name: 'hybrid tree, by score (+ suffix at the root)', shape: 'tree', make: (c, _b, s) => copyFor(s, c, { resync: true, suffix: true, suffixRoot: true, fallback: false }) },
  { name: 'copy + resyncs + suffix candidates, bound', shape: 'bound', make: (c, _b, s) => candidateBound(copyFor(s, c, { resync: true, suffix: true, suffixRoot: true, fallback: false }), c.truth) },
  ...RIVAL_CHAINS,
];

/** The chain each tree is compared with (the gain rows), by regime. */
export const FIM_COMPARISONS: [tree: string, chain: string][] = [
  [`draft tree (EAGLE-2, k=${EAGLE_K})`, 'draft chain'],
  [`draft chain + leaves (k=${EAGLE_K})`, 'draft chain'],
  [`draft tree (EAGLE-2, k=${EAGLE_K})`, 'draft chain to B−1'],
  [`draft tree (EAGLE-2, k=${EAGLE_K_SMALL})`, 'draft chain'],
  ['suffix chain', 'n-gram chain'],
  ['suffix tree', 'suffix chain'],
  ['suffix tree', 'n-gram chain'],
  [`suffix tree, ${NGRAM_MIN_N}+ token matches`, 'n-gram chain'],
  ['suffix candidates, bound', 'n-gram chain'],
  ['suffix tree', 'ngram-mod chain (llama-server, ported)'],
  ['suffix tree', 'ngram-simple chain (llama-server, ported)'],
  ['hybrid tree, by score', 'hybrid chain'],
  ['hybrid tree, suffix first', 'hybrid chain'],
  ['hybrid chain, suffix for n-gram', 'hybrid chain'],
];
export const EDIT_COMPARISONS: [tree: string, chain: string][] = [
  ['copy tree (+ other resyncs)', 'copy chain'],
  ['suffix chain', 'n-gram chain'],
  ['suffix tree', 'suffix chain'],
  ['suffix tree', 'n-gram chain'],
  [`suffix tree, ${NGRAM_MIN_N}+ token matches`, 'n-gram chain'],
  ['hybrid tree (copy + resyncs + suffix)', 'hybrid chain (copy, else n-gram)'],
  ['hybrid tree, by score (+ suffix at the root)', 'hybrid chain (copy, else n-gram)'],
  ['copy + resyncs + suffix candidates, bound', 'hybrid chain (copy, else n-gram)'],
  ['hybrid tree (copy + resyncs + suffix)', 'ngram-mod chain (llama-server, ported)'],
  ['hybrid tree (copy + resyncs + suffix)', 'ngram-simple chain (llama-server, ported)'],
];

/** Tallies by variant name and batch size. */
type Tallies = Record<string, Record<number, ReplayTally>>;

async function runVariants<C>(
  variants: Variant<C>[],
  c: C,
  prompt: readonly Token[],
  truth: readonly Token[],
  tables: CostTable[],
  tallies: Tallies,
  states: Map<string, Map<string, unknown>>,
): Promise<void> {
  for (const batch of TREE_BATCHES) {
    for (const v of variants) {
      const key = `${v.name}|${batch}`;
      if (!states.has(key)) states.set(key, new Map());
      const source = v.make(c, batch, states.get(key)!);
      const count = await replayGeneration(prompt, truth, source, batch, tables);
      addToTally(((tallies[v.name] ??= {})[batch] ??= emptyTally(tables)), count);
    }
  }
}

export interface LabOptions {
  threads: number;
  gpu: ModelSettings['gpu'];
  flashAttention: ModelSettings['flashAttention'];
  maxTokens: number;
  log(level: string, message: string): void;
}

/**
 * V(b) of a session's target, ms by batch size, at `depth` cached tokens: the faster of two
 * interleaved measurements per size (other processes only ever add time), then never less than a
 * smaller batch's (a larger batch does all a smaller one does).
 */
export async function steadyCurve(session: InferenceSession, depth: number): Promise<Record<number, number>> {
  const clock = clockNative(session);
  const at = Math.min(depth, session.info.contextSize - LARGEST - 8);
  const first = await measureForwardPass(session, clock, TIMED_SIZES, at);
  const second = await measureForwardPass(session, clock, TIMED_SIZES, at);
  return monotoneCurve(Object.fromEntries(TIMED_SIZES.map((b) => [b, Math.min(first[b]!, second[b]!)])));
}

/** This machine's V(b), ms by batch size, of a model as a target, at `depth` cached tokens. */
async function measuredCurve(model: string, depth: number, opts: LabOptions): Promise<Record<number, number>> {
  const session = await InferenceSession.load(
    { targetModel: model, draftModel: '', gpu: opts.gpu, gpuLayers: 'auto', threads: opts.threads, contextSize: 2048, flashAttention: opts.flashAttention },
    DEFAULT_SPECULATION,
    opts.log,
  );
  try {
    return await steadyCurve(session, depth);
  } finally {
    await session.dispose();
  }
}

export interface CostCurves {
  /** ms by batch size. */
  target: Record<number, number>;
  draft?: Record<number, number>;
  depth: number;
}

/**
 * The cost tables a regime is counted under: an H100's, with every step a fixed shape of B (as
 * Draftline verifies on a graph backend), with the draft's cost and without it, and with each step
 * the batch it holds (as bench/edits.ts counts it); and this machine's, each step the batch it holds.
 */
function costTables(curves: CostCurves): CostTable[] {
  const target = interpolatedRatio(curves.target);
  if (!curves.draft) {
    return [
      { name: 'H100', fixedShape: true, verify: h100VerifyCost, draft: () => 0 },
      { name: 'H100 variable', fixedShape: false, verify: h100VerifyCost, draft: () => 0 },
      { name: 'CPU', fixedShape: false, verify: target, draft: () => 0 },
    ];
  }
  const draft = interpolatedRatio(curves.draft);
  // The draft's single-token cost relative to the target's, as measured here: used under every table.
  const c = curves.draft[1]! / curves.target[1]!;
  return [
    { name: 'H100', fixedShape: true, verify: h100VerifyCost, draft: (b) => c * h100VerifyCost(b) },
    { name: 'H100, draft free', fixedShape: true, verify: h100VerifyCost, draft: () => 0 },
    { name: 'H100 variable', fixedShape: false, verify: h100VerifyCost, draft: (b) => c * h100VerifyCost(b) },
    { name: 'CPU', fixedShape: false, verify: target, draft: (b) => c * draft(b) },
  ];
}

export interface LabResult {
  regime: string;
  models: string;
  cases: number;
  skipped: number;
  curves: CostCurves;
  tables: string[];
  tallies: Tallies;
  variants: { name: string; shape: 'chain' | 'tree' | 'bound' }[];
  comparisons: [string, string][];
  seconds: number;
  /** Draft tokens the lab evaluated to see the distributions it needed (its own cost, not a step's). */
  labDraftTokens?: number;
  /** Prompt tokens left out of the draft's view, per generation where any were (its context has no room for the deepest path). */
  draftPromptTrimmed?: number[];
}

/** Regime 1's tasks on one pair: the plain output of each, then every variant replayed on it. */
export async function fimLab(tasks: BenchTask[], pair: { name: string; target: string; draft: string }, opts: LabOptions): Promise<LabResult> {
  const started = Date.now();
  const session = await InferenceSession.load(
    { targetModel: pair.target, draftModel: pair.draft, gpu: opts.gpu, gpuLayers: 'auto', threads: opts.threads, contextSize: 2048, flashAttention: opts.flashAttention },
    DEFAULT_SPECULATION,
    opts.log,
  );
  if (!session.draft) throw new Error(`the ${pair.name} pair has no usable draft`);
  const engine = new CompletionEngine({ complete: () => Promise.reject(new Error('unused')) }, { ...DEFAULT_ENGINE_SETTINGS, maxTokens: opts.maxTokens });
  const requests = tasks.map((task) => engine.buildRequest(engineDocument(task)) as CompletionRequest);
  const depth = Math.round(median(requests.map((r) => session.promptFor(r).length)) ?? 512);
  const curves: CostCurves = { target: {}, depth };
  const context = await session.draft.model.createContext({ contextSize: session.info.contextSize, sequences: 1, threads: opts.threads, batchSize: 512 });
  const sequence = context.getSequence();
  const tallies: Tallies = {};
  const states = new Map<string, Map<string, unknown>>();
  const progress = new Progress(tasks.length, `trees (${pair.name} pair)`);
  let labDraftTokens = 0;
  const trimmed: number[] = [];
  let tables: CostTable[] = [];
  try {
    curves.target = await steadyCurve(session, depth);
    curves.draft = await measuredCurve(pair.draft, depth, opts);
    tables = costTables(curves);
    for (const [i, task] of tasks.entries()) {
      const request = requests[i]!;
      const key = request.documentKey!;
      session.documents.setDocument(key, task.text);
      const prompt = session.promptFor(request);
      const plain = await session.complete({ ...request, mode: 'plain' });
      const truth = [...plain.tokens];
      // The draft's context holds what the target's does: the prompt was windowed to leave room for a
      // completion, not for 63 hypothetical tokens after it. Where the deepest path would not fit, the
      // farthest prefix tokens (right after the FIM prefix token) are left out of the draft's view.
      const excess = prompt.length + truth.length + LARGEST - session.info.contextSize;
      const cut = Math.max(1, prompt.indexOf(session.target.info.fim?.prefix ?? -1) + 1);
      const draftPrompt = excess > 0 ? [...prompt.slice(0, cut), ...prompt.slice(cut + excess)] : prompt;
      if (excess > 0) trimmed.push(excess);
      const dists = new DraftDistributions(sequence, draftPrompt, EAGLE_K);
      const at: DraftAt = (position, path) => dists.at([...truth.slice(0, position), ...path]);
      const c: FimCase = {
        prompt,
        truth,
        documents: session.documents,
        key,
        ngram: documentNgramProposer(session.documents, key, DEFAULT_SPECULATION),
        at,
        trees: new DraftTrees(at, LARGEST - 1),
      };
      await runVariants(FIM_VARIANTS, c, prompt, truth, tables, tallies, states);
      labDraftTokens += dists.evaluatedTokens;
      session.documents.removeDocument(key);
      progress.tick();
    }
  } finally {
    await context.dispose();
    await session.dispose();
  }
  return {
    regime: `fill-in-the-middle, ${pair.name} pair`,
    models: `${session.info.target.name} + ${session.info.draft?.name ?? '-'}`,
    cases: tasks.length,
    skipped: 0,
    curves,
    tables: tables.map((t) => t.name),
    tallies,
    variants: FIM_VARIANTS.map(({ name, shape }) => ({ name, shape })),
    comparisons: FIM_COMPARISONS,
    seconds: (Date.now() - started) / 1000,
    labDraftTokens,
    draftPromptTrimmed: trimmed,
  };
}

/**
 * The next-edit replay's cases (bench/edits.ts): a perfect model's output, the true updated window in
 * the sweep format, tokenized by Qwen2.5-Coder's real tokenizer (the replay's 1.5B shape carries it);
 * counted only, so a small random model with that tokenizer serves. CPU costs: `cpuCurve`.
 */
export async function editsLab(cases: CorpusCase[], cpuCurve: CostCurves, opts: LabOptions): Promise<LabResult> {
  const started = Date.now();
  const tokenizer = await benchTarget('qwen-coder-small');
  const session = await InferenceSession.load(
    { targetModel: tokenizer.file, draftModel: '', gpu: 'cpu', gpuLayers: 0, threads: opts.threads, contextSize: 8192, flashAttention: opts.flashAttention },
    DEFAULT_SPECULATION,
    opts.log,
  );
  const tables = costTables({ target: cpuCurve.target, depth: cpuCurve.depth });
  const tallies: Tallies = {};
  const states = new Map<string, Map<string, unknown>>();
  const progress = new Progress(cases.length, 'trees (next edits)');
  let skipped = 0;
  try {
    const tokenize = (text: string) => session.target.model.tokenize(text, true) as Token[];
    for (const c of cases) {
      const request = nextEditRequestOf(c, 'copy', 'sweep');
      const prompt = NEXT_EDIT_FORMATS.sweep.buildPrompt(request);
      const output = perfectSweepOutput(c, prompt);
      if (output === null) {
        skipped++;
        progress.tick();
        continue;
      }
      const key = request.documentKey!;
      session.documents.setDocument(key, c.before);
      const e: EditCase = {
        prompt: promptTokensOf(session, prompt),
        truth: tokenize(output),
        window: tokenize(prompt.copySource),
        documents: session.documents,
        key,
        ngram: documentNgramProposer(session.documents, key, DEFAULT_SPECULATION),
      };
      await runVariants(EDIT_VARIANTS, e, e.prompt, e.truth, tables, tallies, states);
      session.documents.removeDocument(key);
      progress.tick();
    }
  } finally {
    await session.dispose();
  }
  return {
    regime: 'next edits (perfect-model replay)',
    models: `${tokenizer.note}: its tokenizer only`,
    cases: cases.length - skipped,
    skipped,
    curves: cpuCurve,
    tables: tables.map((t) => t.name),
    tallies,
    variants: EDIT_VARIANTS.map(({ name, shape }) => ({ name, shape })),
    comparisons: EDIT_COMPARISONS,
    seconds: (Date.now() - started) / 1000,
  };
}

const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : Number.NaN);

/** Tokens per evaluation of every variant at each B. */
export function tokensTable(r: LabResult): string[] {
  return [
    `| source | shape | ${TREE_BATCHES.map((b) => `B=${b}`).join(' | ')} | nodes/step at B=16 | draft tokens/step, batches/step at B=16 |`,
    `|---|---|${TREE_BATCHES.map(() => '---|').join('')}---|---|`,
    ...r.variants.map((v) => {
      const t = r.tallies[v.name]!;
      const at16 = t[GATE_BATCH]!;
      const draft = at16.draftBatches ? `${fmt(at16.draftTokens / at16.steps, 1)}, ${fmt(at16.draftBatches / at16.steps, 1)}` : '-';
      return `| ${v.name} | ${v.shape} | ${TREE_BATCHES.map((b) => fmt(tokensPerEvaluation(t[b]!), 2)).join(' | ')} | ${fmt(at16.nodes / Math.max(1, at16.steps), 1)} | ${draft} |`;
    }),
  ];
}

/** Tree over chain in tokens per evaluation, per comparison and B. */
export function gainTable(r: LabResult): string[] {
  return [
    `| tree | over chain | ${TREE_BATCHES.map((b) => `B=${b}`).join(' | ')} |`,
    `|---|---|${TREE_BATCHES.map(() => '---|').join('')}`,
    ...r.comparisons.map(([tree, chain]) => `| ${tree} | ${chain} | ${TREE_BATCHES.map((b) => `${fmt(gain(r, tree, chain, b), 2)}x`).join(' | ')} |`),
  ];
}

export function gain(r: LabResult, tree: string, chain: string, batch: number): number {
  return ratio(tokensPerEvaluation(r.tallies[tree]![batch]!), tokensPerEvaluation(r.tallies[chain]![batch]!));
}

/** Speedups over plain decoding, one table per cost table (pooled over the generations; next edits: and the median per case); bounds are no sources, left out. */
export function speedupTable(r: LabResult): string[] {
  const medians = r.regime.startsWith('next edits');
  return r.tables.flatMap((table) => [
    `${table}${medians ? ' (pooled; median per case)' : ''}:`,
    '',
    `| source | ${TREE_BATCHES.map((b) => `B=${b}`).join(' | ')} |`,
    `|---|${TREE_BATCHES.map(() => '---|').join('')}`,
    ...r.variants
      .filter((v) => v.shape !== 'bound')
      .map((v) => {
        const t = r.tallies[v.name]!;
        const cell = (b: number) => `${fmt(pooledSpeedup(t[b]!, table), 2)}x${medians ? ` (${fmt(median(t[b]!.speedups[table] ?? []), 2)}x)` : ''}`;
        return `| ${v.name} | ${TREE_BATCHES.map(cell).join(' | ')} |`;
      }),
    '',
  ]);
}

/** This machine's V(b)/V(1) as measured (and the draft's, relative to the target's one-token step). */
export function curveLine(r: LabResult): string {
  const line = (ms: Record<number, number>, one: number) =>
    Object.entries(ms)
      .map(([b, v]) => `${b}: ${fmt(v / one, 2)}`)
      .join(', ');
  const t = r.curves.target;
  const parts = [`target V(b)/V(1) ${line(t, t[1]!)} (V(1) = ${fmt(t[1], 2)} ms, ${r.curves.depth} tokens cached)`];
  if (r.curves.draft) parts.push(`draft batch / target V(1): ${line(r.curves.draft, t[1]!)}`);
  return parts.join('; ');
}

/** A regime's figures for results.json: per variant and batch size, the sums and the per-generation medians (not every generation's). */
export function labSummary(r: LabResult) {
  const { tallies, ...rest } = r;
  const byVariant = Object.fromEntries(
    Object.entries(tallies).map(([name, byBatch]) => [
      name,
      Object.fromEntries(
        Object.entries(byBatch).map(([batch, t]) => {
          const { speedups, tokensPerEvaluation: perCase, ...sums } = t;
          return [
            batch,
            {
              ...sums,
              tokensPerEvaluation: tokensPerEvaluation(t),
              tokensPerEvaluationMedian: median(perCase),
              speedup: Object.fromEntries(r.tables.map((table) => [table, pooledSpeedup(t, table)])),
              speedupMedian: Object.fromEntries(r.tables.map((table) => [table, median(speedups[table] ?? [])])),
            },
          ];
        }),
      ),
    ]),
  );
  return { ...rest, byVariant };
}

/** The bench run's parts the section reads and fills (bench/run.ts's Bench). */
export interface TreesBench {
  tasks: BenchTask[];
  pairs: { name: string; target: string; draft: string }[];
  results: Record<string, unknown>;
  md: string[];
}

/** Evenly spaced `n` of the cases (all when n is undefined or not smaller). */
export function spaced<T>(all: readonly T[], n?: number): T[] {
  return n === undefined || all.length <= n ? [...all] : Array.from({ length: n }, (_, i) => all[Math.floor((i * all.length) / n)]!);
}

/** The gate at B = 16: the best tree over Draftline's chain (the hybrid), and over each source's own chain. */
export function gateOf(r: LabResult, chain: string): { best: string; gain: number; bySource: { tree: string; chain: string; gain: number }[] } {
  const trees = r.variants.filter((v) => v.shape === 'tree').map((v) => v.name);
  const best = trees.reduce((a, b) => (tokensPerEvaluation(r.tallies[b]![GATE_BATCH]!) > tokensPerEvaluation(r.tallies[a]![GATE_BATCH]!) ? b : a));
  return {
    best,
    gain: gain(r, best, chain, GATE_BATCH),
    bySource: r.comparisons.map(([tree, c]) => ({ tree, chain: c, gain: gain(r, tree, c, GATE_BATCH) })),
  };
}

const LEGEND = [
  "Counted, not timed. Each generation is replayed step by step against the target's own greedy output (fill-in-the-middle: a plain run of the task's request on the pair's target, the prompt and stop rules regime 1 uses; next edits: the true updated window a perfect model writes, as in the edits replay). A step verifies the pending token and what the source offers, at most B − 1 nodes: a chain, or a tree whose longest root path equal to the output is accepted; the step advances that far plus the target's own token. tok/eval: output tokens over target evaluations, the prompt's included (as regime 1 counts them); every step's batch is one target evaluation whatever its shape.",
  "Sources. draft chain: the draft's greedy tokens, stopping where its own probability falls below draftMinConfidence, as DraftModelProposer drafts (to B−1: never stopping). draft tree: EAGLE-2's dynamic tree from the draft's real top-k distributions: the candidate with the highest cumulative draft probability is taken next, a taken node's k best children offered once it is expanded (expanded only when they might be taken next), until B − 1 nodes. draft chain + leaves (k): the draft chain, and at each of its depths the draft's other k − 1 likeliest tokens as leaves (where it stopped unsure, that depth's top token too), the likeliest first by the chain's probability up to them times their own, until B − 1 nodes: read from the distributions the chain's own draft batches computed (Draftline's DraftModelProposer where a step verifies trees). n-gram chain: today's proposer (the prompt and output, then the open document; 3 to 8 tokens matched, the latest occurrence's continuation). suffix tree / chain: Draftline's suffix proposer as it ships (src/speculation/suffixProposer.ts, after SuffixDecoding): the continuations after every occurrence (at most 32: the prompt and output's newest first, then the index's) of the longest matched ending (1 to 8 tokens; or 3 to 8: no offer after a shorter one) in the prompt and output and the open document (through the session's n-gram index), merged into a trie by frequency, each node scored its share times the rates the proposer learns per match length from its verified chains; the tree is the best B − 1 nodes, the chain its likeliest path. hybrid chain: Draftline's (fill-in-the-middle: the n-gram match, else the draft's chain; next edits: the window copy, else the n-gram match); suffix for n-gram: the suffix chain where its first guess is at least as likely as the draft's measured per-token acceptance (the hybrid mode's floor for it), else the draft's chain. hybrid tree, by score: the suffix's and EAGLE-2's nodes in one trie, each by its estimated chance (the draft's cumulative probability, the suffix's decayed frequency), the best B − 1; suffix first: the suffix's best nodes first where it matches, EAGLE-2's filling the rest. copy tree: the window copy scored by the chance it holds so far (CopyAcceptance's first-token rate and survival curve, learned over the steps as the policy learns them), and along its first 16 tokens the alternatives should it be wrong there (where else in the window it could resume: the window copy's own re-synchronisation rules; with suffix: the suffix source's continuations too), weighted by match length. hybrid tree, by score (+ suffix at the root): the same, and the suffix source's own candidates at the root by their own chance (merged by the higher score). llama-server's ngram-simple and ngram-mod: ported (bench/llamaServerProposers.ts), their drafts cut to B − 1. bound: the output's longest path (up to B − 1 deep) through a source's whole candidate trie, no node budget: it knows the output, so it is not a source but the most a tree of those candidates could accept.",
  "Draft cost. A chain drafts one token a batch (the first batch evaluates the accepted tokens the draft has not seen: 1 after a rejection, 2 after a full accept). A tree is counted as a level-by-level expansion would run it: one draft batch per depth holding the nodes expanded at that depth (each on its own path, as a tree attention mask allows), after the same catch-up batch; the lab itself evaluates the draft on every hypothetical path it needs, memoised (its own cost is not a step's). A draft batch of b tokens costs c x D(b)/D(1) target evaluations of one token, c = the draft's one-token step over the target's as measured here, D the H100 line (1 + 0.06 (b − 1)) under the H100 table, the draft's measured batch cost under the CPU table. \"H100, draft free\" leaves the draft out (the verify side alone).",
  "Cost tables. H100: V(b)/V(1) = 1 + 0.06 (b − 1) (the line bench/edits.ts counts with), every step a fixed shape of B as Draftline verifies on a graph backend (chains and trees alike; what the source leaves empty is verified for nothing, never counted as a guess). H100 variable: the same line, each step the batch it holds (pending + nodes), as bench/edits.ts's counted replay weighs it. CPU: this machine's V(b) as measured in the run (the faster of two interleaved measurements per size, never below a smaller size's), each step the batch it holds (a CPU's variable shape). Speedup: plain decoding's cost of the same tokens (one single-token evaluation per token after the first) over the source's, all generations pooled; next edits also the median over cases (as the edits replay's counted table reports it; there the policy chooses each length).",
];

/** The tree lab: fill-in-the-middle on each pair's regime 1 tasks, and the next-edit replay's cases. */
export async function treesSection(bench: TreesBench, opts: LabOptions & { taskCount: number; editCases: CorpusCase[] }): Promise<void> {
  const tasks = bench.tasks.slice(0, opts.taskCount);
  const fim: LabResult[] = [];
  for (const pair of bench.pairs.filter((p) => p.draft)) fim.push(await fimLab(tasks, pair, opts));
  // Next edits are counted under the v3 target's measured V(b) (the embedded default), measured apart when v3 did not run.
  const v3 = fim.find((r) => r.regime.endsWith('v3 pair'));
  const cpu: CostCurves = v3 ? { target: v3.curves.target, depth: v3.curves.depth } : await v3Curve(opts);
  const edits = opts.editCases.length ? await editsLab(opts.editCases, cpu, opts) : null;
  const all = edits ? [...fim, edits] : fim;
  const gates = all.map((r) => ({ regime: r.regime, ...gateOf(r, r === edits ? 'hybrid chain (copy, else n-gram)' : 'hybrid chain') }));
  bench.results.trees = { tasks: tasks.length, editCases: opts.editCases.length, regimes: all.map(labSummary), gates };
  bench.md.push(`## Trees: tokens per evaluation of chains and trees at equal batch sizes`, '', ...LEGEND.flatMap((p) => [p, '']));
  for (const r of all) {
    const heading = `### ${r.regime} (${r.models}; ${r.cases} ${r.regime.startsWith('next') ? 'cases' : 'tasks'}${r.skipped ? `, ${r.skipped} skipped: the window not read back` : ''}; ${Math.round(r.seconds)} s)`;
    const trimmed = r.draftPromptTrimmed?.length
      ? `The draft's context (the target's size) has no room for the deepest paths after ${r.draftPromptTrimmed.length} of the prompts: their farthest prefix tokens were left out of the draft's view (median ${median(r.draftPromptTrimmed)} tokens).`
      : '';
    bench.md.push(
      heading,
      '',
      'Tokens per target evaluation:',
      '',
      ...tokensTable(r),
      '',
      'Tree over chain, tokens per evaluation:',
      '',
      ...gainTable(r),
      '',
      'Speedup over plain decoding, counted:',
      '',
      ...speedupTable(r),
      '',
      `Measured here: ${curveLine(r)}.`,
      '',
    );
    if (trimmed) bench.md.push(trimmed, '');
    console.log(`\n${heading}\n${tokensTable(r).join('\n')}\n${gainTable(r).join('\n')}\n${speedupTable(r).join('\n')}\n`);
  }
  const verdicts = gates.map((g) => {
    const open = g.gain >= GATE_GAIN;
    return `- ${g.regime}: best tree at B = ${GATE_BATCH} "${g.best}" ${fmt(g.gain, 2)}x the hybrid chain's tokens per evaluation (${open ? 'at least' : 'under'} ${GATE_GAIN}x); per source: ${g.bySource.map((s) => `${s.tree} over ${s.chain} ${fmt(s.gain, 2)}x`).join('; ')}.`;
  });
  bench.md.push(`### The gate (B = ${GATE_BATCH}, counted tokens per evaluation, tree over chain)`, '', ...verdicts, '');
  console.log(verdicts.join('\n'));
}

async function v3Curve(opts: LabOptions): Promise<CostCurves> {
  const v3 = await benchTarget('v3');
  const depth = 512;
  return { target: await measuredCurve(v3.file, depth, opts), depth };
}
