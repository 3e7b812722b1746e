// Extra context in the prompt (src/prompt/contextBlock.ts + buildPrompt): repo-level file sections
// before the FIM structure for templates that have them, line comments at the prefix's start for
// the others; within the token budget; the file being completed left out; typing keeps it cached.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildPrompt } from '../../src/prompt/fimPrompt';
import { buildPromptContext, lineCommentFor } from '../../src/prompt/contextBlock';
import { chooseTemplate } from '../../src/prompt/templates';

// One token per character (codes), the specials at the end of a small vocabulary.
const SPECIALS = ['<|fim_prefix|>', '<|fim_suffix|>', '<|fim_middle|>', '<|repo_name|>', '<|file_sep|>'];
const vocabTokens = (withRepo: boolean) => [...Array.from({ length: 200 }, (_, i) => String.fromCharCode(i)), ...SPECIALS.slice(0, withRepo ? 5 : 3)];
const tokenize = (text: string) => [...text].map((c) => c.charCodeAt(0));
const detok = (ids: number[], tokens: string[]) => ids.map((i) => tokens[i]).join('');

const files = [
  { path: 'src/a.ts', text: 'export const A = 1;' },
  { path: 'src/cur.ts', text: 'the file being completed' },
  { path: 'src/b.ts', text: 'export const B = 2;\n' },
];

describe('extra context in the prompt', () => {
  it('repo-level templates: <|repo_name|> and <|file_sep|> sections before <|fim_prefix|>, current file named last', () => {
    const tokens = vocabTokens(true);
    const template = chooseTemplate({ tokens, fim: { prefix: 200, suffix: 201, middle: 202 } });
    assert.equal(template.repoLevel, true);
    const context = buildPromptContext(template, tokenize, { files, path: 'src/cur.ts', repoName: 'demo' }, 1000);
    const p = buildPrompt({ tokenize, bos: null, fim: { prefix: 200, suffix: 201, middle: 202 }, template }, 'let x = ', ';', 2000, { layout: 'standard', context });
    assert.equal(
      detok(p.tokens, tokens),
      '<|repo_name|>demo\n<|file_sep|>src/a.ts\nexport const A = 1;\n<|file_sep|>src/b.ts\nexport const B = 2;\n<|file_sep|>src/cur.ts\n<|fim_prefix|>let x = <|fim_suffix|>;<|fim_middle|>',
    );
  });

  it("other templates: the chunks as line comments at the start of the prefix, in the language's comment syntax", () => {
    const tokens = vocabTokens(false);
    const template = chooseTemplate({ tokens, fim: { prefix: 200, suffix: 201, middle: 202 } });
    assert.equal(template.repoLevel, false);
    const py = buildPromptContext(template, tokenize, { files: [{ path: 'util.py', text: 'def f():\n\n    return 1' }] }, 1000, 'python');
    const p = buildPrompt({ tokenize, bos: null, fim: { prefix: 200, suffix: 201, middle: 202 }, template }, 'x = ', '', 2000, { layout: 'standard', context: py });
    assert.equal(detok(p.tokens, tokens), '<|fim_prefix|># Path: util.py\n# def f():\n#\n#     return 1\nx = <|fim_suffix|><|fim_middle|>');
    assert.equal(lineCommentFor('typescript'), '//');
    assert.equal(lineCommentFor(undefined), '//');
    assert.equal(lineCommentFor('lua'), '--');
  });

  it("keeps within its token budget, newest chunks first, and takes that budget from the file's text", () => {
    const tokens = vocabTokens(true);
    const template = chooseTemplate({ tokens, fim: { prefix: 200, suffix: 201, middle: 202 } });
    const small = buildPromptContext(template, tokenize, { files, path: 'src/cur.ts', repoName: 'r' }, 50);
    // Head (<|repo_name|>r\n: 3) + current (<|file_sep|>src/cur.ts\n: 12) leave 35: only b.ts (29) fits.
    assert.equal(detok(small.beforePrompt, tokens), '<|repo_name|>r\n<|file_sep|>src/b.ts\nexport const B = 2;\n<|file_sep|>src/cur.ts\n');
    assert.ok(small.beforePrompt.length <= 50);
    assert.equal(small.files, 1);
    assert.deepEqual(buildPromptContext(template, tokenize, { files, path: 'src/cur.ts' }, 10), { beforePrompt: [], afterPrefixToken: [], files: 0 });
    assert.deepEqual(buildPromptContext(template, tokenize, undefined, 100), { beforePrompt: [], afterPrefixToken: [], files: 0 });
    // The whole prompt stays within its budget: the prefix gives way.
    const long = 'y'.repeat(300);
    const p = buildPrompt({ tokenize, bos: null, fim: { prefix: 200, suffix: 201, middle: 202 }, template }, long, '', 200, { layout: 'standard', context: small });
    assert.ok(p.tokens.length <= 200, `${p.tokens.length} tokens`);
    assert.ok(p.prefixTokens < 300);
  });

  it('cuts the newest chunk to its first lines when it does not fit whole, and adds nothing older', () => {
    const tokens = vocabTokens(false);
    const template = chooseTemplate({ tokens, fim: { prefix: 200, suffix: 201, middle: 202 } });
    const big = Array.from({ length: 64 }, (_, i) => `const v${i} = ${i};`).join('\n');
    const context = buildPromptContext(
      template,
      tokenize,
      {
        files: [
          { path: 'old.ts', text: 'old' },
          { path: 'big.ts', text: big },
        ],
      },
      120,
      'typescript',
    );
    const text = detok(context.afterPrefixToken, tokens);
    assert.ok(context.afterPrefixToken.length <= 120 && context.afterPrefixToken.length > 80, `${context.afterPrefixToken.length} tokens`);
    assert.ok(text.startsWith('// Path: big.ts\n// const v0 = 0;\n'), text);
    assert.ok(!text.includes('old'));
    assert.ok(text.endsWith(';\n'), 'whole lines only');
  });

  it('typing after the context appends to the prompt (its KV stays cached)', () => {
    const tokens = vocabTokens(true);
    const template = chooseTemplate({ tokens, fim: { prefix: 200, suffix: 201, middle: 202 } });
    const context = buildPromptContext(template, tokenize, { files, path: 'src/cur.ts', repoName: 'demo' }, 1000);
    const vocab = { tokenize, bos: null, fim: { prefix: 200, suffix: 201, middle: 202 }, template };
    const prefix = `${Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n')}\nlet x = `;
    const a = buildPrompt(vocab, prefix, '\n}', 2000, { layout: 'lineAnchored', context: context }).tokens;
    const b = buildPrompt(vocab, `${prefix}4`, '\n}', 2000, { layout: 'lineAnchored', context: context }).tokens;
    assert.deepEqual(b.slice(0, a.length), a);
    assert.equal(b.length, a.length + 1);
  });
});
