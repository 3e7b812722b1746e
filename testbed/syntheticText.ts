// Text and tokenizers for tests of the n-gram index that need no model.

/** Words, whitespace runs and punctuation as tokens, ids given in order of first sight. */
export function wordTokenizer(): (text: string) => number[] {
  const ids = new Map<string, number>();
  return (text: string) =>
    (text.match(/\w+|\s+|[^\w\s]/g) ?? []).map((piece) => {
      let id = ids.get(piece);
      if (id === undefined) ids.set(piece, (id = ids.size));
      return id;
    });
}

/** About `chars` of code-like text, different per seed (so lookups can tell documents apart). */
export function syntheticSource(seed: string, chars: number): string {
  const lines: string[] = [];
  for (let i = 0, length = 0; length < chars; i++) {
    const line = `  const ${seed}_${i} = compute_${seed}(${i}, values[${i % 97}]) + offset * ${i % 13};`;
    lines.push(line);
    length += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

/** Deterministic minified-looking JavaScript: short names, no indentation, long lines. */
export function minifiedJs(totalChars: number, lines: number): string {
  let seed = 27;
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  const names = 'abcdefghijklmnopqrstuvwxyz'.split('');
  const name = () => names[rand(26)]! + (rand(3) ? '' : names[rand(26)]);
  const statements = [
    () => `var ${name()}=${name()}(${name()},${rand(1000)});`,
    () => `function ${name()}(${name()},${name()}){return ${name()}.${name()}(${name()})+${rand(99)}}`,
    () => `if(${name()}<${rand(256)}){${name()}[${name()}]=${name()}.length}`,
    () => `for(var ${name()}=0;${name()}<${name()}.length;${name()}++)${name()}+=${name()}[${name()}];`,
    () => `${name()}.prototype.${name()}=function(){return this.${name()}||"${name()}${rand(10)}"};`,
    () => `return ${name()}&&${name()}(${name()}.${name()},{${name()}:${rand(50)},${name()}:!0});`,
  ];
  const perLine = Math.floor(totalChars / lines);
  const out: string[] = [];
  for (let i = 0; i < lines; i++) {
    let line = '';
    while (line.length < perLine) line += statements[rand(statements.length)]!();
    out.push(line);
  }
  return out.join('\n');
}
