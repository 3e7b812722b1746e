// The next-edit prompt formats, golden: a fixed request gives exactly the prompt text each model was
// trained on (sources beside each case), the outputs parse back to the region, and the format is chosen
// from the model's name.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseFormat } from '../../src/nextEdit/formats';
import { sweepFormat } from '../../src/nextEdit/formats/sweep';
import { ZETA_CURSOR, zetaFormat } from '../../src/nextEdit/formats/zeta';
import { copyCursorToken } from '../../src/nextEdit/generation';
import { GREET_REQUEST, V2, V3 } from '../support/nextEditRequests';

describe('Sweep Next-Edit prompt', () => {
  it('is the training layout: .diff blocks, original/, current/, updated/ joined by newlines', () => {
    // Layout: huggingface.co/sweepai/sweep-next-edit-1.5B run_model.py `build_prompt` (context files,
    // `<|file_sep|>{path}.diff\noriginal:\n…\nupdated:\n…`, `original/`, `current/`, `updated/`, joined
    // by "\n"); the newline after `updated/{path}`: sweepai/vscode-nes src/local/completions.ts
    // `buildLocalPrompt` and sweepai/cursortab.nvim server/provider/sweep/sweep.go.
    const prompt = sweepFormat.buildPrompt(GREET_REQUEST);
    const expected = [
      '<|file_sep|>greet.py.diff',
      'original:',
      'def greet():',
      '    print("Hello!")',
      '',
      'greet("Alice")',
      'updated:',
      'def greet(name):',
      '    print(f"Hello, {name}!")',
      '',
      'greet("Alice")',
      '<|file_sep|>original/greet.py',
      'def greet(name):',
      '    print(f"Hello, {name}!")',
      '',
      'greet("Alice")',
      '',
      '<|file_sep|>current/greet.py',
      'from utils import get_time_of_day',
      '',
      'def greet(name):',
      '    print(f"Hello, {name}!")',
      '',
      'greet("Alice")',
      '',
      '<|file_sep|>updated/greet.py',
      '',
    ].join('\n');
    assert.equal(prompt.prompt, expected);
    assert.deepEqual(prompt.region, { start: 0, end: V3.length });
    assert.equal(prompt.copySource, `${V3}\n<|file_sep|>`);
    assert.deepEqual(prompt.stop, ['<|file_sep|>', '</s>', '<|endoftext|>']);
  });

  it("gives the file's surroundings as a context file when the file is longer than the window", () => {
    const text = Array.from({ length: 40 }, (_, i) => `x${i} = ${i}`).join('\n');
    const prompt = sweepFormat.buildPrompt({ path: 'a.py', text, cursorOffset: text.indexOf('x20'), events: [], mode: 'plain' });
    assert.ok(prompt.prompt.startsWith(`<|file_sep|>a.py\n${text}\n<|file_sep|>original/a.py\nx10 = 10\n`), prompt.prompt.slice(0, 80));
    assert.equal(text.slice(prompt.region.start, prompt.region.end).split('\n').length, 21);
  });

  it('reads the updated window back: up to <|file_sep|>, without the newline before it', () => {
    const prompt = sweepFormat.buildPrompt(GREET_REQUEST);
    assert.deepEqual(sweepFormat.parseOutput('a\nb\n<|file_sep|>', prompt), { regionText: 'a\nb' });
    assert.deepEqual(sweepFormat.parseOutput('a\nb\n', prompt), { regionText: 'a\nb' });
    assert.equal(sweepFormat.partialRegion('a\nb', prompt), 'a\nb');
    assert.equal('reason' in sweepFormat.parseOutput('a\n<|fim_middle|>b\n', prompt), true);
  });
});

