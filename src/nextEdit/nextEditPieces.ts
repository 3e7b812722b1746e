// What a next-edit request runs, wherever it runs: the text side's prompt formats (nextEdit/formats/,
// chosen from the model's metadata and name, or forced by the request) and output parsing, and the
// decode side's generation (nextEdit/nextEditGeneration.ts). The in-process session decodes with
// `decode` (inference/nextEditTask.ts); a server backend sends the same prompt and reads its output
// with `fromOutput` (remote/serverBackend.ts). Injected, so tests and the bench can swap them.
import type { ModelFileInfo } from '../gguf/modelFileCheck';
import type { DecoderStats } from '../shared/generationStats';
import type { Token } from '../shared/decoding';
import type { GreedyEvaluator } from '../speculation/greedyEvaluator';
import type { SpeculationPolicy } from '../speculation/policy';
import type { DraftProposer, NgramProposer } from '../speculation/proposers';
import { chooseFormat } from './formats';
import { generateNextEdit } from './nextEditGeneration';
import { finalEditsSoFar, outputToEdits, reduceToEdits } from './outputToEdit';
import type { NextEditFormat, NextEditPrompt, NextEditRequest, NoSuggestionReason, TextReplacement } from './types';

/** What decoding a next-edit prompt gives back (nextEdit/nextEditGeneration.ts on the decode side). */
export interface GeneratedNextEdit {
  /** The model's output, cut at the format's stop. */
  output?: string;
  edits: TextReplacement[];
  regionText: string | null;
  noSuggestion?: { reason: NoSuggestionReason; detail: string };
  timeToFirstEditMs?: number;
  stats: DecoderStats;
}

/** What the decode of one next-edit prompt gets (mirrors generateNextEdit's input). */
export interface NextEditDecodeInput {
  request: NextEditRequest;
  format: NextEditFormat;
  prompt: NextEditPrompt;
  /** The prompt's tokens (control tokens as tokens, BOS first when the model wants one). */
  promptTokens: Token[];
  target: GreedyEvaluator;
  draft?: DraftProposer;
  ngram?: NgramProposer;
  mode: NextEditRequest['mode'];
  policy: SpeculationPolicy;
  tokenize(text: string): Token[];
  /** Text to tokens with control tokens parsed (the copy proposer tokenizes the window as the prompt shows it). */
  tokenizeWithSpecials(text: string): Token[];
  detokenize(tokens: readonly Token[]): string;
  isEndToken(token: Token): boolean;
  signal?: AbortSignal;
  /** A final edit, as soon as it is final (verified tokens after it re-synchronised with the window). */
  onEdit(edit: TextReplacement): void;
}

/** What is known of the model that serves next edits: its GGUF metadata in-process, only its name from a server. */
export type NextEditModelInfo = Pick<ModelFileInfo, 'name'> & Partial<ModelFileInfo> & { basename?: string | null };

export interface NextEditPieces {
  /** The request's format on this model: the forced one, else the model's; a reason when there is none. */
  formatFor(request: NextEditRequest, model: NextEditModelInfo): NextEditFormat | { none: string };
  /** Decodes the prompt in-process, streaming final edits. */
  decode(input: NextEditDecodeInput): Promise<GeneratedNextEdit>;
  /**
   * For a streamed output (a server's): the edits final in the output so far, in document order
   * (each call gives all of them; the caller sends the new ones). Absent: edits come with the end.
   */
  finalEditsOf?(format: NextEditFormat, prompt: NextEditPrompt, request: NextEditRequest): (outputSoFar: string) => TextReplacement[];
  /** The edits in a model's whole output (a server's answer). */
  fromOutput(format: NextEditFormat, output: string, prompt: NextEditPrompt, request: NextEditRequest): Omit<GeneratedNextEdit, 'stats' | 'timeToFirstEditMs'>;
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
    const settled = finalEditsSoFar(this.current, region, this.prompt.region.start);
    if (settled.edits.length <= this.final.edits.length) return [];
    const fresh = settled.edits.slice(this.final.edits.length);
    this.final = settled;
    return fresh;
  }

  /** The whole output's edits (the streamed ones unchanged, first) or why there are none. */
  finish(output: string): Omit<GeneratedNextEdit, 'stats' | 'timeToFirstEditMs'> {
    const whole = outputToEdits(this.request, this.prompt, this.format, output);
    if (whole.noSuggestion || whole.regionText === null || this.final.edits.length === 0) return whole;
    const { regionConsumed, outputConsumed } = this.final;
    const rest = reduceToEdits(this.current.slice(regionConsumed), whole.regionText.slice(outputConsumed), this.prompt.region.start + regionConsumed);
    return { regionText: whole.regionText, edits: [...this.final.edits, ...rest] };
  }
}

/**
 * The decode side's generation (nextEditGeneration.ts: the window copy proposer in 'copy' and
 * 'hybrid', lossless), its final edits streamed as they settle; the whole output's edits at the end.
 */
async function generate(input: NextEditDecodeInput): Promise<GeneratedNextEdit> {
  const streamed = new StreamedEdits(input.format, input.prompt, input.request);
  const settled: TextReplacement[] = [];
  const generation = await generateNextEdit({
    target: input.target,
    tokenize: (text, specials) => (specials ? input.tokenizeWithSpecials(text) : input.tokenize(text)),
    detokenize: input.detokenize,
    isEndToken: input.isEndToken,
    prompt: input.prompt,
    promptTokens: input.promptTokens,
    mode: input.mode,
    policy: input.policy,
    draft: input.draft,
    ngram: input.ngram,
    signal: input.signal,
    finalEdits: (text) => {
      settled.push(...streamed.push(text));
      return settled;
    },
    onEdit: (edit) => input.onEdit(edit),
  });
  return {
    output: generation.text,
    ...streamed.finish(generation.text),
    ...(generation.timeToFirstEditMs !== undefined ? { timeToFirstEditMs: generation.timeToFirstEditMs } : {}),
    stats: generation.stats,
  };
}

export const nextEditPieces: NextEditPieces = {
  formatFor: (request, model) => {
    const format = chooseFormat({ name: model.name, basename: model.basename, fileName: model.path }, request.format);
    return format ?? { none: `the model "${model.name ?? model.path ?? 'unnamed'}" names no next-edit format (Sweep Next-Edit or Zeta), and draftline.nextEdit.format does not force one` };
  },
  decode: generate,
  finalEditsOf: (format, prompt, request) => {
    const streamed = new StreamedEdits(format, prompt, request);
    const sent: TextReplacement[] = [];
    return (outputSoFar) => {
      sent.push(...streamed.push(outputSoFar));
      return sent;
    };
  },
  fromOutput: (format, output, prompt, request) => outputToEdits(request, prompt, format, output),
};
