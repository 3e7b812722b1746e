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
