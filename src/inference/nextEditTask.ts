// A next-edit request (issue #39) on the loaded models: the prompt built by the request's format
// (the forced one, else the one the model's metadata and name say), tokenized with its control
// tokens, decoded on the window's own KV sequence (`window N · next edit`, inference/promptStates.ts),
// its final edits streamed as they become final, and the model's window reduced to edits. Every
// native call goes through the context gate (inference/contextGate.ts): a completion that arrives
// takes the context between two of them, and the next-edit resumes after it on its own sequence.
// InferenceSession.nextEdit wires it; the session's own file stays about completions.
import { formatFor, generateNextEdit, type NextEditModelInfo, StreamedEdits } from '../nextEdit/generation';
import { noNextEdit } from '../nextEdit/noSuggestion';
import type { NextEditPrompt, NextEditRequest, NextEditResult, TextReplacement } from '../nextEdit/types';
import type { SpeculationSettings, Token } from '../shared/types';
import type { GreedyEvaluator } from '../speculation/greedyEvaluator';
import type { SpeculationPolicy } from '../speculation/policy';
import type { DraftProposer, NgramProposer } from '../speculation/proposers';
import { type ContextGate, ParkedAbort } from './contextGate';
import type { SequenceEvaluators } from './promptStates';

export { emptyDecoderStats, noNextEdit } from '../nextEdit/noSuggestion';

/** What the task needs of the session. */
export interface NextEditHost {
  /** The loaded model that serves next edits (InferenceSession.nextEditModel): its GGUF identity chooses the format. */
  model: NextEditModelInfo;
  /** Text to tokens with control tokens parsed (`<|file_sep|>` as one token), no BOS. */
  tokenizeWithSpecials(text: string): Token[];
  tokenize(text: string): Token[];
  detokenize(tokens: readonly Token[]): string;
  isEndToken(token: Token): boolean;
  /** BOS to put first, when the model wants one. */
  bos: Token | null;
  /** Room in one KV sequence. */
  capacity: number;
  gate: ContextGate;
  /** The owner's KV sequence (and its draft's) for a prompt (may save or restore states: native). */
  sequenceFor(owner: string, prompt: readonly Token[]): Promise<SequenceEvaluators<GreedyEvaluator>>;
  /** Whether `owner` still holds the sequence of `target` (a completion may take it while the next-edit parks). */
  holds(owner: string, target: GreedyEvaluator): boolean;
  draftProposer(draft: GreedyEvaluator, speculation: SpeculationSettings): DraftProposer;
  ngramProposer(documentKey: string | undefined, speculation: SpeculationSettings): NgramProposer;
}

export interface NextEditRun {
  owner: string;
  speculation: SpeculationSettings;
  policy: SpeculationPolicy;
  signal?: AbortSignal;
  onEdit?(edit: TextReplacement, ms: number): void;
  /** The next-edit parks for a completion / resumes (the worker's count of running generations). */
  onPark?(): void;
  onResume?(): void;
}

/** A completion took the next-edit's KV sequence while it parked (every sequence was in use). */
export class SequenceTaken extends Error {
  constructor(owner: string) {
    super(`a completion took the KV sequence of ${owner} while it waited (all sequences were in use)`);
  }
}

/**
 * An evaluator whose native calls wait for the context gate: between two of them a completion may
 * take the context; after such a wait the sequence must still be the owner's (else SequenceTaken).
 */
function gated(evaluator: GreedyEvaluator, gate: ContextGate, signal: AbortSignal | undefined, hooks: { onPark?(): void; onResume?(): void; check(): void }): GreedyEvaluator {
  const through = <T>(call: () => Promise<T>) => gate.evaluate(call, signal, hooks);
  return {
    get tokens() {
      return evaluator.tokens;
    },
    get capacity() {
      return evaluator.capacity;
    },
    append: (input, outputs, withConfidence, expected) => through(() => evaluator.append(input, outputs, withConfidence, expected)),
    truncate: (length) => through(() => evaluator.truncate(length)),
    ...(evaluator.appendRanked ? { appendRanked: (input: readonly Token[], outputs: number, top: number) => through(() => evaluator.appendRanked!(input, outputs, top)) } : {}),
  };
}

