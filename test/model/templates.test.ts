// Prompt templates per model family (src/prompt/templates.ts): each family is recognised from a GGUF
// the test writer makes with that family's special tokens, and its prompt is the exact token
// sequence below. The text a remote server would get, tokenized with special tokens on, is the same
// sequence (so the token-level and text-level prompts cannot drift apart).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Llama, LlamaModel } from '../../src/llama/llamaTypes';
import { inspectModelFile } from '../../src/gguf/modelFileCheck';
import { getRuntime } from '../../src/inference/llamaRuntime';
import { buildPrompt } from '../../src/prompt/fimPrompt';
import { chooseTemplate, renderTextPrompt, templateSpec, type TemplateFamily } from '../../src/prompt/templates';
import { ensureTestModel } from '../../testbed/models';

interface FamilyCase {
  family: TemplateFamily;
  special: string[];
  fim?: { prefix: string; suffix: string; middle: string };
  /** Expected skeleton: which special token goes where around the tokenized parts. */
  layout: (t: (text: string) => number, p: number[], s: number[]) => number[];
  stops: string[];
}

const CASES: FamilyCase[] = [
  {
    family: 'qwen2.5-coder',
    special: ['<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>'],
    fim: { prefix: '<|fim_prefix|>', suffix: '<|fim_suffix|>', middle: '<|fim_middle|>' },
    layout: (t, p, s) => [t('<|fim_prefix|>'), ...p, t('<|fim_suffix|>'), ...s, t('<|fim_middle|>')],
    stops: ['<|fim_pad|>', '<|repo_name|>', '<|file_sep|>'],
  },
  {
    family: 'starcoder2',
    special: ['<fim_prefix>', '<fim_middle>', '<fim_suffix>', '<fim_pad>', '<repo_name>', '<file_sep>'],
    fim: { prefix: '<fim_prefix>', suffix: '<fim_suffix>', middle: '<fim_middle>' },
    layout: (t, p, s) => [t('<fim_prefix>'), ...p, t('<fim_suffix>'), ...s, t('<fim_middle>')],
    stops: ['<fim_pad>', '<file_sep>'],
  },
  {
    family: 'deepseek-coder',
    special: ['<｜fim▁begin｜>', '<｜fim▁hole｜>', '<｜fim▁end｜>', '<|EOT|>'],
    fim: { prefix: '<｜fim▁begin｜>', suffix: '<｜fim▁hole｜>', middle: '<｜fim▁end｜>' },
    layout: (t, p, s) => [t('<｜fim▁begin｜>'), ...p, t('<｜fim▁hole｜>'), ...s, t('<｜fim▁end｜>')],
    stops: ['<|EOT|>'],
  },
  {
    family: 'codellama',
    special: ['▁<PRE>', '▁<SUF>', '▁<MID>', '▁<EOT>'],
    fim: { prefix: '▁<PRE>', suffix: '▁<SUF>', middle: '▁<MID>' },
    layout: (t, p, s) => [t('▁<PRE>'), ...p, t('▁<SUF>'), ...s, t('▁<MID>')],
    stops: ['▁<EOT>'],
  },
  {
    // No FIM ids in the metadata (llama.cpp does not know [PREFIX]): recognised by its texts.
    family: 'codestral',
    special: ['[PREFIX]', '[SUFFIX]', '[MIDDLE]'],
    layout: (t, p, s) => [t('[SUFFIX]'), ...s, t('[PREFIX]'), ...p],
    stops: ['[MIDDLE]'],
  },
];

const PREFIX = 'function area(r) {\n  return Math.PI';
const SUFFIX = ';\n}\n';

