// Completion requests and their answers, as they go from the editor to a backend and back. Plain
// data only: they cross IPC.
import type { DecodeMode, Token } from './decoding';
import type { DecoderStats, GenerationStats } from './generationStats';

export interface CompletionRequest {
  /** Document text before the cursor (already windowed by the caller). */
  prefix: string;
  /**
   * The document line `prefix` starts on (0-based), when it starts at a line's start: the prompt's
   * line groups and cuts are counted in document lines, so they stay put when the window moves.
   */
  prefixLine?: number;
  /** Document text after the cursor (already windowed). */
  suffix: string;
  /** Key of the document in the n-gram index (its uri), so its own tokens rank first. In-process only: a server ignores it. */
  documentKey?: string;
  languageId?: string;
  tabSize?: number;
  maxTokens: number;
  /** How the in-process backend decodes (a server decodes its own way and ignores it). */
  mode: DecodeMode;
  /** Extra stop strings (cut before them). */
  stop?: string[];
  /** Stop at the end of the block the cursor is in (indentation based). */
  stopAtBlockEnd?: boolean;
  /** Stop at the first newline (the cursor has text after it on its line). */
  singleLine?: boolean;
  maxLines?: number;
  /**
   * Once this many ms have passed since the backend took the request, the completion ends with the
   * line in progress (the first line with code is always finished): a slow machine shows a line or
   * two at once instead of the whole completion late. Absent or 0: no budget.
   */
  timeBudgetMs?: number;
  /** The user's other code to show the model first (prompt/contextBlock.ts); none when absent. */
  extraContext?: ExtraContext;
  /**
   * Asked before the user asks (CompletionEngine.prefetch): it yields to every real request. The
   * worker refuses it ('busy') while a real generation runs, in any window, and a real request
   * aborts it; a server gets it as an ordinary request (the engine does the yielding).
   */
  prefetch?: boolean;
}

/** An edit to a mirrored document, in UTF-16 offsets of the text before the edit. */
export interface DocumentEdit {
  offset: number;
  deleteCount: number;
  text: string;
}

/** A piece of one of the user's other files (prompt/extraContextRing.ts). */
export interface ContextChunk {
  /** Workspace-relative path (shown to the model as the file's name). */
  path: string;
  text: string;
}

/** Chunks of other files for the prompt (see prompt/extraContextRing.ts), with their token budget. */
export interface ExtraContext {
  files: ContextChunk[];
  /** Path of the file being completed, workspace-relative. */
  path?: string;
  /** Workspace folder name (repo-level templates name the repository). */
  repoName?: string;
  /** At most this many prompt tokens for the chunks (never more than a third of the prompt). */
  maxTokens: number;
}

export interface CompletionResult {
  text: string;
  /** The target's token ids (in-process decoding; a server may not say). */
  tokens?: Token[];
  stats: GenerationStats;
}

/**
 * Alternatives to a greedy completion, asked for only when the user cycles suggestions:
 * the target's greedy continuation after each of the next most likely tokens at the point where
 * the greedy completion was least certain (the smallest top-1 minus top-2 logit margin).
 */
export interface AlternativesResult {
  /**
   * Raw completions other than the greedy one (before post-processing), most likely first. One may
   * read the same as the greedy one once post-processed: the engine removes those.
   */
  completions: CompletionResult[];
  /** Where they branch off the greedy completion: its token index and the margin there (logits). */
  branch?: { tokenIndex: number; margin: number };
  /** Why there are fewer than asked, or none (e.g. the server does not report token probabilities): Show Stats says it. */
  limitedBy?: string;
  /** From the request to the last alternative. */
  totalMs: number;
}

/** What the in-process session returns: tokens and the full speculation record. */
export interface LocalCompletionResult extends CompletionResult {
  tokens: Token[];
  stats: DecoderStats;
}
