// Optional anchor: llama.cpp's own llama-server (built from the source node-llama-cpp ships, see
// scripts/build-llama-server.sh) with /infill, plain and with a draft model (-md), as llama.vscode
// users run it. Its prompt layout and stop rules are its own, so its output is compared by speed only.
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { CompletionRequest } from '../src/shared/completion';

export const LLAMA_SERVER = path.resolve(__dirname, '../bench/cache/llama-server/build/bin/llama-server');

/**
 * The environment llama.cpp's own programs (llama-server, llama-quantize) run in. The bench kit's
 * run.sh puts node-llama-cpp's library folder first on LD_LIBRARY_PATH for node (the CUDA backend it
 * compiles asks for node-llama-cpp's libggml-base.so.0), and a child inherits it: there the server
 * built beside it would load node-llama-cpp's prebuilt libggml-base and libllama-common, not its own,
 * a mix of two builds (on the H200: a symbol lookup error at start). run.sh says what the path was
 * before (DRAFTLINE_SERVER_LD_LIBRARY_PATH, empty for none); those programs get that one back.
 */
export function serverEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const own = env.DRAFTLINE_SERVER_LD_LIBRARY_PATH;
  if (own === undefined) return env;
  const { LD_LIBRARY_PATH: _inherited, DRAFTLINE_SERVER_LD_LIBRARY_PATH: _own, ...rest } = env;
  return own ? { ...rest, LD_LIBRARY_PATH: own } : rest;
}

export interface LlamaServerResult {
  latencyMs: number;
  text: string;
  predicted: number;
  promptMs: number;
  /** Prompt tokens the server evaluated (not served from its prompt cache), when it says. */
  promptTokensEvaluated: number | null;
  draftProposed: number;
  draftAccepted: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export class LlamaServer {
  private constructor(
    private readonly child: ChildProcess,
    /** Base URL, e.g. http://127.0.0.1:40123. */
    readonly url: string,
  ) {}

  static available(): boolean {
    return fs.existsSync(LLAMA_SERVER);
  }

  static async start(
    target: string,
    draft: string | null,
    opts: {
      threads: number;
      contextSize: number;
      maxProposal: number;
      minConfidence: number;
      apiKey?: string;
      flashAttention?: boolean | 'auto';
      /** A model-free speculation type instead of the draft (`--spec-type ngram-simple`, `ngram-mod`: next edits), its own defaults. */
      specType?: string;
      /** Every layer (the draft's too) on the GPU, as the bench's own modes run there; else none. */
      gpu?: boolean;
    },
  ): Promise<LlamaServer> {
    const port = await freePort();
    const args = ['-m', target, '--host', '127.0.0.1', '--port', String(port), '-c', String(opts.contextSize), '-t', String(opts.threads), '-ngl', opts.gpu ? '999' : '0', '-np', '1', '--no-webui'];
    // The anchor runs the same computation as ours: the target's flash-attention setting as chosen at load.
    if (opts.flashAttention !== undefined) args.push('-fa', opts.flashAttention === 'auto' ? 'auto' : opts.flashAttention ? 'on' : 'off');
    if (draft)
      args.push(
        '--spec-type',
        'draft-simple',
        '-md',
        draft,
        '-ngld',
        opts.gpu ? '999' : '0',
        '--spec-draft-n-max',
        String(opts.maxProposal),
        '--spec-draft-n-min',
        '0',
        '--draft-p-min',
        String(opts.minConfidence),
        '-td',
        String(opts.threads),
      );
    if (opts.specType) args.push('--spec-type', opts.specType);
    if (opts.apiKey) args.push('--api-key', opts.apiKey);
    const child = spawn(LLAMA_SERVER, args, { stdio: ['ignore', 'ignore', 'pipe'], env: serverEnv() });
    let log = '';
    child.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`llama-server exited: ${log}`);
      try {
        const r = await fetch(`${url}/health`);
        // /health answers without the key; 200 once the model is loaded.
        if (r.ok) break;
      } catch {}
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`llama-server did not start: ${log}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    return new LlamaServer(child, url);
  }

  async infill(request: CompletionRequest): Promise<LlamaServerResult> {
    const t0 = performance.now();
    const response = await fetch(`${this.url}/infill`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input_prefix: request.prefix, input_suffix: request.suffix, n_predict: request.maxTokens, temperature: 0, top_k: 1, cache_prompt: true, samplers: ['top_k'] }),
    });
    const body = (await response.json()) as { content?: string; timings?: { predicted_n?: number; prompt_n?: number; prompt_ms?: number; draft_n?: number; draft_n_accepted?: number } };
    const latencyMs = performance.now() - t0;
    if (!response.ok) throw new Error(`llama-server /infill: ${response.status} ${JSON.stringify(body).slice(0, 300)}`);
    const t = body.timings ?? {};
    return {
      latencyMs,
      text: body.content ?? '',
      predicted: t.predicted_n ?? 0,
      promptMs: t.prompt_ms ?? 0,
      promptTokensEvaluated: t.prompt_n ?? null,
      draftProposed: t.draft_n ?? 0,
      draftAccepted: t.draft_n_accepted ?? 0,
    };
  }

  /**
   * A raw prompt through /completion, greedy, streamed (control tokens in the text parsed as such);
   * `onText` sees the output so far after each chunk. The next-edit path of a server backend.
   */
  async completion(prompt: string, nPredict: number, stop: string[], onText?: (textSoFar: string) => void): Promise<LlamaServerResult> {
    const t0 = performance.now();
    const response = await fetch(`${this.url}/completion`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, n_predict: nPredict, stop, temperature: 0, top_k: 1, cache_prompt: true, samplers: ['top_k'], stream: true }),
    });
    if (!response.ok || !response.body) throw new Error(`llama-server /completion: ${response.status} ${(await response.text()).slice(0, 300)}`);
    let text = '';
    let timings: { predicted_n?: number; prompt_n?: number; prompt_ms?: number; draft_n?: number; draft_n_accepted?: number } = {};
    let pending = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      pending += decoder.decode(chunk, { stream: true });
      let at: number;
      while ((at = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, at).trim();
        pending = pending.slice(at + 1);
        if (!line.startsWith('data:')) continue;
        const event = JSON.parse(line.slice(5)) as { content?: string; stop?: boolean; timings?: typeof timings; error?: { message?: string } };
        // A failure mid-stream comes as an event (the status was already 200): the run did not finish.
        if (event.error) throw new LlamaServerStreamError(event.error.message ?? JSON.stringify(event.error), text);
        if (event.content) {
          text += event.content;
          onText?.(text);
        }
        if (event.timings) timings = event.timings;
      }
    }
    return {
      latencyMs: performance.now() - t0,
      text,
      predicted: timings.predicted_n ?? 0,
      promptMs: timings.prompt_ms ?? 0,
      promptTokensEvaluated: timings.prompt_n ?? null,
      draftProposed: timings.draft_n ?? 0,
      draftAccepted: timings.draft_n_accepted ?? 0,
    };
  }

  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

/**
 * llama-server ended a streamed /completion with an error event: e.g. on a random stand-in's output,
 * "The model produced output that does not match the expected Content-only format" (its chat parser
 * runs on every streamed chunk and refuses invalid UTF-8). `partial`: the text streamed before it.
 */
export class LlamaServerStreamError extends Error {
  constructor(
    message: string,
    readonly partial: string,
  ) {
    super(`llama-server /completion failed mid-stream: ${message}`);
  }
}
