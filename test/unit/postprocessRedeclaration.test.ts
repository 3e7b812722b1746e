// stopAtRedeclaration golden cases: a completion that declares a name again in the same block is looping.
import { describe } from 'node:test';
import { stopAtRedeclaration } from '../../src/postprocess/stopAtRedeclaration';
import { type FilterCase, at, filterCases } from '../support/postprocessCases';

const GOLDEN: FilterCase[] = [
  {
    name: 'issue #27: the cursor line declares total, the next line declares it again',
    ctx: at('function sum(values) {\n  const total = ║\n}\n'),
    completion: 'values[0];\n  const total = values[0];\n  const total = values[1];\n  const total = values[2];',
    expected: 'values[0];',
  },
  {
    name: 'issue #27: var redeclared on the same line',
    ctx: at('for (let i = 0; i < list.length; i++) {\n  ║\n}\n'),
    completion: 'var sum = list[i]; var sum = list[i]; var sum = list[i];',
    expected: 'var sum = list[i];',
  },
  {
    name: 'a class declared twice at the same level',
    ctx: at('║'),
    completion: 'class Point {\n  x = 0;\n}\nclass Point {\n  x = 0;\n}',
    expected: 'class Point {\n  x = 0;\n}',
  },
  {
    name: 'overload signatures declare one function several times',
    ctx: at('║'),
    completion: 'function parse(x: string): Node;\nfunction parse(x: Buffer): Node;\nfunction parse(x: string | Buffer): Node {',
    expected: 'function parse(x: string): Node;\nfunction parse(x: Buffer): Node;\nfunction parse(x: string | Buffer): Node {',
  },
  {
    name: 'a python property and its setter',
    ctx: at('class Box:\n    ║', 'python'),
    completion: '@property\n    def size(self):\n        return self._size\n\n    @size.setter\n    def size(self, value):\n        self._size = value',
    expected: '@property\n    def size(self):\n        return self._size\n\n    @size.setter\n    def size(self, value):\n        self._size = value',
  },
  {
    name: 'let declared again after other statements of the block',
    ctx: at('function f() {\n  ║\n}\n'),
    completion: 'let count = 0;\n  count++;\n  let count = 1;\n  count++;',
    expected: 'let count = 0;\n  count++;',
  },
  {
    name: 'the if and the else each declare their own x',
    ctx: at('function f(a) {\n  ║\n}\n'),
    completion: 'if (a) {\n    const x = 1;\n    use(x);\n  } else {\n    const x = 2;\n    use(x);\n  }',
    expected: 'if (a) {\n    const x = 1;\n    use(x);\n  } else {\n    const x = 2;\n    use(x);\n  }',
  },
  {
    name: 'two loops each declare their i inside the parentheses',
    ctx: at('function f(a, b) {\n  ║\n}\n'),
    completion: 'for (let i = 0; i < a.length; i++) a[i]++;\n  for (let i = 0; i < b.length; i++) b[i]++;',
    expected: 'for (let i = 0; i < a.length; i++) a[i]++;\n  for (let i = 0; i < b.length; i++) b[i]++;',
  },
  {
    name: 'a name declared above the cursor line may be declared in an inner block',
    ctx: at('const value = 1;\nfunction f() {\n  ║\n}\n'),
    completion: 'const value = 2;\n  return value;',
    expected: 'const value = 2;\n  return value;',
  },
  {
    name: 'different names are ordinary code',
    ctx: at('function f() {\n  ║\n}\n'),
    completion: 'const a = load();\n  const b = load();\n  return merge(a, b);',
    expected: 'const a = load();\n  const b = load();\n  return merge(a, b);',
  },
];

describe('stopAtRedeclaration', () => {
  filterCases(stopAtRedeclaration, GOLDEN);
});
