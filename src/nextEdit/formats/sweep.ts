// Sweep Next-Edit (sweepai/sweep-next-edit-1.5B, -0.5B; Qwen2.5-Coder based). The layout its model card's
// run_model.py `build_prompt` gives as "Sweep Next Edit's training format", the blog post's "Our Format":
//
//   <|file_sep|>{context file path}\n{content}                  (context files)
//   <|file_sep|>{path}.diff\noriginal:\n{before}\nupdated:\n{after}   (recent changes, oldest first)
//   <|file_sep|>original/{path}\n{window before the most recent change}
//   <|file_sep|>current/{path}\n{window now}
//   <|file_sep|>updated/{path}\n                                   (the model writes the window here)
//
// The parts are joined by '\n'; the generation stops at <|file_sep|> or </s> (run_model.py: stop=[...]).
// run_model.py ends the prompt right after `updated/{path}`; Sweep's own editor clients end it with the
// newline (sweepai/vscode-nes src/local/completions.ts `buildLocalPrompt` joins with a final "", and
// sweepai/cursortab.nvim server/provider/sweep/sweep.go writes "updated/" + path + "\n"), which makes the
// output the window's lines themselves: this follows the clients. The window is 21 lines (editWindow.ts).
//
// Choices where the sources say nothing exact: the current file's surroundings are given as the first
// context file under its own path (the v2 model card puts the file's ~300 lines there); the most recent
// event on this file is the original/ -> current/ change and so is not repeated as a .diff block (the
// card's example keeps them apart); each hunk of an event is one .diff block with its context lines.
import { sweepWindow, expandLinesByTokens, wholeLines } from '../editWindow';
import { hunkSides, lastEventOn, undoEvent } from '../eventDiffs';
import { lineCount, lineOf, lineStarts, linesSpan } from '../textLines';
import type { EditEvent, NextEditFormat, NextEditPrompt, NextEditRequest, ParsedRegion, TextSpan } from '../types';
import { defaultMaxTokens, newestThatFit } from './budget';

export const SWEEP_FILE_SEP = '<|file_sep|>';
/** Guessed tokens for the current file's surroundings and for the recent changes (the 1.5B has an 8,192 context). */
export const SWEEP_FILE_CONTEXT_TOKENS = 1500;
export const SWEEP_HISTORY_TOKENS = 1000;

export const sweepFormat: NextEditFormat = {
  id: 'sweep',

  buildPrompt(request: NextEditRequest): NextEditPrompt {
    const { text, path } = request;
    const region = request.region ? wholeLines(text, request.region) : sweepWindow(text, request.cursorOffset);
    const current = text.slice(region.start, region.end);
    const lastOwn = lastEventOn(request.events, path);
    const parts: string[] = [];

    const context = expandLinesByTokens(text, region, SWEEP_FILE_CONTEXT_TOKENS);
    if (context.start < region.start || context.end > region.end) parts.push(`${SWEEP_FILE_SEP}${path}`, text.slice(context.start, context.end));

    const changes = request.events.filter((e) => e !== lastOwn).flatMap((e) => hunkSides(e).map((side) => `${SWEEP_FILE_SEP}${e.path}.diff\noriginal:\n${side.original}\nupdated:\n${side.updated}`));
    parts.push(...newestThatFit(changes, SWEEP_HISTORY_TOKENS));

    parts.push(`${SWEEP_FILE_SEP}original/${path}`, originalWindow(text, region, lastOwn) ?? current);
    parts.push(`${SWEEP_FILE_SEP}current/${path}`, current);
    parts.push(`${SWEEP_FILE_SEP}updated/${path}`, '');
    return {
      format: 'sweep',
      prompt: parts.join('\n'),
      region,
      // What the model writes for a window it leaves as it is: the window, then the newline and the
      // separator it ends with (copied whole, the window's last token and that newline tokenize together).
      copySource: `${current}\n${SWEEP_FILE_SEP}`,
      ...(request.cursorOffset >= region.start && request.cursorOffset <= region.end ? { copyCursor: request.cursorOffset - region.start } : {}),
      stop: [SWEEP_FILE_SEP, '</s>', '<|endoftext|>'],
      maxTokens: request.maxTokens ?? defaultMaxTokens(current),
    };
  },

  parseOutput(output: string): ParsedRegion {
    const cut = cutAtFileSep(output);
    if (/<\|(?:file_sep|fim_\w+|repo_name|endoftext|im_start|im_end)\|>/.test(cut)) {
      return { reason: 'unparseable', detail: 'a control token inside the updated window' };
    }
    // The window's lines, then the newline before <|file_sep|>.
    return { regionText: cut.endsWith('\n') ? cut.slice(0, -1) : cut };
  },

  partialRegion(output: string): string | null {
    return cutAtFileSep(output);
  },
};

function cutAtFileSep(output: string): string {
  const at = output.indexOf(SWEEP_FILE_SEP);
  return at === -1 ? output : output.slice(0, at);
}

/**
 * The window as it was before the newest edit on this file: that edit undone on the whole text, and the
 * same lines taken, stretched by the lines the edit added or removed. Null when there is no such edit or
 * it does not undo cleanly.
 */
function originalWindow(text: string, region: TextSpan, lastOwn: EditEvent | null): string | null {
  if (!lastOwn) return null;
  const before = undoEvent(text, lastOwn);
  if (before === null) return null;
  const starts = lineStarts(text);
  const first = lineOf(starts, region.start);
  const last = lineOf(starts, region.end) + (lineCount(before) - lineCount(text));
  const beforeStarts = lineStarts(before);
  if (first >= beforeStarts.length || last < first) return null;
  const span = linesSpan(before, beforeStarts, first, Math.min(last, beforeStarts.length - 1));
  return before.slice(span.start, span.end);
}
