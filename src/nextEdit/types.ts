// Next-edit suggestions (NES): the contract between the text side (history, window, prompt formats,
// output parsing, edits), the decode side (the copy proposer, speculative decoding of the window),
// the worker and the backends. Plain data only: requests and results cross IPC.
import type { DecodeMode } from '../shared/decoding';
import type { DecoderStats } from '../shared/generationStats';

/** One edit the user made to one file, as a unified diff (`--- a/path`, `+++ b/path`, hunks). */
export interface EditEvent {
  path: string;
  diff: string;
  /** When its last change happened (ms since the epoch); absent in recorded cases. */
  at?: number;
}

/** Prompt layouts of the next-edit models we know (nextEdit/formats/). */
export type NextEditFormatId = 'sweep' | 'zeta';

/** A span of NextEditRequest.text, UTF-16 offsets, end exclusive. */
export interface TextSpan {
  start: number;
  end: number;
}

/** Replace text[start, end) by `text` (offsets in the request's text, before any edit). */
export interface TextReplacement extends TextSpan {
  text: string;
}

export interface NextEditRequest {
  /** The file's path as the model sees it (workspace-relative, forward slashes). */
  path: string;
  languageId?: string;
  /** The document's current text (or the part of it the caller sends; offsets are into this). */
  text: string;
  cursorOffset: number;
  /** Recent edits, oldest first: this file's and other open files'. */
  events: EditEvent[];
  /** The editable region; when absent, the format's window around the cursor. */
  region?: TextSpan;
  /** Forced prompt format; 'auto' or absent: the one the model's metadata and name say. */
  format?: NextEditFormatId | 'auto';
  /** Key of the document in the n-gram index (in-process only). */
  documentKey?: string;
  /** How the in-process backend decodes: 'plain', 'copy' (the window proposer), 'hybrid' (copy + draft + n-gram). */
  mode: DecodeMode;
  /** Bound on generated tokens; default: enough for the region twice over. */
  maxTokens?: number;
  /**
   * A prompt built already (by the bench, a test, or a host that built it for a server): decoded as
   * it is, without a format choosing or building one; `prompt.format` reads the output.
   */
  prompt?: NextEditPrompt;
}

/** A prompt built by a format, with what the decoder and the parser need to know about it. */
export interface NextEditPrompt {
  format: NextEditFormatId;
  /** The whole prompt; control tokens written as their text (tokenized with special tokens on). */
  prompt: string;
  /** The editable region in the request's text. */
  region: TextSpan;
  /**
   * What the model writes to leave the region as it is: its current text exactly as the prompt shows it
   * (markers included), then the end the model writes after it (the stop marker): what the copy
   * proposer copies.
   */
  copySource: string;
  /**
   * Where the cursor lies in copySource (characters), when it lies in it: a next edit is rarely made
   * before the cursor, so the copy up to it is verified in long steps (speculation/cursorAcceptance.ts).
   */
  copyCursor?: number;
  /** Strings that end the model's output (cut before them). */
  stop: string[];
  /** Bound on generated tokens for this prompt. */
  maxTokens: number;
}

/** Why a model output gives no suggestion (named in the log, never shown in the editor). */
export type NoSuggestionReason =
  | 'unparseable' // markers missing or garbled
  | 'lineCount' // far more or fewer lines than the region
  | 'outsideRegion' // it changes text the region does not hold
  | 'unchanged' // the model kept the region as it is
  | 'rewritesEverything' // no line of the region survives
  | 'undoesLastEdit' // it only reverts the user's last edit
  | 'noFormat' // the model has no next-edit format
  | 'cancelled'
  | 'error';

export interface NextEditResult {
  format: NextEditFormatId;
  region: TextSpan;
  /** The smallest edits that turn the region into the model's, in document order, none overlapping. */
  edits: TextReplacement[];
  /** The model's new region text when it parsed (also when it gives no suggestion). */
  regionText: string | null;
  /** Set when `edits` is empty on purpose: why. */
  noSuggestion?: { reason: NoSuggestionReason; detail: string };
  /** The model's output as decoded (cut at the format's stop), for the log when it gives no suggestion. */
  output?: string;
  /** Times it stopped between two evaluations for a completion (in-process: completions go first), when it did. */
  yieldedToCompletions?: number;
  /** ms from the request's start to the first final edit (streamed), when there was one. */
  timeToFirstEditMs?: number;
  stats: DecoderStats;
}

/** A format's reading of a model output: the region's new text, or why there is none. */
export type ParsedRegion = { regionText: string } | { reason: NoSuggestionReason; detail: string };

/** One next-edit model's prompt layout and output reading (nextEdit/formats/). */
export interface NextEditFormat {
  id: NextEditFormatId;
  buildPrompt(request: NextEditRequest): NextEditPrompt;
  /** The region's new text from a whole output (cut before a stop string, or at the token bound). */
  parseOutput(output: string, prompt: NextEditPrompt): ParsedRegion;
  /** The region text written so far by an unfinished output; null while the output is still before the region. */
  partialRegion(output: string, prompt: NextEditPrompt): string | null;
}
