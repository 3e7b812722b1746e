// Issue #41 item 5: the first-run offer is reachable again after it is gone: a command, the status bar
// menu, and VS Code's Walkthroughs page for Draftline with the first steps (pick a model, type, read
// the status bar, the toggles). Checked against package.json and the source that registers commands
// (src/vscode/commands.ts imports vscode, so it is read as text).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(__dirname, '../..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
const commandsSource = fs.readFileSync(path.join(ROOT, 'src/vscode/commands.ts'), 'utf8');
const contributed = new Set<string>(manifest.contributes.commands.map((c: { command: string }) => c.command));
const registered = new Set([...commandsSource.matchAll(/registerCommand\('([^']+)'/g)].map((m) => m[1]!));

interface Step {
  id: string;
  title: string;
  description: string;
  media: { markdown?: string; image?: string };
  completionEvents?: string[];
}

test('the offer has a command of its own, in the palette and in the status bar menu', () => {
  assert.ok(contributed.has('draftline.getRecommendedModels'), 'contributed in package.json');
  assert.ok(registered.has('draftline.getRecommendedModels'), 'registered in commands.ts');
  assert.match(commandsSource, /\{ label: '[^']*Get Recommended Models', command: 'draftline\.getRecommendedModels' \}/, 'in the status bar menu');
});

test('a walkthrough with the first steps, each with its media and only commands that exist', () => {
  const [walkthrough] = manifest.contributes.walkthroughs ?? [];
  assert.ok(walkthrough, 'package.json contributes a walkthrough');
  const id = `${manifest.publisher}.${manifest.name}#${walkthrough.id}`;
  assert.ok(commandsSource.includes(`'${id}'`), `the status bar menu opens the walkthrough by its id (${id})`);
  const steps: Step[] = walkthrough.steps;
  const topics = [/model/i, /type/i, /status bar/i, /on and off|toggle/i];
  assert.equal(steps.length, topics.length);
  for (const [i, step] of steps.entries()) assert.match(step.title, topics[i]!, `step ${i + 1}`);
  for (const step of steps) {
    const media = step.media.markdown ?? step.media.image;
    assert.ok(media && fs.existsSync(path.join(ROOT, media)), `${step.id}: its media ${media} exists`);
    const links = [...step.description.matchAll(/\(command:([\w.]+)\)/g)].map((m) => m[1]!);
    const events = (step.completionEvents ?? []).filter((e) => e.startsWith('onCommand:')).map((e) => e.slice('onCommand:'.length));
    for (const command of [...links, ...events]) {
      if (command.startsWith('workbench.')) continue;
      assert.ok(registered.has(command), `${step.id}: ${command} is a command Draftline registers`);
    }
    assert.ok(links.length > 0 || step.completionEvents?.length, `${step.id}: a button or a way to complete it`);
  }
  // The packaged extension carries the media (the README's screenshots too, since issue #48).
  const ignore = fs.readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8');
  assert.doesNotMatch(ignore, /^media\/(\*\*|walkthrough)/m);
});
