// Every model family on its real tokenizer (issue #37): llama.cpp's vocabulary-only GGUFs of real
// models (testbed/realVocab.ts; extracted from the source bundle node-llama-cpp ships, no
// network), and the code models' vocabularies built from them as the published GGUFs have them.
// Per family: the tokenizer reproduces llama.cpp's own test vectors; the family is recognised from
// the real metadata; the fill-in-the-middle prompt has each special token as one id and its text
// parts tokenized as the model was trained; the stop tokens are the model's; the text prompt a
// remote server gets tokenizes to the same ids; llama-server's answers about the vocabulary choose
// the same template; and the draft/target compatibility check accepts and refuses real variants.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { checkVocabularyCompatible, inspectModelFile, type ModelFileInfo } from '../../src/gguf/modelFileCheck';
import { getRuntime } from '../../src/inference/llamaRuntime';
import type { Llama, LlamaModel } from '../../src/llama/llamaTypes';
import { ANCHOR_LINE_GROUP, anchorOf, buildPrompt, type PromptLayout } from '../../src/prompt/fimPrompt';
import { chooseTemplate, type PromptTemplate, type TemplateFamily } from '../../src/prompt/templates';
import { ServerError } from '../../src/remote/http';
import { llamaServerTemplate } from '../../src/remote/llamaServerModel';
import { templatePrompt } from '../../src/remote/serverApi';
import { REAL_VOCABS, realVocabFile, realVocabModel, tokenizerVectors, VOCAB_VARIANTS, type VariantName } from '../../testbed/realVocab';
import { mulberry32 } from '../../testbed/ggufWriter';
import { StopRules } from '../../src/stopping/stopRules';

interface FamilyCase {
  variant: VariantName;
  family: TemplateFamily;
  /** The special tokens' ids in the published vocabulary. */
  ids: PromptTemplate['ids'];
  /** Tokens that must end a completion (the model's end-of-generation and its template's stops). */
  stops: string[];
}

const CASES: FamilyCase[] = [
  {
    variant: 'qwen2.5-coder-1.5b',
    family: 'qwen2.5-coder',
    ids: { prefix: 151_659, suffix: 151_661, middle: 151_660, repoName: 151_663, fileSep: 151_664 },
    stops: ['<|endoftext|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>', '<|im_end|>'],
  },
  {
    variant: 'qwen2.5-coder-7b',
    family: 'qwen2.5-coder',
    ids: { prefix: 151_659, suffix: 151_661, middle: 151_660, repoName: 151_663, fileSep: 151_664 },
    stops: ['<|endoftext|>', '<|fim_pad|>', '<|repo_name|>', '<|file_sep|>', '<|im_end|>'],
  },
  { variant: 'codellama', family: 'codellama', ids: { prefix: 32_007, suffix: 32_008, middle: 32_009 }, stops: ['▁<EOT>', '</s>'] },
  { variant: 'deepseek-coder', family: 'deepseek-coder', ids: { prefix: 32_016, suffix: 32_015, middle: 32_017 }, stops: ['<|EOT|>', '<｜end▁of▁sentence｜>'] },
  { variant: 'starcoder2', family: 'starcoder2', ids: { prefix: 1, suffix: 3, middle: 2, repoName: 5, fileSep: 6 }, stops: ['<|endoftext|>', '<file_sep>', '<fim_pad>'] },
  // Refact's model card writes <fim_prefix>…<fim_suffix>…<fim_middle>: the generic template in that order.
  { variant: 'refact', family: 'generic-fim', ids: { prefix: 1, suffix: 3, middle: 2 }, stops: ['<|endoftext|>', '<fim_pad>'] },
  { variant: 'qwen2', family: 'prefix-only', ids: {}, stops: ['<|endoftext|>', '<|im_end|>'] },
  { variant: 'llama-spm', family: 'prefix-only', ids: {}, stops: ['</s>'] },
  { variant: 'llama-bpe', family: 'prefix-only', ids: {}, stops: ['<|end_of_text|>', '<|eot_id|>'] },
  { variant: 'phi-3', family: 'prefix-only', ids: {}, stops: ['<|endoftext|>', '<|end|>'] },
  { variant: 'gpt-2', family: 'prefix-only', ids: {}, stops: ['<|endoftext|>'] },
];

/**
 * Stop tokens a llama-server stream neither ends at nor shows: the FIM structure tokens (a model that
 * writes one has left the middle; rare), and StarCoder2's <file_sep> and <repo_name>, which llama.cpp
 * does not count as end-of-generation (it knows Qwen's <|file_sep|> and <|repo_name|>). A server's
 * completion goes on past them where the local one ends; /completion takes no stop token ids.
 */
