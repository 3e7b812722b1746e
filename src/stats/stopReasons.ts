// Why a completion ended, in Show Stats' words (the last completion, the session's count of
// completions the time budget ended).
import type { StopReason } from '../shared/decoding';

const STOP_REASON_WORDS: Readonly<Record<StopReason, string>> = {
  eos: 'the model ended it (eos)',
  maxTokens: 'draftline.maxTokens reached',
  stopSequence: 'a stop sequence',
  blockEnd: "the end of the cursor's block",
  newline: 'the end of the line (text follows the cursor)',
  maxLines: 'draftline.maxLines reached',
  timeBudget: 'time budget: draftline.timeBudgetMs spent, ended with the line in progress',
  abort: 'stopped by a keystroke or a newer request',
  contextFull: 'the context is full',
};

export function stopReasonText(reason: StopReason): string {
  return STOP_REASON_WORDS[reason] ?? reason;
}
