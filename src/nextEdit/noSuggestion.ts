// A next-edit result with no suggestion, for a request that did not get as far as decoding: made in
// the worker (inference/sessionNextEdits.ts) and in the host (backend/localBackend.ts: a next-edit model
// that could not be resolved), so it lives outside src/inference/ (test/integration/hostBoundary.test.ts).
import { type DecoderStats, emptySpeculationStats } from '../shared/generationStats';
import type { NextEditRequest, NextEditResult, NoSuggestionReason } from './types';

/** The stats of a request that decoded nothing. */
export function emptyDecoderStats(mode: NextEditRequest['mode'], totalMs = 0): DecoderStats {
  return { promptTokens: 0, reusedPromptTokens: 0, generatedTokens: 0, promptMs: 0, timeToFirstTokenMs: 0, totalMs, stopReason: 'abort', speculation: emptySpeculationStats(mode) };
}

/** A result with no suggestion, for a request that did not get as far as decoding (or was stopped). */
export function noNextEdit(request: NextEditRequest, reason: NoSuggestionReason, detail: string, extra: Partial<NextEditResult> = {}): NextEditResult {
  const at = Math.max(0, Math.min(request.cursorOffset, request.text.length));
  return {
    format: extra.format ?? (request.format && request.format !== 'auto' ? request.format : 'sweep'),
    region: { start: at, end: at },
    edits: [],
    regionText: null,
    stats: emptyDecoderStats(request.mode),
    ...extra,
    noSuggestion: { reason, detail },
  };
}
