// What a next-edit request runs, wherever it runs: the request's format
// (nextEdit/formats/: the forced one, else the one the model's metadata and name say), the decode —
// the target rewrites the window, the window copy proposer feeds it what it will most likely copy,
// and each edit is streamed out as soon as the verified output has re-synchronised with the window
// after it — and the output reduced to edits (nextEdit/outputToEdit.ts). The worker decodes here
// (inference/sessionNextEdits.ts); a server backend sends the same prompt and reads its streamed output with
// StreamedEdits (remote/serverNextEdit.ts). Free of node-llama-cpp and of the editor.
import type { ModelFileInfo } from '../gguf/modelFileCheck';
import type { DecodeMode, Token } from '../shared/decoding';
import type { DecoderStats } from '../shared/generationStats';
import type { GreedyEvaluator } from '../speculation/greedyEvaluator';
import { proposersFor } from '../speculation/modeProposers';
import type { SpeculationPolicy } from '../speculation/policy';
import type { Proposer } from '../speculation/proposer';
import { decode, type StepProfile } from '../speculation/speculativeDecoder';
import { WindowCopyProposer, type WindowCopyOptions } from '../speculation/windowCopyProposer';
import { StopRules } from '../stopping/stopRules';
import { chooseFormat } from './formats';
import { type EditsFromOutput, finalEditsSoFar, outputToEdits, reduceToEdits } from './outputToEdit';
import type { NextEditFormat, NextEditPrompt, NextEditRequest, TextReplacement } from './types';

/** What is known of the model that serves next edits: its GGUF metadata in-process, only its name from a server. */
export type NextEditModelInfo = Pick<ModelFileInfo, 'name'> & Partial<ModelFileInfo> & { basename?: string | null };

/** The request's format on this model: the forced one, else the model's; a reason when there is none. */
export function formatFor(request: NextEditRequest, model: NextEditModelInfo): NextEditFormat | { none: string } {
  const format = chooseFormat({ name: model.name, basename: model.basename, fileName: model.path }, request.format);
  return format ?? { none: `the model "${model.name ?? model.path ?? 'unnamed'}" names no next-edit format (Sweep Next-Edit or Zeta), and draftline.nextEdit.format does not force one` };
}

export interface NextEditGenerationInput {
  target: GreedyEvaluator;
  /** The target's tokenizer; `specials`: control tokens written as text become their ids. */
  tokenize(text: string, specials: boolean): Token[];
  detokenize(tokens: readonly Token[]): string;
  /** End-of-generation tokens (llama.cpp's EOG set): the output ends before one. None when absent. */
  isEndToken?(token: Token): boolean;
  prompt: NextEditPrompt;
  /** The prompt's tokens when the caller has them (a BOS the tokenizer does not add); default tokenize(prompt.prompt, true). */
  promptTokens?: readonly Token[];
  /** 'plain', 'copy' (the window copy alone), 'hybrid' (the copy first, then n-gram, lookahead, draft). */
  mode: DecodeMode;
  policy: SpeculationPolicy;
  /** Sources besides the window copy (made here from the prompt's copySource): the mode takes those it uses. */
  proposers?: readonly (Proposer | undefined)[];
  /** The copy proposer's schedule and re-synchronisation, in place of DEFAULT_COPY_OPTIONS. */
  copyOptions?: Partial<WindowCopyOptions>;
  /** A keystroke: decoding stops at its next step, and no edit is streamed after it. */
  signal?: AbortSignal;
  /**
   * The edits of a partial output that are final: the output has re-synchronised with the window after
   * them (outputToEdit.ts's streaming reduction), in document order. Asked after each verified step.
   */
  finalEdits?(partialOutputText: string): TextReplacement[];
  /** Each final edit once, as soon as it is final; `ms` since generateNextEdit was called. */
  onEdit?(edit: TextReplacement, ms: number): void;
  now?: () => number;
  profile?: StepProfile;
}

export interface NextEditGeneration {
  /** The model's output, cut before the first stop string. */
  text: string;
  tokens: Token[];
  stats: DecoderStats;
  /** The edits streamed (each once, in the order they became final). */
  edits: TextReplacement[];
  /** ms from the call to the first streamed edit, when there was one. */
  timeToFirstEditMs?: number;
  /** ms from the call to the end of the window's output (or the abort). */
  windowMs: number;
}

/**
 * Greedy decoding of a next-edit prompt, token-identical to plain decoding in every mode (the copy
 * proposer only guesses; the target verifies every token). Stops at prompt.stop, prompt.maxTokens, an
 * end token, or the signal.
 */
