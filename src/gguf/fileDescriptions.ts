/** How a model file and its contents are shown in messages: sizes, names and unrecognised starts. */

/** 5,247,424 */
export function formatBytes(n: number): string {
  return n.toLocaleString('en-US');
}

/**
 * A key or tensor name as it may appear in a message: a corrupt length can make a "name" swallow
 * kilobytes of binary data, control bytes included. Control characters are escaped and the name is
 * cut at 80 characters; a well-formed name is unchanged.
 */
export function printableName(name: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes
  const escaped = name.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return escaped.length > 80 ? `${escaped.slice(0, 77)}...` : escaped;
}

export function describeMagic(bytes: Buffer): string {
  let s = '';
  for (const b of bytes) {
    if (b === 0x22) s += '\\"';
    else if (b === 0x5c) s += '\\\\';
    else if (b >= 0x20 && b < 0x7f) s += String.fromCharCode(b);
    else s += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return s;
}

export function magicHint(head: Buffer): string {
  const text = head.toString('latin1');
  if (text.startsWith('version https://git-lfs')) return ': it is a Git LFS pointer, not the model itself';
  if (/^\s*<(!doctype|html|\?xml)/i.test(text)) return ': it looks like an HTML page, perhaps a failed download';
  if (/^\s*[{[]/.test(text)) return ': it looks like JSON';
  if (text.startsWith('PK\x03\x04')) return ': it is a ZIP archive';
  if (text.startsWith('\x1f\x8b')) return ': it is gzip-compressed';
  if (['tjgg', 'lmgg', 'fmgg', 'ggjt', 'ggml', 'ggmf'].includes(text.slice(0, 4))) return ': it is an old GGML/GGJT model, convert it to GGUF';
  return '';
}
