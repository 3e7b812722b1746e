/**
 * GGUF's metadata model: value types, key/values, tensor infos, the parsed header, and the limits a
 * reader holds a file to. Layout (GGUF v2/v3, little endian):
 *   "GGUF" u32 version, u64 tensor_count, u64 kv_count,
 *   kv_count x (string key, u32 type, value), tensor_count x (string name, u32 n_dims,
 *   n_dims x u64 ne, u32 ggml_type, u64 offset), padding to general.alignment (default 32),
 *   tensor data (offsets are relative to the start of the data section).
 */

/** GGUF metadata value types (gguf_type). */
export const GgufValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;
export type GgufValueType = (typeof GgufValueType)[keyof typeof GgufValueType];

const VALUE_TYPE_NAMES = ['u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'f32', 'bool', 'string', 'array', 'u64', 'i64', 'f64'];
export function ggufValueTypeName(type: number): string {
  return VALUE_TYPE_NAMES[type] ?? `unknown type ${type}`;
}

/**
 * A metadata value. Integers are numbers; 64-bit integers outside the safe integer range are
 * bigints. Arrays are plain arrays (nested arrays for arrays of arrays).
 */
export type GgufValue = number | bigint | boolean | string | GgufValue[];

export interface GgufKv {
  key: string;
  type: GgufValueType;
  /** For arrays: the element type. */
  elementType?: GgufValueType;
  value: GgufValue;
}

export interface GgufTensorInfo {
  name: string;
  /** ggml order: dims[0] is the innermost (contiguous) dimension. */
  dims: number[];
  /** ggml_type id (0 F32, 1 F16, ...). */
  type: number;
  typeName: string;
  /** Offset relative to the start of the data section. */
  offset: number;
  /** Size of the data in bytes, or null for a type whose layout is unknown here. */
  byteSize: number | null;
  elements: number;
}

export interface GgufMetadata {
  path: string;
  fileSize: number;
  version: number;
  tensorCount: number;
  kvCount: number;
  alignment: number;
  /** All key/values, in file order. */
  kv: Map<string, GgufKv>;
  tensors: GgufTensorInfo[];
  /** Offset right after the last tensor info (before alignment padding). */
  headerSize: number;
  /** Absolute file offset of the data section (tensor offsets are relative to it). */
  dataOffset: number;
}

export function getGgufValue(meta: GgufMetadata, key: string): GgufValue | undefined {
  return meta.kv.get(key)?.value;
}

export interface GgufReadLimits {
  /** Longest string (key, value, token, tensor name) in bytes. llama.cpp allows 1 GiB. */
  maxStringBytes: number;
  /** Most elements in one array. */
  maxArrayElements: number;
  maxTensors: number;
  maxKvs: number;
  /** Deepest array nesting. */
  maxArrayDepth: number;
}

export const DEFAULT_GGUF_LIMITS: Readonly<GgufReadLimits> = {
  maxStringBytes: 64 * 1024 * 1024,
  maxArrayElements: 16 * 1024 * 1024,
  maxTensors: 1_000_000,
  maxKvs: 1_000_000,
  maxArrayDepth: 4,
};

/** Bytes of each fixed-size value type (strings and arrays have none). */
export const SCALAR_SIZE: Record<number, number> = {
  [GgufValueType.UINT8]: 1,
  [GgufValueType.INT8]: 1,
  [GgufValueType.UINT16]: 2,
  [GgufValueType.INT16]: 2,
  [GgufValueType.UINT32]: 4,
  [GgufValueType.INT32]: 4,
  [GgufValueType.FLOAT32]: 4,
  [GgufValueType.BOOL]: 1,
  [GgufValueType.UINT64]: 8,
  [GgufValueType.INT64]: 8,
  [GgufValueType.FLOAT64]: 8,
};
