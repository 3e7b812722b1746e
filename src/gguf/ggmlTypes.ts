/** ggml's tensor types: ids, names and block layouts, for tensor sizes and messages. */

/** ggml tensor types (ggml_type). Removed types (4, 5, 31-33, 36-38) are not listed. */
export const GgmlType = {
  F32: 0,
  F16: 1,
  Q4_0: 2,
  Q4_1: 3,
  Q5_0: 6,
  Q5_1: 7,
  Q8_0: 8,
  Q8_1: 9,
  Q2_K: 10,
  Q3_K: 11,
  Q4_K: 12,
  Q5_K: 13,
  Q6_K: 14,
  Q8_K: 15,
  IQ2_XXS: 16,
  IQ2_XS: 17,
  IQ3_XXS: 18,
  IQ1_S: 19,
  IQ4_NL: 20,
  IQ3_S: 21,
  IQ2_S: 22,
  IQ4_XS: 23,
  I8: 24,
  I16: 25,
  I32: 26,
  I64: 27,
  F64: 28,
  IQ1_M: 29,
  BF16: 30,
  TQ1_0: 34,
  TQ2_0: 35,
  MXFP4: 39,
  NVFP4: 40,
  Q1_0: 41,
  Q2_0: 42,
} as const;

/**
 * [elements per block, bytes per block] by ggml type id. Checked against
 * ggml_blck_size/ggml_type_size of the llama.cpp releases in node-llama-cpp 3.21.1 and 3.22.1
 * (the same type table in both); a release that adds a type needs a row here.
 */
export const GGML_TYPE_LAYOUT: Record<number, readonly [number, number]> = {
  0: [1, 4],
  1: [1, 2],
  2: [32, 18],
  3: [32, 20],
  6: [32, 22],
  7: [32, 24],
  8: [32, 34],
  9: [32, 36],
  10: [256, 84],
  11: [256, 110],
  12: [256, 144],
  13: [256, 176],
  14: [256, 210],
  15: [256, 292],
  16: [256, 66],
  17: [256, 74],
  18: [256, 98],
  19: [256, 50],
  20: [32, 18],
  21: [256, 110],
  22: [256, 82],
  23: [256, 136],
  24: [1, 1],
  25: [1, 2],
  26: [1, 4],
  27: [1, 8],
  28: [1, 8],
  29: [256, 56],
  30: [1, 2],
  34: [256, 54],
  35: [256, 66],
  39: [32, 17],
  40: [64, 36],
  41: [128, 18],
  42: [64, 18],
};

const GGML_TYPE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(GgmlType).map(([name, id]) => [id, name]));

export function ggmlTypeName(type: number): string {
  return GGML_TYPE_NAMES[type] ?? `type ${type}`;
}

/** [block size, type size] of a ggml type, or null when unknown. */
export function ggmlTypeLayout(type: number): { blockSize: number; typeSize: number } | null {
  const l = GGML_TYPE_LAYOUT[type];
  return l ? { blockSize: l[0], typeSize: l[1] } : null;
}