/** Runs one next-edit request; never throws for a cancel or a taken sequence (a result says why). */
export async function runNextEdit(host: NextEditHost, request: NextEditRequest, run: NextEditRun): Promise<NextEditResult> {
  const started = performance.now();
  const { signal } = run;
  // A prompt built already is decoded as it is; its format reads the output.
  const format = formatFor(request.prompt ? { ...request, format: request.prompt.format } : request, host.model);
  if ('none' in format) return noNextEdit(request, 'noFormat', format.none);
  let prompt: NextEditPrompt;
  try {
    prompt = request.prompt ?? format.buildPrompt(request);
  } catch (error) {
    return noNextEdit(request, 'error', `the ${format.id} prompt could not be built: ${(error as Error).message}`, { format: format.id });
  }
  const base = { format: format.id, region: prompt.region };
  const promptTokens = [...(host.bos !== null ? [host.bos] : []), ...host.tokenizeWithSpecials(prompt.prompt)];
  // The window's tokens may all be rewritten: room for the prompt, the output and a proposal.
  if (promptTokens.length + prompt.maxTokens + 8 > host.capacity) {
    return noNextEdit(request, 'error', `the ${format.id} prompt (${promptTokens.length} tokens) and ${prompt.maxTokens} new tokens do not fit a KV sequence of ${host.capacity}`, base);
  }
  if (signal?.aborted) return noNextEdit(request, 'cancelled', 'cancelled before it started', base);
  let parks = 0;
  const onPark = () => {
    parks++;
    run.onPark?.();
  };
  const hooks = {
    onPark,
    onResume: run.onResume,
    check: () => {
      if (!host.holds(run.owner, state.target)) throw new SequenceTaken(run.owner);
    },
  };
  let state!: SequenceEvaluators<GreedyEvaluator>;
  try {
    // Taking (or loading back) the sequence is native work too: it waits for completions like a step.
    state = await host.gate.evaluate(() => host.sequenceFor(run.owner, promptTokens), signal, { onPark, onResume: run.onResume });
    const target = gated(state.target, host.gate, signal, hooks);
    const draft = state.draft ? host.draftProposer(gated(state.draft, host.gate, signal, hooks), run.speculation) : undefined;
    const streamed = new StreamedEdits(format, prompt, request);
    const settled: TextReplacement[] = [];
    const generation = await generateNextEdit({
      target,
      tokenize: (text, specials) => (specials ? host.tokenizeWithSpecials(text) : host.tokenize(text)),
      detokenize: host.detokenize,
      isEndToken: host.isEndToken,
      prompt,
      promptTokens,
      mode: request.mode,
      policy: run.policy,
      draft,
      ngram: host.ngramProposer(request.documentKey, run.speculation),
      signal,
      finalEdits: (text) => {
        settled.push(...streamed.push(text));
        return settled;
      },
      onEdit: (edit) => run.onEdit?.(edit, performance.now() - started),
    });
    const generated = {
      output: generation.text,
      ...streamed.finish(generation.text),
      ...(generation.timeToFirstEditMs !== undefined ? { timeToFirstEditMs: generation.timeToFirstEditMs } : {}),
      stats: generation.stats,
    };
    const yielded = parks > 0 ? { yieldedToCompletions: parks } : {};
    if (signal?.aborted) return { ...base, ...generated, ...yielded, edits: [], noSuggestion: { reason: 'cancelled', detail: 'cancelled while decoding' } };
    return { ...base, ...generated, ...yielded };
  } catch (error) {
    if (error instanceof ParkedAbort || (signal?.aborted && !(error instanceof SequenceTaken))) return noNextEdit(request, 'cancelled', 'cancelled while waiting for a completion', base);
    if (error instanceof SequenceTaken) return noNextEdit(request, 'cancelled', error.message, base);
    // The library's state is unknown after a failed evaluation: start the sequence afresh (the gate: no completion runs meanwhile).
    if (state) await host.gate.evaluate(() => (state.target as { reset?(): Promise<void> }).reset?.() ?? Promise.resolve()).catch(() => undefined);
    throw error;
  }
}
