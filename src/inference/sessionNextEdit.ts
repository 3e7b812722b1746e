// A session's next-edit requests (issue #39): which loaded model serves one (the next-edit model's
// slot, inference/nextEditModelSlot.ts: the target when none is configured or it is the target's
// file, else the next-edit model loaded on first use), and the task's view of it
// (inference/nextEditTask.ts NextEditHost) built from that model and the session's gate and n-gram
// index. InferenceSession.nextEdit queues the requests and calls runSessionNextEdit; its own file
// stays about completions.
import type { NgramIndex } from '../ngram';
import type { NextEditRequest, NextEditResult } from '../nextEdit/types';
import type { SpeculationSettings, Token } from '../shared/types';
import { DraftModelProposer } from '../speculation/draftModelProposer';
import type { SpeculationPolicy } from '../speculation/policy';
import type { ContextGate } from './contextGate';
import { documentNgramProposer } from './documentNgrams';
import type { LlamaToken } from './llamaTypes';
import type { LlamaSequenceEvaluator } from './llamaSequenceEvaluator';
import type { NextEditModelSlot, NextEditServing } from './nextEditModelSlot';
import { type NextEditHost, type NextEditRun, noNextEdit, runNextEdit } from './nextEditTask';
import { DEFAULT_OWNER } from './promptStates';

/** What a next-edit request of the session is run with beyond the request. */
export interface SessionNextEditOptions extends Pick<NextEditRun, 'onEdit' | 'onPark' | 'onResume'> {
  owner?: string;
  speculation: SpeculationSettings;
  policy: SpeculationPolicy;
  /**
   * The next-edit model's local file (draftline.nextEdit.model, resolved by the host): '' or
   * absent, the target serves; the target's own file, the target on its own KV sequences; another
   * file, that model, loaded by the first request that names it.
   */
  model?: string;
  /** Told the file just before llama.cpp reads it, when this request loads the next-edit model (a native abort then is that file's). */
  onNativeLoad?(file: string): void;
}

/** The session's parts a next-edit request uses. */
export interface SessionNextEditParts {
  gate: ContextGate;
  slot: NextEditModelSlot;
  documents: NgramIndex;
}

/** The task's view of a loaded model (tokenizer, end tokens, sequences, proposers). */
export function nextEditHost(serving: NextEditServing, parts: SessionNextEditParts): NextEditHost {
  const { model: loaded } = serving;
  const model = loaded.model;
  return {
    model: { ...loaded.info, basename: model.fileInfo.metadata?.general?.basename ?? null },
    tokenizeWithSpecials: (text) => model.tokenize(text, true) as Token[],
    tokenize: (text) => model.tokenize(text, false) as Token[],
    detokenize: (tokens) => model.detokenize(tokens as readonly LlamaToken[], false),
    // llama.cpp's end-of-generation tokens only: the format's stop texts end the window (not the FIM template's stops).
    isEndToken: (token) => model.isEogToken(token as LlamaToken),
    bos: loaded.info.addBos && loaded.info.bos !== null ? loaded.info.bos : null,
    capacity: loaded.evaluator.capacity,
    gate: parts.gate,
    sequenceFor: (owner, prompt) => serving.sequenceFor(owner, prompt),
    holds: (owner, target) => serving.holds(owner, target as LlamaSequenceEvaluator),
    draftProposer: (draft, s) => new DraftModelProposer(draft, s.draftMinConfidence),
    // The open documents' tokens are the target's: another vocabulary's model gets the local n-grams only.
    ngramProposer: (key, s) => documentNgramProposer(serving.targetVocabulary ? parts.documents : null, key, s),
  };
}

/**
 * One next-edit request: the model that serves it (loaded first when it is the first to name a
 * next-edit file of its own; a file that cannot be loaded answers noSuggestion 'error' with why),
 * then the task on it.
 */
export async function runSessionNextEdit(parts: SessionNextEditParts, request: NextEditRequest, signal: AbortSignal | undefined, options: SessionNextEditOptions): Promise<NextEditResult> {
  const serving = await parts.slot.serving(options.model, options);
  if ('problem' in serving) return noNextEdit(request, 'error', serving.problem);
  const { owner = DEFAULT_OWNER, speculation, policy, onEdit, onPark, onResume } = options;
  return runNextEdit(nextEditHost(serving, parts), request, { owner, speculation, policy, signal, onEdit, onPark, onResume });
}
