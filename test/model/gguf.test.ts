import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { GgufValueType, ModelFileError, readGgufMetadata } from '../../src/gguf/ggufReader';
import type { ModelFileErrorCode } from '../../src/gguf/ggufReader';
import { assertFimSupported, checkVocabularyCompatible, inspectModelFile } from '../../src/gguf/modelFileCheck';
import type { ModelFileInfo } from '../../src/gguf/modelFileCheck';
import { f16ToF32, f32ToF16, loadEmbeddedVocab, mulberry32, truncateFile, writeNotGguf, writeRandomLlamaModel } from '../../testbed/ggufWriter';
import type { RandomLlamaOptions } from '../../testbed/ggufWriter';
import { ensureTestModel } from '../../testbed/models';

const ROOT = path.resolve(__dirname, '../..');
const TARGET = path.join(ROOT, 'models/tiny-code-target.gguf');
const DRAFT = path.join(ROOT, 'models/tiny-code-draft.gguf');
const SCRATCH = path.join(ROOT, 'test-output/gguf-unit');

const SMALL: RandomLlamaOptions = { seed: 1, dModel: 64, nLayers: 2, nHeads: 4, ffn: 128, contextLength: 256 };
const GQA: RandomLlamaOptions = { seed: 2, dModel: 128, nLayers: 2, nHeads: 8, nKvHeads: 2, ffn: 256, contextLength: 256 };