const fimTokens = (pre: string, suf: string, mid: string) => [pre, suf, mid];
const HIDDEN_ON_SERVER: Partial<Record<VariantName, string[]>> = {
  'qwen2.5-coder-1.5b': fimTokens('<|fim_prefix|>', '<|fim_suffix|>', '<|fim_middle|>'),
  'qwen2.5-coder-7b': fimTokens('<|fim_prefix|>', '<|fim_suffix|>', '<|fim_middle|>'),
  codellama: fimTokens('▁<PRE>', '▁<SUF>', '▁<MID>'),
  'deepseek-coder': fimTokens('<｜fim▁begin｜>', '<｜fim▁hole｜>', '<｜fim▁end｜>'),
  starcoder2: [...fimTokens('<fim_prefix>', '<fim_suffix>', '<fim_middle>'), '<file_sep>', '<repo_name>'],
  refact: fimTokens('<fim_prefix>', '<fim_suffix>', '<fim_middle>'),
};

/** Text around the cursor with what tokenizers differ on: indentation, leading spaces, a newline run, non-ASCII. */
const PREFIX = 'import math\n\n\ndef area(r):\n    """Área of a circle."""\n    return math.pi * r';
const SUFFIX = ' ** 2\n\n\nprint(area(2))  # → 12.57\n';
const LAYOUTS: PromptLayout[] = ['standard', 'lineAnchored'];

interface Loaded {
  file: string;
  info: ModelFileInfo;
  model: LlamaModel;
  template: PromptTemplate;
  id(text: string): number;
}

