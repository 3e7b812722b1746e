// Zeta (zed-industries/zeta, Qwen2.5-Coder-7B fine-tuned by Zed; the "zeta1" prompt). Zed's editor sends
// the events and the excerpt (zed-industries/zed crates/zeta/src/zeta1.rs `format_event`,
// zeta1/input_excerpt.rs `excerpt_for_cursor_position`); its server wraps them in the instruction the
// model was trained on (the zed-industries/zeta dataset's prompt, as vLLM's NEP benchmark
// vllm/benchmarks/datasets.py `zeta_prompt` and Zed's own "EXAMPLE ZETA1 PROMPT" write it):
//
//   ### Instruction:\n{instruction}\n\n### User Edits:\n\n{events}\n\n### User Excerpt:\n\n{excerpt}\n\n### Response:\n
//
// - an event: `User edited "{path}":\n```diff\n{hunks}\n```` (the path as Rust's {:?} quotes it, the
//   version the dataset was recorded with; the hunks without file headers, each line ending in '\n'),
//   events joined by "\n\n", the newest that fit 500 guessed tokens (MAX_EVENT_TOKENS);
// - the excerpt: "```{path}\n", "<|start_of_file|>\n" when the context starts the file, the context
//   above, "<|editable_region_start|>\n", the region with "<|user_cursor_is_here|>" at the cursor,
//   "\n<|editable_region_end|>", the context below (from the region's last newline on), "\n```".
//
// The model answers "```{path}\n<|editable_region_start|>\n{new region}\n<|editable_region_end|>\n```";
// generation stops at the end marker. The response line: vLLM writes "### Response:\n\n", Zed's example
// and the editor clients "### Response:\n" with the output right after it: this follows Zed.
// The markers are plain text in Qwen's vocabulary (several tokens each), not special tokens.
import { wholeLines, zetaContext, zetaEditableRegion } from '../editWindow';
import { hunksOnly } from '../eventDiffs';
import type { NextEditFormat, NextEditPrompt, NextEditRequest, ParsedRegion } from '../types';
import { defaultMaxTokens, newestThatFit } from './budget';

export const ZETA_CURSOR = '<|user_cursor_is_here|>';
export const ZETA_START_OF_FILE = '<|start_of_file|>';
export const ZETA_REGION_START = '<|editable_region_start|>';
export const ZETA_REGION_END = '<|editable_region_end|>';
export const ZETA_EVENT_TOKENS = 500;
export const ZETA_INSTRUCTION =
  'You are a code completion assistant and your task is to analyze user edits and then rewrite an excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking into account the cursor location.';

export const zetaFormat: NextEditFormat = {
  id: 'zeta',

  buildPrompt(request: NextEditRequest): NextEditPrompt {
    const { text, path } = request;
    const region = request.region ? wholeLines(text, request.region) : zetaEditableRegion(text, request.cursorOffset);
    const context = zetaContext(text, region);
    const cursor = Math.max(region.start, Math.min(region.end, request.cursorOffset));
    const beforeCursor = `${ZETA_REGION_START}\n${text.slice(region.start, cursor)}`;
    const editable = `${beforeCursor}${ZETA_CURSOR}${text.slice(cursor, region.end)}\n${ZETA_REGION_END}`;
    const excerpt = ['```', path, '\n', context.start === 0 ? `${ZETA_START_OF_FILE}\n` : '', text.slice(context.start, region.start), editable, text.slice(region.end, context.end), '\n```'].join('');
    const events = request.events.map((e) => `User edited ${JSON.stringify(e.path)}:\n\`\`\`diff\n${hunksOnly(e.diff)}\n\`\`\``);
    const prompt = `### Instruction:\n${ZETA_INSTRUCTION}\n\n### User Edits:\n\n${newestThatFit(events, ZETA_EVENT_TOKENS).join('\n\n')}\n\n### User Excerpt:\n\n${excerpt}\n\n### Response:\n`;
    const regionText = text.slice(region.start, region.end);
    return {
      format: 'zeta',
      prompt,
      region,
      copySource: editable,
      copyCursor: beforeCursor.length,
      stop: [ZETA_REGION_END, '<|endoftext|>'],
      maxTokens: request.maxTokens ?? defaultMaxTokens(regionText),
    };
  },

  parseOutput(output: string): ParsedRegion {
    // As Zed's zeta1 `parse_edits`: the cursor marker dropped, exactly one start marker, the region from
    // the line after it to the last "\n<|editable_region_end|>" (here usually cut off by the stop).
    const content = output.split(ZETA_CURSOR).join('');
    const starts = count(content, ZETA_REGION_START);
    if (starts !== 1) return { reason: 'unparseable', detail: `expected one ${ZETA_REGION_START}, found ${starts}` };
    const ends = count(content, ZETA_REGION_END);
    if (ends > 1) return { reason: 'unparseable', detail: `expected at most one ${ZETA_REGION_END}, found ${ends}` };
    const afterStart = content.slice(content.indexOf(ZETA_REGION_START));
    const newline = afterStart.indexOf('\n');
    if (newline === -1) return { reason: 'unparseable', detail: `no newline after ${ZETA_REGION_START}` };
    const body = afterStart.slice(newline + 1);
    if (ends === 1) {
      const end = body.lastIndexOf(`\n${ZETA_REGION_END}`);
      if (end === -1) return { reason: 'unparseable', detail: `${ZETA_REGION_END} not on a line of its own` };
      return { regionText: body.slice(0, end) };
    }
    return { regionText: body.endsWith('\n') ? body.slice(0, -1) : body };
  },

  partialRegion(output: string): string | null {
    const content = output.split(ZETA_CURSOR).join('');
    const at = content.indexOf(ZETA_REGION_START);
    if (at === -1) return null;
    const newline = content.indexOf('\n', at);
    if (newline === -1) return null;
    const body = content.slice(newline + 1);
    const end = body.indexOf(`\n${ZETA_REGION_END}`);
    return end === -1 ? body : body.slice(0, end + 1);
  },
};

function count(text: string, marker: string): number {
  return text.split(marker).length - 1;
}
