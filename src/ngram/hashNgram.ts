const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * Hash of the `n` tokens ending (exclusive) at `end`.
 * Kept to 30 bits so V8 stores it as a small integer (cheap Map keys); collisions only cost a
 * token comparison, because every candidate is verified against the real tokens.
 */
export function hashNgram(tokens: ArrayLike<number>, end: number, n: number): number {
  let hash = FNV_OFFSET;
  for (let i = end - n; i < end; i++) {
    hash = Math.imul(hash ^ tokens[i]!, FNV_PRIME);
    hash ^= hash >>> 15;
  }
  return hash & 0x3fffffff;
}