describe('real tokenizers per model family', () => {
  let llama: Llama;
  const loaded = new Map<VariantName, Promise<Loaded>>();
  const models: LlamaModel[] = [];

  before(async () => {
    llama = await getRuntime({ gpu: 'cpu' }, 1, () => undefined);
  });
  after(async () => {
    for (const m of models) await m.dispose();
  });

  const load = (variant: VariantName): Promise<Loaded> => {
    let p = loaded.get(variant);
    if (!p) {
      p = (async () => {
        const file = await realVocabModel(variant);
        const info = await inspectModelFile(file);
        const model = await llama.loadModel({ modelPath: file, vocabOnly: true });
        models.push(model);
        const template = chooseTemplate({ tokens: info.tokens, fim: info.fim });
        const id = (text: string) => {
          const i = info.tokens.indexOf(text);
          assert.ok(i >= 0, `${variant}: ${text} is in the vocabulary`);
          return i;
        };
        return { file, info, model, template, id };
      })();
      loaded.set(variant, p);
    }
    return p;
  };

  it("reproduces llama.cpp's tokenizer test vectors on each vocabulary file and on the models that carry its metadata", async () => {
    const carriers: Partial<Record<(typeof REAL_VOCABS)[number], VariantName>> = {
      qwen2: 'qwen2',
      'llama-spm': 'llama-spm',
      'deepseek-coder': 'deepseek-coder',
      starcoder: 'starcoder2',
      refact: 'refact',
      'llama-bpe': 'llama-bpe',
      'phi-3': 'phi-3',
      'gpt-2': 'gpt-2',
    };
    for (const name of REAL_VOCABS) {
      const vectors = await tokenizerVectors(name);
      assert.ok(vectors.length > 20, `${name}: ${vectors.length} test vectors`);
      const original = await llama.loadModel({ modelPath: await realVocabFile(name), vocabOnly: true });
      models.push(original);
      const carrier = (await load(carriers[name]!)).model;
      for (const { text, ids } of vectors) {
        // test-tokenizer-0: add_special false, parse_special false, as the prompt's text parts are tokenized.
        assert.deepEqual(original.tokenize(text, false), ids, `${name} file: ${JSON.stringify(text)}`);
        assert.deepEqual(carrier.tokenize(text, false), ids, `${name} on a model body: ${JSON.stringify(text)}`);
      }
    }
  });

  for (const c of CASES) {
    describe(`${c.variant}`, () => {
      it(`is recognised as ${c.family} from its real metadata, with the published ids`, async () => {
        const { template } = await load(c.variant);
        assert.equal(template.family, c.family);
        assert.deepEqual(template.ids, c.ids);
      });

      it("ends a completion at the model's stop tokens", async () => {
        const { model, template, id } = await load(c.variant);
        for (const text of c.stops) {
          const t = id(text);
          assert.ok(model.isEogToken(t as never) || template.stopIds.has(t), `${text} (${t}) ends a completion`);
        }
      });

      it('the stop rules read the text token by token as detokenizing the whole output does (text in context)', async () => {
        const { model, info } = await load(c.variant);
        const detokenize = (tokens: readonly number[]) => model.detokenize(tokens as never, false);
        const vectors = await tokenizerVectors(VOCAB_VARIANTS[c.variant].base);
        // llama.cpp's own vectors (spaces, accents, CJK, emoji, byte fallbacks), then random ids: bytes that split characters.
        const written = model.tokenize(vectors.map((v) => v.text).join('\n'), false) as number[];
        const random = mulberry32(c.variant.length);
        const noise = Array.from({ length: 400 }, () => Math.floor(random() * info.tokens.length));
        for (const tokens of [written, noise]) {
          const stop = new StopRules({ detokenize, isEndToken: () => false, maxTokens: tokens.length + 1 });
          for (let i = 0; i < tokens.length; i++) {
            stop.push(tokens[i]!);
            if (stop.finalText !== detokenize(tokens.slice(0, i + 1))) assert.equal(stop.finalText, detokenize(tokens.slice(0, i + 1)), `${c.variant}: after token ${i} of ${tokens.length}`);
          }
        }
      });

      if (c.family === 'prefix-only') return;

      for (const layout of LAYOUTS) {
        it(`${layout} prompt: each special token one id, the text parts tokenized as the model was trained`, async () => {
          const { info, model, template } = await load(c.variant);
          const bos = info.addBos && info.bos !== null ? info.bos : null;
          const tokenize = (text: string) => model.tokenize(text, false) as number[];
          const built = buildPrompt({ tokenize, bos, fim: info.fim, template }, PREFIX, SUFFIX, 2000, { layout });
          const specials = [template.ids.prefix!, template.ids.suffix!, template.ids.middle!];
          for (const s of specials) assert.equal(built.tokens.filter((t) => t === s).length, 1, `${s} once`);
          const at = (s: number) => built.tokens.indexOf(s);
          const prefixPart = built.tokens.slice(at(template.ids.prefix!) + 1, at(template.ids.suffix!));
          const suffixPart = built.tokens.slice(at(template.ids.suffix!) + 1, at(template.ids.middle!));
          const middlePart = built.tokens.slice(at(template.ids.middle!) + 1);
          assert.deepEqual(built.tokens.slice(0, at(template.ids.prefix!)), bos === null ? [] : [bos]);
          const split = layout === 'standard' ? PREFIX.length : anchorOf(PREFIX, ANCHOR_LINE_GROUP);
          const expected = trainedParts(c.variant, model, PREFIX.slice(0, split), SUFFIX, PREFIX.slice(split));
          assert.deepEqual(prefixPart, expected.prefix, 'prefix part');
          assert.deepEqual(suffixPart, expected.suffix, 'suffix part');
          assert.deepEqual(middlePart, expected.middle, 'middle part');
        });
      }

      it("the text prompt a remote server gets tokenizes to the local prompt's ids", async () => {
        const { info, model, template } = await load(c.variant);
        const bos = info.addBos && info.bos !== null ? info.bos : null;
        const tokenize = (text: string) => model.tokenize(text, false) as number[];
        // A one-line prefix: the line-anchored layout leaves nothing before the middle token.
        for (const prefix of [PREFIX, 'total = area(']) {
          const local = buildPrompt({ tokenize, bos, fim: info.fim, template }, prefix, SUFFIX, 2000, { layout: 'lineAnchored' });
          const { prompt } = templatePrompt({ prefix, suffix: SUFFIX, maxTokens: 16, mode: 'plain' }, remoteSpec(template, info));
          // As llama-server's /completion tokenizes a prompt: special token texts parsed, BOS added when the model wants it.
          const remote = [...(bos === null ? [] : [bos]), ...(model.tokenize(prompt, true) as number[])];
          assert.deepEqual(remote, local.tokens, JSON.stringify(prompt));
        }
      });

      it("a server's text stream ends where the local completion does: each stop token ends llama.cpp's generation or is cut as text", async () => {
        const { model, template, info } = await load(c.variant);
        const written = template.spec.writtenStops ?? [];
        const hidden: string[] = [];
        for (const t of template.stopIds) {
          if (model.isEogToken(t as never)) continue;
          // As llama-server streams a token (special tokens not rendered), after an ordinary one.
          const text = model.detokenize([t] as never, false, [model.tokenize('x', false)[0]!]);
          if (text === '') hidden.push(info.tokens[t]!);
          else
            assert.ok(
              written.some((w) => text.includes(w)),
              `${info.tokens[t]} is written ${JSON.stringify(text)}: a server's completion must end there`,
            );
        }
        // Control tokens llama.cpp does not end at: a server writes nothing for them and goes on (no
        // stop string can see them); the local path ends there. Listed so that a change shows.
        assert.deepEqual(hidden.sort(), [...(HIDDEN_ON_SERVER[c.variant] ?? [])].sort());
      });

      it("llama-server's answers about this vocabulary choose the same template", async () => {
        const { info, model, template } = await load(c.variant);
        const choice = await llamaServerTemplate(fakeLlamaServer(model, info), (route) => route);
        assert.ok(choice, 'a template was chosen');
        assert.equal(choice.spec.family, template.family);
      });
    });
  }

  it('accepts a padded vocabulary as the draft of an unpadded one (and the reverse), and CodeLlama with a Llama 2 draft', async () => {
    const info = async (v: VariantName) => (await load(v)).info;
    assert.deepEqual(checkVocabularyCompatible(await info('qwen2.5-coder-7b'), await info('qwen2.5-coder-1.5b')), { compatible: true });
    assert.deepEqual(checkVocabularyCompatible(await info('qwen2.5-coder-1.5b'), await info('qwen2.5-coder-7b')), { compatible: true });
    assert.deepEqual(checkVocabularyCompatible(await info('codellama'), await info('llama-spm')), { compatible: true });
  });

  it('refuses drafts of another family, saying why', async () => {
    const info = async (v: VariantName) => (await load(v)).info;
    const refused = async (target: VariantName, draft: VariantName, reason: RegExp) => {
      const result = checkVocabularyCompatible(await info(target), await info(draft));
      assert.equal(result.compatible, false, `${draft} for ${target}`);
      assert.match((result as { reason: string }).reason, reason);
    };
    await refused('qwen2.5-coder-7b', 'deepseek-coder', /add_bos differs: target false, draft true/);
    await refused('qwen2.5-coder-7b', 'llama-bpe', /vocabulary sizes differ by 23808 \(target 152064, draft 128256; at most 128 allowed\)/);
    await refused('codellama', 'qwen2.5-coder-1.5b', /tokenizer types differ: target uses "llama", draft uses "gpt2"/);
    // Same size class, same tokenizer type: the texts differ (StarCoder2's <repo_name> is Refact's <filename>).
    await refused('starcoder2', 'refact', /token 5 differs: "<repo_name>" vs "<filename>"/);
    // Qwen2.5-Coder's added tokens against the Qwen2 base vocabulary's padding rows.
    await refused('qwen2.5-coder-1.5b', 'qwen2', /add_bos differs|token 151646 differs/);
  });
});

