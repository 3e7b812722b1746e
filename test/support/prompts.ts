import * as fs from 'node:fs';
import * as path from 'node:path';
import { mulberry32 } from '../../testbed/ggufWriter';

export interface PromptCase {
  name: string;
  prefix: string;
  suffix: string;
}

/**
 * The code the cases are cut from: copies of six of this repository's files as they were when the
 * suites were tuned (never in the tiny models' training data), kept here so that editing the sources
 * does not change what the lossless suites decode.
 */
const SOURCES = ['speculativeDecoder.ts', 'workerClient.ts', 'completionEngine.ts', 'fimPrompt.ts', 'esbuild.mjs', 'make-icon.mjs'].map((name) => path.join(__dirname, 'promptSources', `${name}.txt`));

/** Real code (see SOURCES) and adversarial text. */
export function promptCases(count: number, seed: number): PromptCase[] {
  const rand = mulberry32(seed);
  const files = SOURCES.map((f) => fs.readFileSync(f, 'utf8'));
  const python =
    'def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n\nclass Stack:\n    def __init__(self):\n        self.items = []\n\n    def push(self, item):\n        self.items.append(item)\n\n    def pop(self):\n        return self.items.pop()\n';
  const adversarial: Array<() => string> = [
    () => Array.from({ length: 40 + Math.floor(rand() * 200) }, () => String.fromCharCode(1 + Math.floor(rand() * 254))).join(''),
    () => 'abc '.repeat(20 + Math.floor(rand() * 60)),
    () => '}\n'.repeat(30 + Math.floor(rand() * 40)),
    () => 'const ünïcödé = "日本語のテキスト 🚀🎉 émojis ñ";\n// Ελληνικά – кириллица\n'.repeat(1 + Math.floor(rand() * 3)),
    () => '\t\t\n\r\n    \u00a0\u2028x',
    () => '',
  ];
  const cases: PromptCase[] = [];
  for (let i = 0; i < count; i++) {
    const kind = i % 5;
    let text: string;
    let name: string;
    if (kind <= 2) {
      const file = files[i % files.length];
      const start = Math.floor(rand() * Math.max(1, file.length - 800));
      text = file.slice(start, start + 200 + Math.floor(rand() * 600));
      name = `code#${i}`;
    } else if (kind === 3) {
      text = python;
      name = `python#${i}`;
    } else {
      const pick = adversarial[Math.floor(i / 5) % adversarial.length];
      text = pick();
      name = `adversarial#${i}`;
    }
    const cut = Math.floor(rand() * (text.length + 1));
    cases.push({ name, prefix: text.slice(0, cut), suffix: text.slice(cut) });
  }
  return cases;
}