describe('Zeta prompt', () => {
  it("is Zed's zeta1 prompt: instruction, events as quoted-path diffs, the excerpt with region and cursor markers", () => {
    // Instruction and sections: the zed-industries/zeta dataset's prompt as vLLM
    // (vllm/benchmarks/datasets.py `zeta_prompt`) and Zed's "EXAMPLE ZETA1 PROMPT" write it.
    // Events: zed-industries/zed crates/zeta/src/zeta.rs (early 2025) `User edited {:?}:\n```diff\n{}\n```
    // with language::unified_diff hunks; excerpt: crates/zeta/src/zeta1/input_excerpt.rs.
    const prompt = zetaFormat.buildPrompt(GREET_REQUEST);
    const expected = [
      '### Instruction:',
      'You are a code completion assistant and your task is to analyze user edits and then rewrite an excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking into account the cursor location.',
      '',
      '### User Edits:',
      '',
      'User edited "greet.py":',
      '```diff',
      '@@ -1,4 +1,4 @@',
      '-def greet():',
      '-    print("Hello!")',
      '+def greet(name):',
      '+    print(f"Hello, {name}!")',
      ' ',
      ' greet("Alice")',
      '',
      '```',
      '',
      'User edited "greet.py":',
      '```diff',
      '@@ -1,3 +1,5 @@',
      '+from utils import get_time_of_day',
      '+',
      ' def greet(name):',
      '     print(f"Hello, {name}!")',
      ' ',
      '',
      '```',
      '',
      '### User Excerpt:',
      '',
      '```greet.py',
      '<|start_of_file|>',
      '<|editable_region_start|>',
      'from utils import get_time_of_day<|user_cursor_is_here|>',
      '',
      'def greet(name):',
      '    print(f"Hello, {name}!")',
      '',
      'greet("Alice")',
      '',
      '<|editable_region_end|>',
      '```',
      '',
      '### Response:',
      '',
    ].join('\n');
    assert.equal(prompt.prompt, expected);
    assert.equal(prompt.copySource, `<|editable_region_start|>\nfrom utils import get_time_of_day<|user_cursor_is_here|>\n\n${V2}\n<|editable_region_end|>`);
    assert.deepEqual(prompt.stop, ['<|editable_region_end|>', '<|endoftext|>']);
  });

  it('shows context outside the region and no start-of-file marker when the context does not start the file', () => {
    const text = Array.from({ length: 400 }, (_, i) => `value_${i} = compute(${i})`).join('\n');
    const prompt = zetaFormat.buildPrompt({ path: 'm.py', text, cursorOffset: text.indexOf('value_200'), events: [], mode: 'plain' });
    assert.ok(!prompt.prompt.includes('<|start_of_file|>'));
    const excerpt = prompt.prompt.slice(prompt.prompt.indexOf('```m.py\n'));
    const before = excerpt.slice('```m.py\n'.length, excerpt.indexOf('<|editable_region_start|>'));
    const after = excerpt.slice(excerpt.indexOf('<|editable_region_end|>') + '<|editable_region_end|>'.length, excerpt.lastIndexOf('\n```'));
    assert.ok(before.endsWith('\n') && before.split('\n').length > 3, 'context lines above the region');
    assert.ok(after.startsWith('\n') && after.split('\n').length > 3, 'context lines below the region');
    assert.ok(prompt.prompt.includes('### User Edits:\n\n\n\n### User Excerpt:'), 'an empty history leaves the section empty');
  });

  it("reads the region back as Zed's parse_edits does", () => {
    const prompt = zetaFormat.buildPrompt(GREET_REQUEST);
    const answer = '```greet.py\n<|editable_region_start|>\nline one<|user_cursor_is_here|>\nline two\n<|editable_region_end|>\n```';
    assert.deepEqual(zetaFormat.parseOutput(answer, prompt), { regionText: 'line one\nline two' });
    // Cut before the stop string <|editable_region_end|>.
    assert.deepEqual(zetaFormat.parseOutput('```greet.py\n<|editable_region_start|>\nline one\n', prompt), { regionText: 'line one' });
    assert.equal(zetaFormat.partialRegion('```greet.py\n<|editable_region_start|>\nline on', prompt), 'line on');
    assert.equal(zetaFormat.partialRegion('```greet.py\n<|editable_reg', prompt), null);
    const garbled = zetaFormat.parseOutput('no markers at all', prompt);
    assert.ok('reason' in garbled && garbled.reason === 'unparseable');
    const twice = zetaFormat.parseOutput('<|editable_region_start|>\na\n<|editable_region_start|>\nb', prompt);
    assert.ok('reason' in twice && twice.reason === 'unparseable');
  });
});

