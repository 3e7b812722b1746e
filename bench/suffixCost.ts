// What a decode step's text lookups cost on a full index: the n-gram proposer and the suffix proposer
// (src/speculation/suffixProposer.ts) over an index of about 4 M characters of real code (the bench
// corpus, tokenized by the embedded target's tokenizer, as the worker indexes open documents), at
// histories cut from the same files (a prompt-sized window, the output growing a token a step, as the
// decoder asks). Reported per step: median, p90 and the slowest, in microseconds; and the index's
// memory with and without the history's own index.
//
//   node --import tsx bench/suffixCost.ts [--chars 4000000] [--steps 2000] [--max-len 15]
import * as path from 'node:path';
import { documentNgramProposer, documentSuffixProposer } from '../src/inference/documentNgrams';
import { getRuntime } from '../src/inference/llamaRuntime';
import { embeddedPairPaths } from '../src/models/embedded';
import { NgramIndex } from '../src/ngram';
import { DEFAULT_SPECULATION } from '../src/settings/declaredSettings';
import { SpeculationPolicy } from '../src/speculation/policy';
import { mulberry32 } from '../testbed/ggufWriter';
import { ensureCorpus, sourceFiles } from './corpus';
import { fmt, percentile } from './stats';

const ROOT = path.resolve(__dirname, '..');
const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};

/** Tokens of the prompt a history starts with (regime 1's prompts are about this long). */
const PROMPT_TOKENS = 1024;
/** Steps a history grows by before another one is cut. */
const STEPS_PER_HISTORY = 16;

async function main(): Promise<void> {
  const chars = arg('chars', 4_000_000);
  const steps = arg('steps', 2000);
  const maxLen = arg('max-len', 15);
  const llama = await getRuntime({ gpu: 'cpu' }, 1, () => {});
  const model = await llama.loadModel({ modelPath: embeddedPairPaths(ROOT, 'v3').target, vocabOnly: true });
  const tokenize = (text: string) => model.tokenize(text, false) as number[];
  // The corpus first, then the project's own dependencies until the index holds `chars`.
  const files = [...sourceFiles(ensureCorpus()), ...sourceFiles(path.join(ROOT, 'node_modules'))];
  const index = new NgramIndex({ minN: DEFAULT_SPECULATION.ngramMinMatch, maxN: DEFAULT_SPECULATION.ngramMaxMatch, tokenize, maxTotalChars: chars });
  const chosen: { name: string; tokens: number[] }[] = [];
  let total = 0;
  const heapBefore = process.memoryUsage().heapUsed;
  for (const file of files) {
    if (total + file.text.length > chars) break;
    index.setDocument(file.name, file.text);
    total += file.text.length;
    chosen.push({ name: file.name, tokens: tokenize(file.text) });
  }
  const heapIndex = process.memoryUsage().heapUsed - heapBefore;
  const stats = index.stats();
  const rand = mulberry32(20261129);
  const policy = new SpeculationPolicy({ ...DEFAULT_SPECULATION });
  const timings = { ngram: [] as number[], suffix: [] as number[], "suffix, a request's first step": [] as number[] };
  const offered = { ngram: 0, suffix: 0, "suffix, a request's first step": 0 };
  let done = 0;
  while (done < steps) {
    const file = chosen[Math.floor(rand() * chosen.length)]!;
    if (file.tokens.length < PROMPT_TOKENS + STEPS_PER_HISTORY + 1) continue;
    const start = Math.floor(rand() * (file.tokens.length - PROMPT_TOKENS - STEPS_PER_HISTORY));
    const history = file.tokens.slice(start, start + PROMPT_TOKENS);
    const ngram = documentNgramProposer(index, file.name, DEFAULT_SPECULATION);
    const suffix = documentSuffixProposer(index, file.name, DEFAULT_SPECULATION, policy);
    for (let s = 0; s < STEPS_PER_HISTORY && done < steps; s++, done++) {
      let t0 = performance.now();
      if (ngram.offer(history, maxLen)) offered.ngram++;
      timings.ngram.push((performance.now() - t0) * 1000);
      // The first step indexes the prompt (the history's own index): counted apart.
      const which = s === 0 ? "suffix, a request's first step" : 'suffix';
      t0 = performance.now();
      if (suffix.offer(history, maxLen)) offered[which]++;
      timings[which].push((performance.now() - t0) * 1000);
      history.push(file.tokens[start + PROMPT_TOKENS + s]!);
    }
  }
  const line = (name: keyof typeof timings) =>
    `| ${name} | ${fmt(percentile(timings[name], 0.5), 0)} | ${fmt(percentile(timings[name], 0.9), 0)} | ${fmt(Math.max(...timings[name]), 0)} | ${fmt((100 * offered[name]) / timings[name].length, 0)}% |`;
  console.log(`index: ${stats.documents} documents, ${fmt(stats.indexedChars / 1e6, 2)} M characters, ${stats.tokens} tokens in ${stats.chunks} chunks, ~${fmt(heapIndex / 2 ** 20, 0)} MiB of heap`);
  console.log(`${steps} steps, histories of ${PROMPT_TOKENS} tokens growing ${STEPS_PER_HISTORY} steps each, offers of up to ${maxLen} tokens\n`);
  console.log('| proposer | median µs | p90 µs | slowest µs | steps with an offer |');
  console.log('|---|---|---|---|---|');
  console.log(line('ngram'));
  console.log(line('suffix'));
  console.log(line("suffix, a request's first step"));
  await model.dispose();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