/**
 * The text parts as the family's reference implementation tokenizes them. CodeLlama (Meta's
 * codellama/llama/generation.py infilling_prompt_tokens): the prefix with SentencePiece's word-start
 * space (tokenizer.encode), the suffix and the middle without it (encode_infilling:
 * sp.encode("☺" + s)[2:]). Byte-level BPE adds no such space: each part as llama.cpp tokenizes it alone.
 */
function trainedParts(variant: VariantName, model: LlamaModel, prefix: string, suffix: string, middle: string) {
  const plain = (text: string) => (text === '' ? [] : (model.tokenize(text, false) as number[]));
  if (variant !== 'codellama') return { prefix: plain(prefix), suffix: plain(suffix), middle: plain(middle) };
  assert.equal(plain('☺').length, 2, 'SentencePiece writes "☺" as the word-start space and one piece');
  const infilling = (text: string) => (text === '' ? [] : plain(`☺${text}`).slice(2));
  return { prefix: plain(prefix), suffix: infilling(suffix), middle: infilling(middle) };
}

/** The spec a remote server's text prompt uses for this vocabulary (generic: the model's own FIM token texts). */
function remoteSpec(template: PromptTemplate, info: ModelFileInfo) {
  if (template.family !== 'generic-fim') return template.spec;
  const text = (id: number | undefined) => info.tokens[id!]!;
  return { ...template.spec, prefix: text(template.ids.prefix), suffix: text(template.ids.suffix), middle: text(template.ids.middle) };
}

/**
 * What llama-server answers about a model's vocabulary (tools/server): /infill's prompt for an empty
 * prefix and suffix ([BOS] <pre> <suf> <mid>, special tokens written as text), and /tokenize with
 * parse_special and with_pieces; 501 when the model has no FIM tokens.
 */
function fakeLlamaServer(model: LlamaModel, info: ModelFileInfo) {
  return {
    get: async () => ({}),
    post: async (route: string | URL, body: unknown) => {
      if (route === '/infill') {
        if (!info.fim) throw new ServerError('Infill is not supported by this model', 'badRequest', 501);
        const ids = [...(info.addBos && info.bos !== null ? [info.bos] : []), info.fim.prefix, info.fim.suffix, info.fim.middle];
        // Token by token, special tokens as text (tools/server: tokens_to_str, common_token_to_piece).
        return { prompt: ids.map((id, i) => model.detokenize([id] as never, true, ids.slice(0, i) as never)).join('') };
      }
      if (route === '/tokenize') {
        const { content } = body as { content: string };
        const ids = model.tokenize(content, true) as number[];
        return { tokens: ids.map((id) => ({ id, piece: model.detokenize([id] as never, true) })) };
      }
      throw new Error(`unexpected route ${String(route)}`);
    },
  };
}