describe('the text the copy proposer copies', () => {
  it('is what the model writes to leave the region as it is, its end marker included', () => {
    const text = Array.from({ length: 60 }, (_, i) => `value_${i} = ${i}\n`).join('');
    for (const format of [sweepFormat, zetaFormat]) {
      const prompt = format.buildPrompt({ path: 'm.py', text, cursorOffset: text.indexOf('value_30'), events: [], mode: 'copy' });
      const parsed = format.parseOutput(prompt.copySource, prompt);
      assert.ok('regionText' in parsed, format.id);
      assert.equal(parsed.regionText, text.slice(prompt.region.start, prompt.region.end), format.id);
      assert.ok(
        prompt.stop.some((stop) => prompt.copySource.endsWith(stop)),
        `${format.id} ends with a stop marker`,
      );
    }
  });
});

describe('where the cursor lies in the text the copy proposer copies', () => {
  it('both formats say it, so that the copy before it is verified in long steps; the tokens before it give its token', () => {
    const text = Array.from({ length: 60 }, (_, i) => `value_${i} = ${i}\n`).join('');
    const cursorOffset = text.indexOf('value_30') + 3;
    for (const format of [sweepFormat, zetaFormat]) {
      const prompt = format.buildPrompt({ path: 'm.py', text, cursorOffset, events: [], mode: 'copy' });
      assert.ok(prompt.copyCursor !== undefined, format.id);
      assert.ok(prompt.copySource.slice(0, prompt.copyCursor).endsWith('\nval'), `${format.id}: ${prompt.copySource.slice(0, prompt.copyCursor).slice(-12)}`);
      const chars = (s: string) => [...s].map((c) => c.charCodeAt(0));
      assert.equal(copyCursorToken(prompt, chars), prompt.copyCursor);
    }
    const zeta = zetaFormat.buildPrompt({ path: 'm.py', text, cursorOffset, events: [], mode: 'copy' });
    assert.ok(zeta.copySource.slice(zeta.copyCursor).startsWith(ZETA_CURSOR));
    // A cursor outside the window (a region given by the request): none.
    const far = sweepFormat.buildPrompt({ path: 'm.py', text, cursorOffset: 2, region: { start: text.indexOf('value_40'), end: text.indexOf('value_45') }, events: [], mode: 'copy' });
    assert.equal(far.copyCursor, undefined);
    assert.equal(
      copyCursorToken(far, () => assert.fail('nothing to tokenize')),
      undefined,
    );
  });
});

describe('choosing a format from the model', () => {
  const table: [string, Parameters<typeof chooseFormat>[0], string | null][] = [
    ["Sweep's GGUF file name", { fileName: '/models/sweep-next-edit-1.5b.q8_0.v2.gguf' }, 'sweep'],
    ['Sweep by general.name', { name: 'Sweep Next Edit 0.5B' }, 'sweep'],
    ['Sweep by general.basename', { basename: 'sweep_next_edit' }, 'sweep'],
    ['Zeta by general.name', { name: 'Zeta' }, 'zeta'],
    ['Zeta by a quantised file name', { fileName: 'C:\\m\\zeta-Q8_0.gguf' }, 'zeta'],
    ['a plain code model', { name: 'Qwen2.5 Coder 1.5B', fileName: 'qwen2.5-coder-1.5b-q8_0.gguf' }, null],
    ['a word that only contains "zeta"', { name: 'Zetabyte Coder' }, null],
    ['nothing known', {}, null],
  ];
  for (const [name, model, expected] of table) it(name, () => assert.equal(chooseFormat(model)?.id ?? null, expected));

  it('a forced setting wins over the name, and auto falls back to it', () => {
    assert.equal(chooseFormat({ name: 'Qwen2.5 Coder' }, 'zeta')?.id, 'zeta');
    assert.equal(chooseFormat({ name: 'Sweep Next Edit' }, 'zeta')?.id, 'zeta');
    assert.equal(chooseFormat({ name: 'Sweep Next Edit' }, 'auto')?.id, 'sweep');
  });
});
