// The README's command list is what the command palette shows: package.json's contributed commands
// that the palette does not hide.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import manifest from '../../package.json';
import { backendExplanation } from '../../src/stats/statusText';
import type { RuntimeChoice } from '../../src/shared/backendInfo';

const ROOT = path.resolve(__dirname, '../..');

describe('README', () => {
  it('lists every command the palette shows, and no other', () => {
    const hidden = new Set(((manifest.contributes.menus as { commandPalette?: { command: string; when?: string }[] }).commandPalette ?? []).filter((m) => m.when === 'false').map((m) => m.command));
    const palette = manifest.contributes.commands.filter((c) => !hidden.has(c.command)).map((c) => c.title);
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const line = /- Commands \(`Draftline: …`\): ([\s\S]*?)\. Toggles persist/.exec(readme);
    assert.ok(line, 'the README has its commands line');
    // "Show Menu (the others in one list; ...)": the name is what comes before a parenthesis that follows a word.
    const listed = line[1]!
      .replace(/\s+/g, ' ')
      .split(/, (?![^(]*\))/)
      .map((item) => item.replace(/ \((?!local or server)[^)]*\)$/, '').trim());
    assert.deepEqual([...listed].sort(), [...palette].sort());
  });

  it('quotes the tooltip’s CPU wordings as the tooltip says them', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    const sentence = /the status bar tooltip says why: (.*?)\. On Linux x64/.exec(readme);
    assert.ok(sentence, 'the README has its sentence on the CPU fallback');
    const quoted = [...sentence[1]!.matchAll(/"(CPU \(.*?\))"/g)].map((m) => m[1]);
    const runtime: RuntimeChoice = { requestedGpu: 'auto', gpuBinaries: ['vulkan'], gpuDetected: [], gpuDevices: [], cores: 2, requestedThreads: 0 };
    const cpu = { gpuLayers: { target: 0, draft: 0 } };
    assert.deepEqual(quoted, [
      // The Vulkan build started and sees no device (a VM).
      backendExplanation({ ...cpu, backend: 'vulkan', runtime: { ...runtime, gpuDetected: ['vulkan'] } }),
      // No Vulkan driver: the CPU build runs.
      backendExplanation({ ...cpu, backend: 'cpu', runtime }),
    ]);
  });

  it('its links, and those of docs/ (moved there from the README), point at files that exist', () => {
    const broken: string[] = [];
    for (const file of [
      'README.md',
      'CHANGELOG.md',
      ...fs
        .readdirSync(path.join(ROOT, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`),
    ]) {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      for (const [, link] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?:|#|mailto:)/.test(link!)) continue;
        if (!fs.existsSync(path.resolve(ROOT, path.dirname(file), link!.split('#')[0]!))) broken.push(`${file}: ${link}`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it('the src/ paths the docs name exist (files move; the docs must follow)', () => {
    const docs = [
      'README.md',
      'CHANGELOG.md',
      'bench/PROFILE.md',
      ...fs
        .readdirSync(path.join(ROOT, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .map((name) => `docs/${name}`),
    ];
    const missing: string[] = [];
    for (const file of docs) {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      for (const [, named] of text.matchAll(/(?<![\w/.-])(?:\.\.\/)*(src\/[\w./{},-]*[\w/}])/g)) {
        // `src/a/{b,c}.ts` names src/a/b.ts and src/a/c.ts.
        const brace = /^(.*)\{(.*?)\}(.*)$/.exec(named!);
        const paths = brace ? brace[2]!.split(',').map((part) => `${brace[1]}${part}${brace[3]}`) : [named!];
        for (const p of paths) if (!fs.existsSync(path.join(ROOT, p))) missing.push(`${file}: ${p}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('its settings table names every setting package.json declares', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const keys = Object.keys(manifest.contributes.configuration.properties).map((key) => key.replace(/^draftline\./, ''));
    // Named whole (`nextEdit.model`, draftline.nextEdit.model), by its last part in a row of its group
    // (`speculation.maxProposal`, `ngramMinMatch`), or by its group (`server.*`).
    const named = (key: string) =>
      readme.includes(`\`${key}\``) || readme.includes(`draftline.${key}`) || readme.includes(`\`${key.split('.').pop()}\``) || readme.includes(`\`${key.split('.')[0]}.*\``);
    assert.deepEqual(
      keys.filter((key) => !named(key)),
      [],
    );
  });
});
