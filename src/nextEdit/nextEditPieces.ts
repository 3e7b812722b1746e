// What a next-edit request runs, wherever it runs: the text side's prompt formats (nextEdit/formats/,
// chosen from the model's metadata and name, or forced by the request) and output parsing, and the
// decode side's generation (nextEdit/nextEditGeneration.ts). The in-process session decodes with
// `decode` (inference/nextEditTask.ts); a server backend sends the same prompt and reads its output
// with `fromOutput` (remote/serverBackend.ts). Injected, so tests and the bench can swap them.
import type { ModelFileInfo } from '../gguf/modelFileCheck';
import type { DecoderStats, Token } from '../shared/types';
import { decode } from '../speculation/speculativeDecoder';
import { StopRules } from '../stopping/stopRules';
import type { GreedyEvaluator } from '../speculation/greedyEvaluator';
import type { SpeculationPolicy } from '../speculation/policy';
import type { DraftProposer, NgramProposer } from '../speculation/proposers';
import type { NextEditFormatId, NextEditPrompt, NextEditRequest, NoSuggestionReason, TextReplacement } from './types';

/** A prompt format as nextEdit/formats/ defines it (the text side): builds the prompt, reads the output. */
export interface NextEditFormatLike {
  id: NextEditFormatId;
  buildPrompt(request: NextEditRequest): NextEditPrompt;
}

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
  format: NextEditFormatLike;
  prompt: NextEditPrompt;
  /** The prompt's tokens (control tokens as tokens, BOS first when the model wants one). */
  promptTokens: Token[];
  target: GreedyEvaluator;
  draft?: DraftProposer;
  ngram?: NgramProposer;
  mode: NextEditRequest['mode'];
  policy: SpeculationPolicy;
  tokenize(text: string): Token[];
  detokenize(tokens: readonly Token[]): string;
  isEndToken(token: Token): boolean;
  signal?: AbortSignal;
  /** A final edit, as soon as it is final (verified tokens after it re-synchronised with the window). */
  onEdit(edit: TextReplacement): void;
}

/** What is known of the model that serves next edits: its GGUF metadata in-process, only its name from a server. */
export type NextEditModelInfo = Pick<ModelFileInfo, 'name'> & Partial<ModelFileInfo>;

export interface NextEditPieces {
  /** The request's format on this model: the forced one, else the model's; a reason when there is none. */
  formatFor(request: NextEditRequest, model: NextEditModelInfo): NextEditFormatLike | { none: string };
  /** Decodes the prompt in-process, streaming final edits. */
  decode(input: NextEditDecodeInput): Promise<GeneratedNextEdit>;
  /**
   * For a streamed output (a server's): the edits final in the output so far, in document order
   * (each call gives all of them; the caller sends the new ones). Absent: edits come with the end.
   */
  finalEditsOf?(format: NextEditFormatLike, prompt: NextEditPrompt, request: NextEditRequest): (outputSoFar: string) => TextReplacement[];
  /** The edits in a model's whole output (a server's answer). */
  fromOutput(format: NextEditFormatLike, output: string, prompt: NextEditPrompt, request: NextEditRequest): Omit<GeneratedNextEdit, 'stats' | 'timeToFirstEditMs'>;
}

/**
 * Until the decode side's generation lands: the prompt decoded by the completion decoder (the
 * request's mode; 'copy' as plain), its whole output read at the end (no streamed edits).
 */
async function decodeWhole(input: NextEditDecodeInput): Promise<GeneratedNextEdit> {
  const stop = new StopRules({ detokenize: input.detokenize, isEndToken: input.isEndToken, maxTokens: input.prompt.maxTokens, stopStrings: input.prompt.stop });
  const mode = input.mode === 'hybrid' || input.mode === 'draft' || input.mode === 'ngram' ? input.mode : 'plain';
  const stats = await decode({ mode, target: input.target, prompt: input.promptTokens, stop, policy: input.policy, ngram: input.ngram, draft: input.draft, signal: input.signal });
  return { output: stop.finalText, ...nextEditPieces.fromOutput(input.format, stop.finalText, input.prompt, input.request), stats };
}

export const nextEditPieces: NextEditPieces = {
  formatFor: () => ({ none: 'no next-edit prompt formats are built in yet' }),
  decode: decodeWhole,
  fromOutput: () => ({ edits: [], regionText: null, noSuggestion: { reason: 'unparseable', detail: 'next-edit output parsing is not built in yet' } }),
};
