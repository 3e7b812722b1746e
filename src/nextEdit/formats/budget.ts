// What the formats share: how many tokens an output may take, and which events fit a token budget.
import { guessTokens } from '../textLines';

/** Enough for the region twice over, and the few tokens of markers around it. */
export function defaultMaxTokens(regionText: string): number {
  return 2 * Math.max(1, guessTokens(regionText)) + 32;
}

/**
 * The newest rendered events that fit `tokens` guessed tokens, oldest first. Like Zed's
 * `prompt_for_events_impl`, it stops at the first event (from the newest) that does not fit, so the
 * history the model sees has no gaps.
 */
export function newestThatFit(rendered: readonly string[], tokens: number): string[] {
  let remaining = tokens;
  let from = rendered.length;
  while (from > 0) {
    const cost = guessTokens(rendered[from - 1]!);
    if (cost > remaining) break;
    remaining -= cost;
    from--;
  }
  return rendered.slice(from);
}