describe('prompt templates per model family', () => {
  let llama: Llama;
  const models: LlamaModel[] = [];

  before(async () => {
    llama = await getRuntime({ gpu: 'cpu' }, 1, () => undefined);
  });
  after(async () => {
    for (const m of models) await m.dispose();
  });

  const familyModel = async (c: FamilyCase) => {
    const file = await ensureTestModel(`template-${c.family}`, { seed: 5, dModel: 32, nLayers: 1, nHeads: 2, ffn: 64, fim: false, specialTokens: c.special, fimTokens: c.fim });
    const info = await inspectModelFile(file);
    const model = await llama.loadModel({ modelPath: file, vocabOnly: true });
    models.push(model);
    const id = (text: string) => {
      const i = info.tokens.indexOf(text);
      assert.ok(i >= 0, `${text} in the vocabulary`);
      return i;
    };
    return { info, model, id };
  };

  for (const c of CASES) {
    it(`${c.family}: recognised from its vocabulary, exact token sequence, same as its text prompt`, async () => {
      const { info, model, id } = await familyModel(c);
      const template = chooseTemplate({ tokens: info.tokens, fim: info.fim });
      assert.equal(template.family, c.family);
      const tokenize = (text: string) => model.tokenize(text, false) as number[];
      const built = buildPrompt({ tokenize, bos: null, fim: info.fim, template }, PREFIX, SUFFIX, 500, { layout: 'standard' });
      assert.deepEqual(built.tokens, c.layout(id, tokenize(PREFIX), tokenize(SUFFIX)));
      assert.equal(built.format, 'fim');
      for (const stop of c.stops) assert.ok(template.stopIds.has(id(stop)), `${stop} ends a completion`);
      // The structure tokens end it too: a model that writes one has left the middle.
      for (const t of Object.values(template.ids)) assert.ok(template.stopIds.has(t!));
      if (!template.spec.textSpacing) {
        const text = renderTextPrompt(template.spec, { prefix: PREFIX, suffix: SUFFIX });
        assert.deepEqual(model.tokenize(text, true), built.tokens, 'the text prompt tokenizes to the same sequence');
      }
    });
  }

  it('the line-anchored layout keeps the typed line after the middle token for psm families, and is not needed for suffix-first', async () => {
    for (const c of [CASES[0], CASES[4]]) {
      const { info, model, id } = await familyModel(c);
      const template = chooseTemplate({ tokens: info.tokens, fim: info.fim });
      const tokenize = (text: string) => model.tokenize(text, false) as number[];
      const prefix = `${Array.from({ length: 12 }, (_, i) => `const v${i} = ${i};`).join('\n')}\nconst total = v1 + `;
      const before = buildPrompt({ tokenize, bos: null, fim: info.fim, template }, prefix, SUFFIX, 500).tokens;
      const typed = buildPrompt({ tokenize, bos: null, fim: info.fim, template }, `${prefix}v2`, SUFFIX, 500).tokens;
      // Typing appends: the earlier prompt is a prefix of the later one except for the last token
      // or two (BPE may merge the typed text with the token before it).
      let common = 0;
      while (common < before.length && before[common] === typed[common]) common++;
      assert.ok(common >= before.length - 2, `${c.family}: ${common} of ${before.length} tokens kept`);
      if (c.family === 'codestral') assert.equal(before[0], id('[SUFFIX]'));
      else assert.ok(before.includes(id('<|fim_middle|>')) && before.indexOf(id('<|fim_middle|>')) < before.length - 1, 'typed line after the middle token');
    }
  });

  it('falls back to the metadata FIM ids (generic) and to prefix-only', async () => {
    const generic = chooseTemplate({ tokens: ['a', 'b', '<x>', '<y>', '<z>'], fim: { prefix: 2, suffix: 3, middle: 4 } });
    assert.equal(generic.family, 'generic-fim');
    assert.deepEqual(generic.ids, { prefix: 2, suffix: 3, middle: 4 });
    const none = chooseTemplate({ tokens: ['a', 'b'], fim: null });
    assert.equal(none.family, 'prefix-only');
    const p = buildPrompt({ tokenize: (t) => [...t].map((ch) => ch.charCodeAt(0)), bos: 1, fim: null, template: none }, 'ab', 'cd', 100);
    assert.deepEqual(p.tokens, [1, 97, 98]);
    assert.equal(p.format, 'prefix-only');
    // Qwen's FIM texts without its repo tokens (the embedded pairs): not the repo-level family.
    const embedded = chooseTemplate({ tokens: ['<|endoftext|>', '<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>'], fim: { prefix: 1, suffix: 3, middle: 2 } });
    assert.equal(embedded.repoLevel, false);
    assert.equal(embedded.family, 'generic-fim');
    assert.deepEqual(embedded.ids, { prefix: 1, suffix: 3, middle: 2 });
    // Metadata naming other tokens than a family's texts: the metadata wins (generic).
    const conflicting = chooseTemplate({ tokens: ['<fim_prefix>', '<fim_suffix>', '<fim_middle>', '<p>', '<s>', '<m>'], fim: { prefix: 3, suffix: 4, middle: 5 } });
    assert.equal(conflicting.family, 'generic-fim');
  });

  it('renders text prompts for servers: repo-level file sections, CodeLlama spacing, suffix first', () => {
    const files = [{ path: 'src/math.ts', text: 'export const TAU = 2 * Math.PI;' }];
    assert.equal(
      renderTextPrompt(templateSpec('qwen2.5-coder'), { prefix: 'let a = ', suffix: ';', repoName: 'demo', path: 'src/main.ts', files }),
      '<|repo_name|>demo\n<|file_sep|>src/math.ts\nexport const TAU = 2 * Math.PI;\n<|file_sep|>src/main.ts\n<|fim_prefix|>let a = <|fim_suffix|>;<|fim_middle|>',
    );
    assert.equal(renderTextPrompt(templateSpec('starcoder2'), { prefix: 'x', suffix: 'y', repoName: 'demo', path: 'a.py' }), '<repo_name>demo\n<file_sep>a.py\n<fim_prefix>x<fim_suffix>y<fim_middle>');
    assert.equal(renderTextPrompt(templateSpec('codellama'), { prefix: 'def f():', suffix: '\n  return 1' }), '<PRE> def f(): <SUF>\n  return 1 <MID>');
    assert.equal(renderTextPrompt(templateSpec('codestral'), { prefix: 'a', suffix: 'b' }), '[SUFFIX]b[PREFIX]a');
    assert.equal(renderTextPrompt(templateSpec('deepseek-coder'), { prefix: 'a', suffix: 'b', files }), 'src/math.ts\nexport const TAU = 2 * Math.PI;\n\n<｜fim▁begin｜>a<｜fim▁hole｜>b<｜fim▁end｜>');
    assert.equal(renderTextPrompt(templateSpec('prefix-only'), { prefix: 'a', suffix: 'b' }), 'a');
  });
});
