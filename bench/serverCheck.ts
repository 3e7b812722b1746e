// node --import tsx bench/serverCheck.ts [--gpu cuda]: starts the llama-server the bench uses
// (bench/cache/llama-server) on the v3 pair with -md, in the environment the bench gives it, and asks
// for one infill. The bench kit's lease runs it right after the build: a server that cannot start
// (issue 47: a symbol lookup error) is seen in seconds, not in the middle of every step.
import * as path from 'node:path';
import { embeddedPairPaths } from '../src/models/embedded';
import { LlamaServer, LLAMA_SERVER } from '../testbed/llamaServer';

/** --gpu cuda (or vulkan): every layer on the GPU, as the bench's llama-server modes run there. */
function onGpu(): boolean {
  const i = process.argv.indexOf('--gpu');
  return i >= 0 && !['cpu', 'auto'].includes(process.argv[i + 1] ?? 'cpu');
}

async function main(): Promise<void> {
  if (!LlamaServer.available()) throw new Error(`${LLAMA_SERVER} is missing`);
  const { target, draft } = embeddedPairPaths(path.resolve(__dirname, '..'), 'v3');
  const t0 = performance.now();
  const server = await LlamaServer.start(target, draft, { threads: 2, contextSize: 1024, maxProposal: 8, minConfidence: 0.5, gpu: onGpu() });
  const started = performance.now() - t0;
  try {
    const r = await server.infill({ prefix: 'export function add(a: number, b: number): number {\n  return ', suffix: '\n}\n', maxTokens: 16, mode: 'plain' });
    if (r.predicted === 0) throw new Error('llama-server answered with no token');
    process.stdout.write(
      `[server-check] llama-server answers: started in ${started.toFixed(0)} ms, ${r.predicted} tokens in ${r.latencyMs.toFixed(0)} ms (draft ${r.draftAccepted}/${r.draftProposed} accepted): ${JSON.stringify(r.text)}\n`,
    );
  } finally {
    await server.stop();
  }
}

main().catch((error) => {
  process.stderr.write(`[server-check] failed: ${error instanceof Error ? error.message : error}\n`);
  process.exit(1);
});