export async function generateNextEdit(input: NextEditGenerationInput): Promise<NextEditGeneration> {
  const now = input.now ?? (() => performance.now());
  const started = now();
  const { prompt, signal } = input;
  const promptTokens = input.promptTokens ?? input.tokenize(prompt.prompt, true);
  const copy =
    input.mode === 'copy' || input.mode === 'hybrid'
      ? new WindowCopyProposer(input.tokenize(prompt.copySource, true), promptTokens.length, { cursor: copyCursorToken(prompt, input.tokenize), ...input.copyOptions })
      : undefined;
  const stop = new StopRules({
    detokenize: input.detokenize,
    isEndToken: input.isEndToken ?? (() => false),
    maxTokens: Math.max(1, prompt.maxTokens),
    stopStrings: prompt.stop,
  });

  const edits: TextReplacement[] = [];
  const streamed = new Set<string>();
  /** Where the streamed edits end: a later answer that re-splits text already streamed is not streamed again. */
  let streamedEnd = -Infinity;
  let timeToFirstEditMs: number | undefined;
  let lastText: string | undefined;
  const stream = () => {
    if (!input.finalEdits || signal?.aborted) return;
    const text = stop.finalText;
    if (text === lastText) return;
    lastText = text;
    for (const edit of input.finalEdits(text)) {
      const key = `${edit.start}:${edit.end}:${edit.text}`;
      if (streamed.has(key) || edit.start < streamedEnd) continue;
      streamed.add(key);
      streamedEnd = Math.max(streamedEnd, edit.end);
      edits.push(edit);
      const ms = now() - started;
      timeToFirstEditMs ??= ms;
      input.onEdit?.(edit, ms);
    }
  };

  const stats = await decode({
    mode: input.mode,
    target: input.target,
    prompt: promptTokens,
    stop,
    policy: input.policy,
    proposers: proposersFor(input.mode, [copy, ...(input.proposers ?? [])]),
    signal,
    now: input.now,
    profile: input.profile,
    onProgress: stream,
  });
  // The last step's tokens (and an output that ended: its last edits are final too when they re-synchronised).
  stream();
  return { text: stop.finalText, tokens: [...stop.tokens], stats, edits, timeToFirstEditMs, windowMs: now() - started };
}

/** The token of the tokenized copySource at which the cursor lies (the tokens of the text before it), when the prompt says. */
export function copyCursorToken(prompt: Pick<NextEditPrompt, 'copySource' | 'copyCursor'>, tokenize: (text: string, specials: boolean) => readonly Token[]): number | undefined {
  if (prompt.copyCursor === undefined) return undefined;
  return prompt.copyCursor <= 0 ? 0 : tokenize(prompt.copySource.slice(0, prompt.copyCursor), true).length;
}

/**
 * The edits final in a streamed output so far (outputToEdit.ts finalEditsSoFar on the format's
 * partial region), and at the end the whole output's: the final ones first, then the rest reduced
 * past what they account for, so every streamed edit is in the result unchanged. An output the
 * checks refuse (outputToEdits) gives none, whatever was streamed.
 */
export class StreamedEdits {
  private final: { edits: TextReplacement[]; regionConsumed: number; outputConsumed: number } = { edits: [], regionConsumed: 0, outputConsumed: 0 };
  private readonly current: string;
  /** The region's whole lines at the last push: only a new whole line can settle an edit (finalEditsSoFar). */
  private lastWholeLines = '';
  /** Every edit push has returned, in order (finalSoFar). */
  private readonly pushed: TextReplacement[] = [];

  constructor(
    private readonly format: NextEditFormat,
    private readonly prompt: NextEditPrompt,
    private readonly request: NextEditRequest,
  ) {
    this.current = request.text.slice(prompt.region.start, prompt.region.end);
  }

  /** The edits that became final with `outputSoFar` (none when nothing new settled). */
  push(outputSoFar: string): TextReplacement[] {
    const region = this.format.partialRegion(outputSoFar, this.prompt);
    if (region === null) return [];
    // Between two newlines nothing can settle: no diff of the whole region for each token.
    const wholeLines = region.slice(0, region.lastIndexOf('\n') + 1);
    if (wholeLines === this.lastWholeLines) return [];
    this.lastWholeLines = wholeLines;
    const settled = finalEditsSoFar(this.current, region, this.prompt.region.start);
    if (settled.edits.length <= this.final.edits.length) return [];
    const fresh = settled.edits.slice(this.final.edits.length);
    this.final = settled;
    return fresh;
  }

  /** Every edit that became final up to `outputSoFar`, in order: generateNextEdit's `finalEdits`. */
  finalSoFar(outputSoFar: string): TextReplacement[] {
    this.pushed.push(...this.push(outputSoFar));
    return this.pushed;
  }

  /** The whole output's edits (the streamed ones unchanged, first) or why there are none. */
  finish(output: string): EditsFromOutput {
    const whole = outputToEdits(this.request, this.prompt, this.format, output);
    if (whole.noSuggestion || whole.regionText === null || this.final.edits.length === 0) return whole;
    const { regionConsumed, outputConsumed } = this.final;
    const rest = reduceToEdits(this.current.slice(regionConsumed), whole.regionText.slice(outputConsumed), this.prompt.region.start + regionConsumed);
    return { regionText: whole.regionText, edits: [...this.final.edits, ...rest] };
  }
}