/** Assert that fn rejects with a ModelFileError of this code whose message matches. */
async function rejectsWith(fn: () => Promise<unknown>, code: ModelFileErrorCode, message: RegExp | string) {
  await assert.rejects(fn, (e: unknown) => {
    assert.ok(e instanceof ModelFileError, `expected ModelFileError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (typeof message === 'string') assert.ok(e.message.includes(message), `message: ${e.message}`);
    else assert.match(e.message, message);
    return true;
  });
}

before(async () => {
  await mkdir(SCRATCH, { recursive: true });
});
after(async () => {
  await rm(SCRATCH, { recursive: true, force: true });
});

describe('float16 conversion', () => {
  test('known values and rounding', () => {
    assert.equal(f32ToF16(0), 0x0000);
    assert.equal(f32ToF16(-0), 0x8000);
    assert.equal(f32ToF16(1), 0x3c00);
    assert.equal(f32ToF16(-2), 0xc000);
    assert.equal(f32ToF16(0.1), 0x2e66);
    assert.equal(f32ToF16(65504), 0x7bff);
    assert.equal(f32ToF16(65520), 0x7c00); // rounds to +inf
    assert.equal(f32ToF16(Infinity), 0x7c00);
    assert.equal(f32ToF16(NaN) & 0x7e00, 0x7e00);
    assert.equal(f32ToF16(2 ** -24), 0x0001); // smallest subnormal
    assert.equal(f32ToF16(2 ** -26), 0x0000);
    assert.equal(f32ToF16(1 + 2 ** -11), 0x3c00); // tie -> even
    assert.equal(f32ToF16(1 + 3 * 2 ** -11), 0x3c02); // tie -> even (up)
    for (const x of [0.5, -3.25, 1000, 6.1e-5, 3e-7, -0.0078125]) {
      const back = f16ToF32(f32ToF16(x));
      assert.ok(Math.abs(back - x) <= Math.abs(x) * 2 ** -11 + 2 ** -25, `${x} -> ${back}`);
    }
  });
});

describe('reader on the embedded models', () => {
  test('target header, metadata and tensor layout', async () => {
    const meta = await readGgufMetadata(TARGET);
    assert.equal(meta.version, 3);
    assert.equal(meta.alignment, 32);
    assert.equal(meta.tensorCount, 38);
    assert.equal(meta.tensors.length, 38);
    assert.equal(meta.kvCount, meta.kv.size);
    assert.equal(meta.kv.get('general.architecture')?.value, 'llama');
    assert.equal(meta.kv.get('llama.context_length')?.type, GgufValueType.UINT32);
    assert.equal(meta.kv.get('llama.rope.freq_base')?.type, GgufValueType.FLOAT32);
    const tokens = meta.kv.get('tokenizer.ggml.tokens')!;
    assert.equal(tokens.type, GgufValueType.ARRAY);
    assert.equal(tokens.elementType, GgufValueType.STRING);
    assert.equal((tokens.value as string[]).length, 4096);
    assert.equal(meta.kv.get('tokenizer.ggml.token_type')?.elementType, GgufValueType.INT32);
    assert.equal(meta.dataOffset % 32, 0);
    const embd = meta.tensors[0]!;
    assert.deepEqual([embd.name, embd.dims, embd.typeName, embd.offset], ['token_embd.weight', [192, 4096], 'F16', 0]);
    assert.equal(embd.byteSize, 192 * 4096 * 2);
    const last = meta.tensors.at(-1)!;
    assert.equal(last.name, 'output_norm.weight');
    assert.equal(meta.dataOffset + last.offset + last.byteSize!, meta.fileSize); // data ends at EOF
  });

  test('inspectModelFile values match models/README.md', async () => {
    const t = await inspectModelFile(TARGET);
    assert.equal(t.architecture, 'llama');
    assert.equal(t.name, 'tiny-code-target');
    assert.equal(t.vocabSize, 4096);
    assert.equal(t.contextLength, 256);
    assert.deepEqual([t.embeddingLength, t.blockCount, t.headCount, t.headCountKv, t.feedForwardLength], [192, 4, 4, 4, 512]);
    assert.deepEqual(t.fim, { prefix: 4093, suffix: 4095, middle: 4094 });
    assert.equal(t.bos, 4092);
    assert.equal(t.eos, 4092);
    assert.equal(t.addBos, true);
    assert.equal(t.addEos, false);
    assert.equal(t.tokenizerModel, 'gpt2');
    assert.equal(t.tokenizerPre, 'qwen2');
    assert.equal(t.tokens[4092], '<|endoftext|>');
    assert.equal(t.tokens[4093], '<|fim_prefix|>');
    assert.equal(t.tokenTypes?.[4093], 3);
    assert.equal(t.fileType, 1);
    assert.deepEqual(t.warnings, []);

    const d = await inspectModelFile(DRAFT);
    assert.deepEqual([d.embeddingLength, d.blockCount, d.headCount, d.feedForwardLength, d.vocabSize], [96, 2, 4, 256, 4096]);
    assert.deepEqual(d.fim, { prefix: 4093, suffix: 4095, middle: 4094 });
    assert.deepEqual(assertFimSupported(d), d.fim);
  });

  test('draft and target vocabularies are compatible', async () => {
    const [t, d] = await Promise.all([inspectModelFile(TARGET), inspectModelFile(DRAFT)]);
    assert.deepEqual(checkVocabularyCompatible(t, d), { compatible: true });
    assert.deepEqual(checkVocabularyCompatible(d, t), { compatible: true });
  });
});

describe('random model writer', () => {
  test('metadata and layout follow the options', async () => {
    const p = await ensureTestModel('small', SMALL);
    const info = await inspectModelFile(p);
    assert.deepEqual([info.embeddingLength, info.blockCount, info.headCount, info.headCountKv, info.feedForwardLength, info.contextLength], [64, 2, 4, 4, 128, 256]);
    const target = await inspectModelFile(TARGET);
    assert.deepEqual(info.tokens, target.tokens);
    assert.deepEqual(info.fim, target.fim);
    assert.deepEqual(checkVocabularyCompatible(target, info), { compatible: true });

    const meta = await readGgufMetadata(p);
    const byName = new Map(meta.tensors.map((t) => [t.name, t]));
    assert.equal(meta.tensors.length, 1 + 2 * 9 + 2);
    assert.equal(byName.get('token_embd.weight')?.typeName, 'F16');
    assert.deepEqual(byName.get('output.weight')?.dims, [64, 4096]);
    assert.equal(byName.get('blk.1.ffn_norm.weight')?.typeName, 'F32');
    assert.deepEqual(byName.get('blk.0.ffn_down.weight')?.dims, [128, 64]);
    assert.equal(meta.kv.get('tokenizer.ggml.merges')?.elementType, GgufValueType.STRING);

    const gqa = await readGgufMetadata(await ensureTestModel('gqa', GQA));
    const g = new Map(gqa.tensors.map((t) => [t.name, t]));
    assert.deepEqual(g.get('blk.0.attn_q.weight')?.dims, [128, 128]);
    assert.deepEqual(g.get('blk.0.attn_k.weight')?.dims, [128, 32]);
    assert.deepEqual(g.get('blk.0.attn_v.weight')?.dims, [128, 32]);

    const tied = await readGgufMetadata(await ensureTestModel('tied-f32', { ...SMALL, tiedOutput: true, f16: false }));
    assert.equal(
      tied.tensors.some((t) => t.name === 'output.weight'),
      false,
    );
    assert.ok(tied.tensors.every((t) => t.typeName === 'F32'));
  });

  test('deterministic, and cached by ensureTestModel', async () => {
    const cached = await ensureTestModel('small', SMALL);
    const mtime = (await stat(cached)).mtimeMs;
    assert.equal(await ensureTestModel('small', { ...SMALL }), cached);
    assert.equal((await stat(cached)).mtimeMs, mtime);
    const again = path.join(SCRATCH, 'again.gguf');
    await writeRandomLlamaModel(again, SMALL);
    const sha = async (f: string) =>
      createHash('sha256')
        .update(await readFile(f))
        .digest('hex');
    assert.equal(await sha(again), await sha(cached));
    const other = path.join(SCRATCH, 'other-seed.gguf');
    await writeRandomLlamaModel(other, { ...SMALL, seed: 99 });
    assert.notEqual(await sha(other), await sha(cached));
    assert.notEqual(await ensureTestModel('small', { ...SMALL, seed: 99 }), cached);
  });
});

describe('random models in node-llama-cpp', () => {
  const loadNlc = () => import('node-llama-cpp');
  let nlc: Awaited<ReturnType<typeof loadNlc>>;
  let llama: Awaited<ReturnType<typeof nlc.getLlama>>;

  before(async () => {
    nlc = await loadNlc();
    llama = await nlc.getLlama({ gpu: false, build: 'never', maxThreads: 1, logLevel: nlc.LlamaLogLevel.error });
  });
  after(async () => {
    await llama?.dispose();
  });

  async function greedy(modelPath: string, prompts: string[], n = 32) {
    const model = await llama.loadModel({ modelPath });
    try {
      const ctx = await model.createContext({ contextSize: 256, threads: 1 });
      const seq = ctx.getSequence();
      const outputs: number[][] = [];
      for (const prompt of prompts) {
        const out: number[] = [];
        for await (const t of seq.evaluate(model.tokenize(prompt), { temperature: 0 })) {
          out.push(t);
          if (out.length >= n) break;
        }
        await seq.clearHistory();
        outputs.push(out);
      }
      const infill = model.tokens.infill;
      return { outputs, infill: { prefix: infill.prefix, suffix: infill.suffix, middle: infill.middle } };
    } finally {
      await model.dispose();
    }
  }

  function assertNotDegenerate(out: number[]) {
    assert.ok(out.length >= 16, `only ${out.length} tokens`);
    assert.ok(new Set(out).size >= out.length / 2, `few distinct tokens: ${out.join(',')}`);
    let run = 1;
    for (let i = 1; i < out.length; i++) {
      run = out[i] === out[i - 1] ? run + 1 : 1;
      assert.ok(run < 5, `token ${out[i]} repeated ${run} times: ${out.join(',')}`);
    }
  }

  const PROMPTS = ['function add(a, b) {\n  return', 'import os\nimport sys\n\ndef main():'];

  test('small model loads, generates varied greedy output, reports infill tokens', async () => {
    const { outputs, infill } = await greedy(await ensureTestModel('small', SMALL), PROMPTS);
    outputs.forEach(assertNotDegenerate);
    assert.notDeepEqual(outputs[0], outputs[1]);
    assert.deepEqual(infill, { prefix: 4093, suffix: 4095, middle: 4094 });
  });

  test('GQA model (8 heads, 2 kv heads) loads and generates', async () => {
    const { outputs, infill } = await greedy(await ensureTestModel('gqa', GQA), PROMPTS);
    outputs.forEach(assertNotDegenerate);
    assert.equal(infill.prefix, 4093);
  });

  test('tied-output F32 model loads and generates', async () => {
    const { outputs } = await greedy(await ensureTestModel('tied-f32', { ...SMALL, tiedOutput: true, f16: false }), PROMPTS);
    outputs.forEach(assertNotDegenerate);
  });

  test('model written with fim:false has no infill tokens in llama.cpp either', async () => {
    const p = await ensureTestModel('nofim', { ...SMALL, fim: false });
    const info = await inspectModelFile(p);
    assert.equal(info.fim, null);
    const { infill } = await greedy(p, [], 0);
    assert.deepEqual(infill, { prefix: null, suffix: null, middle: null });
  });
});

describe('vocabulary compatibility', () => {
  let target: ModelFileInfo;
  before(async () => {
    target = await inspectModelFile(TARGET);
  });

  test('a changed token text is reported with its id and both texts', async () => {
    const p = await ensureTestModel('mutated', { ...SMALL, vocabMutation: { index: 812, text: 'qqzzy' } });
    const info = await inspectModelFile(p);
    const res = checkVocabularyCompatible(target, info);
    assert.equal(res.compatible, false);
    assert.equal(!res.compatible && res.reason, `token 812 differs: ${JSON.stringify(target.tokens[812])} vs "qqzzy"`);
  });

  test('changes below id 5 are ignored, as in llama.cpp', async () => {
    const p = await ensureTestModel('mutated-low', { ...SMALL, vocabMutation: { index: 3, text: 'qqzzy' } });
    assert.deepEqual(checkVocabularyCompatible(target, await inspectModelFile(p)), { compatible: true });
  });

  test('vocabulary sizes within 128 are compatible, beyond are not', async () => {
    const extra = (n: number) => Array.from({ length: n }, (_, i) => `<|extra_${i}|>`);
    const near = await inspectModelFile(await ensureTestModel('extra100', { ...SMALL, extraTokens: extra(100) }));
    assert.equal(near.vocabSize, 4196);
    assert.deepEqual(checkVocabularyCompatible(target, near), { compatible: true });
    const far = await inspectModelFile(await ensureTestModel('extra200', { ...SMALL, extraTokens: extra(200) }));
    const res = checkVocabularyCompatible(target, far);
    assert.equal(res.compatible, false);
    assert.match(!res.compatible ? res.reason : '', /vocabulary sizes differ by 200 \(target 4096, draft 4296/);
  });

  test('bos and add_bos mismatches are reported', () => {
    const r1 = checkVocabularyCompatible(target, { ...target, bos: 1 });
    assert.equal(!r1.compatible && r1.reason, 'bos token differs: target 4092, draft 1');
    const r2 = checkVocabularyCompatible(target, { ...target, addBos: false });
    assert.match(!r2.compatible ? r2.reason : '', /^add_bos differs/);
    const r3 = checkVocabularyCompatible(target, { ...target, tokenizerModel: 'llama' });
    assert.match(!r3.compatible ? r3.reason : '', /^tokenizer types differ/);
    // eos is only compared when it is added (llama.cpp's rule)
    assert.deepEqual(checkVocabularyCompatible(target, { ...target, eos: 7 }), { compatible: true });
  });
});

describe('broken model files', () => {
  const scratch = (name: string) => path.join(SCRATCH, name);

  test('missing file', async () => {
    const p = scratch('does-not-exist.gguf');
    await rejectsWith(() => inspectModelFile(p), 'not_found', `Model file not found: ${p}`);
  });

  test('directory', async () => {
    await rejectsWith(() => inspectModelFile(SCRATCH), 'not_a_file', `${SCRATCH} is a directory, not a model file`);
  });

  test('not GGUF', async () => {
    const p = scratch('tiny.gguf');
    await writeNotGguf(p);
    await rejectsWith(() => inspectModelFile(p), 'not_gguf', 'tiny.gguf is not a GGUF model file (starts with "PK\\x03\\x04", expected "GGUF")');
    await writeNotGguf(p, 'version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n');
    await rejectsWith(() => inspectModelFile(p), 'not_gguf', 'Git LFS pointer');
    await writeFile(p, '');
    await rejectsWith(() => inspectModelFile(p), 'not_gguf', 'tiny.gguf is not a GGUF model file (the file is empty)');
    await writeFile(p, 'GG');
    await rejectsWith(() => inspectModelFile(p), 'not_gguf', 'only 2 bytes long');
  });

  test('unsupported GGUF version', async () => {
    const buf = Buffer.from(await readFile(DRAFT));
    buf.writeUInt32LE(1, 4);
    const p = scratch('v1.gguf');
    await writeFile(p, buf);
    await rejectsWith(() => inspectModelFile(p), 'unsupported_version', /v1\.gguf uses an unsupported GGUF version: GGUF version 1/);
    buf.writeUInt32LE(0x03000000, 4);
    await writeFile(p, buf);
    await rejectsWith(() => inspectModelFile(p), 'unsupported_version', 'byte-swapped');
  });

  test('truncated header', async () => {
    const p = scratch('cut-header.gguf');
    await truncateFile(DRAFT, p, 2000); // inside the token list
    await rejectsWith(
      () => inspectModelFile(p),
      'truncated',
      /^cut-header\.gguf is truncated: the file ends inside metadata key tokenizer\.ggml\.tokens \(needs bytes up to [\d,]+ but the file has 2,000\)$/,
    );
    await truncateFile(DRAFT, p, 20);
    await rejectsWith(() => inspectModelFile(p), 'truncated', 'the file ends inside the GGUF header');
  });

  test('truncated tensor data', async () => {
    const p = scratch('cut-data.gguf');
    const size = (await stat(DRAFT)).size;
    await truncateFile(DRAFT, p, size - 100);
    const meta = await readGgufMetadata(p); // the header itself is intact
    assert.equal(meta.tensors.length, 20);
    await rejectsWith(
      () => inspectModelFile(p),
      'truncated',
      `cut-data.gguf is truncated: tensor output_norm.weight needs bytes up to ${size.toLocaleString('en-US')} but the file has ${(size - 100).toLocaleString('en-US')}`,
    );
    // cut in the middle of the data: the first tensor that does not fit is named
    await truncateFile(DRAFT, p, 200_000);
    const embdEnd = meta.dataOffset + meta.tensors[0]!.byteSize!;
    await rejectsWith(() => inspectModelFile(p), 'truncated', `cut-data.gguf is truncated: tensor token_embd.weight needs bytes up to ${embdEnd.toLocaleString('en-US')} but the file has 200,000`);
  });

  test('missing attention.head_count (would SIGABRT llama.cpp)', async () => {
    const p = await ensureTestModel('no-head-count', { ...SMALL, omitKeys: ['llama.attention.head_count'] });
    await rejectsWith(() => inspectModelFile(p), 'missing_key', /no-head-count-[0-9a-f]+\.gguf lacks required key llama\.attention\.head_count$/);
  });

  test('missing feed_forward_length (would SIGABRT llama.cpp)', async () => {
    const p = await ensureTestModel('no-ffn', { ...SMALL, omitKeys: ['llama.feed_forward_length'] });
    await rejectsWith(() => inspectModelFile(p), 'missing_key', 'lacks required key llama.feed_forward_length');
  });

  test('missing tokenizer keys', async () => {
    const p1 = await ensureTestModel('no-merges', { ...SMALL, omitKeys: ['tokenizer.ggml.merges'] });
    await rejectsWith(() => inspectModelFile(p1), 'missing_key', 'lacks required key tokenizer.ggml.merges (needed by tokenizer model gpt2)');
    const p2 = await ensureTestModel('no-arch', { ...SMALL, omitKeys: ['general.architecture'] });
    await rejectsWith(() => inspectModelFile(p2), 'missing_key', 'lacks required key general.architecture');
  });

  test('duplicate token text (would SIGABRT llama.cpp)', async () => {
    const vocab = await loadEmbeddedVocab();
    const p = await ensureTestModel('dup-token', { ...SMALL, vocabMutation: { index: 900, text: vocab.tokens[901]! } });
    await rejectsWith(() => inspectModelFile(p), 'invalid', /tokens 900 and 901 have the same text/);
  });

  test('model without FIM is not an error unless FIM is required', async () => {
    const p = await ensureTestModel('nofim', { ...SMALL, fim: false });
    const info = await inspectModelFile(p);
    assert.equal(info.fim, null);
    await rejectsWith(() => inspectModelFile(p, { requireFim: true }), 'no_fim', 'has no fill-in-the-middle tokens');
    assert.throws(
      () => assertFimSupported(info),
      (e: unknown) => e instanceof ModelFileError && e.code === 'no_fim',
    );
  });

  test('FIM ids fall back to older key names, then to token texts', async () => {
    const viaText = await inspectModelFile(
      await ensureTestModel('fim-by-text', {
        ...SMALL,
        omitKeys: ['tokenizer.ggml.fim_pre_token_id', 'tokenizer.ggml.fim_suf_token_id', 'tokenizer.ggml.fim_mid_token_id'],
      }),
    );
    assert.deepEqual(viaText.fim, { prefix: 4093, suffix: 4095, middle: 4094 });
    const viaOldKeys = await inspectModelFile(
      await ensureTestModel('fim-old-keys', {
        ...SMALL,
        omitKeys: ['tokenizer.ggml.fim_pre_token_id', 'tokenizer.ggml.fim_suf_token_id', 'tokenizer.ggml.fim_mid_token_id'],
        extraKeys: [
          { key: 'tokenizer.ggml.prefix_token_id', type: 'u32', value: 10 },
          { key: 'tokenizer.ggml.suffix_token_id', type: 'u32', value: 11 },
          { key: 'tokenizer.ggml.middle_token_id', type: 'u32', value: 12 },
        ],
      }),
    );
    assert.deepEqual(viaOldKeys.fim, { prefix: 10, suffix: 11, middle: 12 });
    // an id outside the vocabulary is ignored (as llama.cpp does), with a warning
    const outOfRange = await inspectModelFile(
      await ensureTestModel('fim-out-of-range', {
        ...SMALL,
        extraKeys: [{ key: 'tokenizer.ggml.fim_pre_token_id', type: 'u32', value: 99999 }],
      }),
    );
    assert.deepEqual(outOfRange.fim, { prefix: 4093, suffix: 4095, middle: 4094 });
    assert.match(outOfRange.warnings.join('\n'), /fim_pre_token_id = 99999 is outside the vocabulary/);
  });

  test('wrongly typed or impossible hyperparameters', async () => {
    const cases: [string, RandomLlamaOptions['extraKeys'], RegExp][] = [
      ['ctx-u64', [{ key: 'llama.context_length', type: 'u64', value: 256 }], /llama\.context_length must be a u32 but is a u64/],
      ['heads-0', [{ key: 'llama.attention.head_count', type: 'u32', value: 0 }], /llama\.attention\.head_count is 0, must be at least 1/],
      ['kv-3', [{ key: 'llama.attention.head_count_kv', type: 'u32', value: 3 }], /head_count 4 is not a multiple of head_count_kv 3/],
      ['tokens-i32', [{ key: 'tokenizer.ggml.tokens', type: 'array', elementType: 'i32', value: [1, 2] }], /tokenizer\.ggml\.tokens must be an array of strings but is a array of i32/],
      ['types-short', [{ key: 'tokenizer.ggml.token_type', type: 'array', elementType: 'i32', value: [1, 1, 1] }], /token_type has 3 entries for 4096 tokens/],
    ];
    for (const [name, extraKeys, msg] of cases) {
      const p = await ensureTestModel(`bad-${name}`, { ...SMALL, extraKeys });
      await rejectsWith(() => inspectModelFile(p), 'invalid', msg);
    }
  });

  test('absurd counts and lengths are rejected without allocating', async () => {
    const buf = Buffer.from(await readFile(DRAFT));
    const p = scratch('absurd.gguf');
    const bad = Buffer.from(buf);
    bad.writeBigUInt64LE(1n << 40n, 16); // kv count
    await writeFile(p, bad);
    await rejectsWith(() => inspectModelFile(p), 'invalid', /claims 1,099,511,627,776 metadata keys/);

    // the length of the first key's name
    const bad2 = Buffer.from(buf);
    bad2.writeBigUInt64LE(1n << 62n, 24);
    await writeFile(p, bad2);
    await rejectsWith(() => inspectModelFile(p), 'invalid', 'the name of metadata key #0 has a length of more than 2^53 bytes');

    // the element count of the token array
    const bad3 = Buffer.from(buf);
    const keyAt = bad3.indexOf('tokenizer.ggml.tokens');
    const countAt = keyAt + 'tokenizer.ggml.tokens'.length + 4 + 4;
    assert.equal(bad3.readBigUInt64LE(countAt), 4096n);
    bad3.writeBigUInt64LE(5_000_000n, countAt);
    await writeFile(p, bad3);
    await rejectsWith(() => inspectModelFile(p), 'truncated', 'the file ends inside metadata key tokenizer.ggml.tokens');
    bad3.writeBigUInt64LE(1n << 33n, countAt);
    await writeFile(p, bad3);
    await rejectsWith(() => inspectModelFile(p), 'invalid', /metadata key tokenizer\.ggml\.tokens claims 8,589,934,592 array elements/);
  });

  test('random header corruption gives a ModelFileError or a valid result, never anything else', async () => {
    const buf = await readFile(DRAFT);
    const meta = await readGgufMetadata(DRAFT);
    const rand = mulberry32(123);
    const p = scratch('fuzz.gguf');
    const seen = new Set<string>();
    for (let it = 0; it < 100; it++) {
      const b = Buffer.from(buf);
      for (let j = 0, k = 1 + Math.floor(rand() * 4); j < k; j++) {
        const region = rand() < 0.5 ? 1024 : meta.dataOffset; // counts and keys, or the whole header
        b[Math.floor(rand() * region)] = Math.floor(rand() * 256);
      }
      await writeFile(p, rand() < 0.2 ? b.subarray(0, Math.floor(rand() * b.length)) : b);
      try {
        await inspectModelFile(p);
        seen.add('ok');
      } catch (e) {
        assert.ok(e instanceof ModelFileError, `iteration ${it}: ${String(e)}`);
        assert.ok(e.message.startsWith('fuzz.gguf '), e.message);
        seen.add(e.code);
      }
    }
    assert.ok(seen.size >= 4, [...seen].join(','));
  });

  test('a tensor of a type unknown here skips the size check', async () => {
    const buf = Buffer.from(await readFile(DRAFT));
    const nameAt = buf.lastIndexOf('output_norm.weight');
    const typeAt = nameAt + 'output_norm.weight'.length + 4 + 8; // n_dims u32, one u64 dim
    assert.equal(buf.readUInt32LE(typeAt), 0);
    buf.writeUInt32LE(77, typeAt);
    const p = scratch('unknown-type.gguf');
    await writeFile(p, buf.subarray(0, buf.length - 64)); // and cut the (now unsizable) last tensor
    const info = await inspectModelFile(p);
    assert.equal(info.vocabSize, 4096);
    const meta = await readGgufMetadata(p);
    assert.equal(meta.tensors.at(-1)!.byteSize, null);
    assert.equal(meta.tensors.at(-1)!.typeName, 'type 77');
  });
});
