// The next-edit prompts on the real Qwen2.5-Coder tokenizer (llama.cpp's ggml-vocab-qwen2.gguf with the
// Qwen2.5 added tokens, testbed/realVocab.ts): Sweep's <|file_sep|> must be one control token each
// time it appears, its text parts tokenized as plain text; Zeta's markers are not tokens of Qwen's
// vocabulary but plain text, several tokens each (as Sweep's blog says of <|editable_region_start|>).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sweepFormat } from '../../src/nextEdit/formats/sweep';
import { ZETA_CURSOR, ZETA_REGION_END, ZETA_REGION_START, ZETA_START_OF_FILE, zetaFormat } from '../../src/nextEdit/formats/zeta';
import { vocabOnlyModel } from '../../testbed/realVocab';
import { GREET_REQUEST } from '../support/nextEditRequests';

const FILE_SEP_ID = 151_664;
/** Qwen2's first special token (<|endoftext|>); every control token's id is at or above it. */
const FIRST_SPECIAL_ID = 151_643;

describe('next-edit prompts on the real Qwen2.5-Coder tokenizer', () => {
  const qwen = vocabOnlyModel('qwen2.5-coder-1.5b');
  const withSpecials = (text: string) => qwen.model.tokenize(text, true) as number[];
  const plain = (text: string) => qwen.model.tokenize(text, false) as number[];

  it('Sweep: each <|file_sep|> is the one token 151664, and the parts between are plain text', () => {
    const { prompt } = sweepFormat.buildPrompt(GREET_REQUEST);
    const tokens = withSpecials(prompt);
    const seps = tokens.filter((t) => t === FILE_SEP_ID).length;
    assert.equal(seps, prompt.split('<|file_sep|>').length - 1);
    assert.equal(seps, 4);
    assert.ok(
      tokens.every((t) => t === FILE_SEP_ID || t < FIRST_SPECIAL_ID),
      'no other control token',
    );
    // Between the separators, the tokens are those of the text alone: the separator splits the text cleanly.
    const parts = prompt.split('<|file_sep|>').slice(1);
    assert.deepEqual(
      tokens,
      parts.flatMap((p) => [FILE_SEP_ID, ...plain(p)]),
    );
    assert.equal(qwen.model.detokenize(tokens as never, true), prompt);
  });

  it('Zeta: the markers are plain text of several tokens, and the prompt has no control token', () => {
    const { prompt } = zetaFormat.buildPrompt(GREET_REQUEST);
    const tokens = withSpecials(prompt);
    assert.ok(
      tokens.every((t) => t < FIRST_SPECIAL_ID),
      'no control token',
    );
    assert.deepEqual(tokens, plain(prompt));
    const counts = Object.fromEntries([ZETA_REGION_START, ZETA_REGION_END, ZETA_CURSOR, ZETA_START_OF_FILE].map((m) => [m, withSpecials(m).length]));
    // What the vocabulary gives (Sweep's blog: "7 tokens each" for the region markers).
    assert.deepEqual(counts, EXPECTED_MARKER_TOKENS);
  });
});

const EXPECTED_MARKER_TOKENS: Record<string, number> = {
  [ZETA_REGION_START]: 7,
  [ZETA_REGION_END]: 7,
  [ZETA_CURSOR]: 8,
  [ZETA_START_OF_FILE]: 7,
};
