/**
 * A bounded, incremental GGUF header reader (node:fs only).
 *
 * It reads the magic, version, metadata key/values and tensor infos of a GGUF file through a
 * file handle, a chunk at a time, so a multi-GB model costs only its header (a few MB, mostly the
 * token array). Every count and length read from the file is checked against hard limits and
 * against the bytes the file actually has before anything is allocated, so a corrupt or hostile
 * file produces a {@link ModelFileError} instead of a huge allocation or a crash.
 *
 * Layout (GGUF v2/v3, little endian):
 *   "GGUF" u32 version, u64 tensor_count, u64 kv_count,
 *   kv_count x (string key, u32 type, value), tensor_count x (string name, u32 n_dims,
 *   n_dims x u64 ne, u32 ggml_type, u64 offset), padding to general.alignment (default 32),
 *   tensor data (offsets are relative to the start of the data section).
 */
import { open, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';

// ---------------------------------------------------------------------------------------------
// Errors

export type ModelFileErrorCode = 'not_found' | 'not_a_file' | 'unreadable' | 'not_gguf' | 'unsupported_version' | 'truncated' | 'missing_key' | 'invalid' | 'no_fim';

/** A model file problem, with a message that names the file and the problem. */
export class ModelFileError extends Error {
  override readonly name = 'ModelFileError';
  constructor(
    readonly code: ModelFileErrorCode,
    readonly path: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

// ---------------------------------------------------------------------------------------------
// Types

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
const GGML_TYPE_LAYOUT: Record<number, readonly [number, number]> = {
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
  /** Element count. */
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

/** Value of a key, or undefined. */
export function getGgufValue(meta: GgufMetadata, key: string): GgufValue | undefined {
  return meta.kv.get(key)?.value;
}

// ---------------------------------------------------------------------------------------------
// Limits

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

// ---------------------------------------------------------------------------------------------
// Helpers

/** 5,247,424 */
export function formatBytes(n: number): string {
  return n.toLocaleString('en-US');
}

/**
 * A key or tensor name as it may appear in a message: a corrupt length can make a "name" swallow
 * kilobytes of binary data (found by fuzzing: a 5 KB message full of control bytes). Control
 * characters are escaped and the name is cut at 80 characters; a well-formed name is unchanged.
 */
export function printableName(name: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes
  const escaped = name.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  return escaped.length > 80 ? `${escaped.slice(0, 77)}...` : escaped;
}

function describeMagic(bytes: Buffer): string {
  let s = '';
  for (const b of bytes) {
    if (b === 0x22) s += '\\"';
    else if (b === 0x5c) s += '\\\\';
    else if (b >= 0x20 && b < 0x7f) s += String.fromCharCode(b);
    else s += `\\x${b.toString(16).padStart(2, '0')}`;
  }
  return s;
}

function magicHint(head: Buffer): string {
  const text = head.toString('latin1');
  if (text.startsWith('version https://git-lfs')) return ': it is a Git LFS pointer, not the model itself';
  if (/^\s*<(!doctype|html|\?xml)/i.test(text)) return ': it looks like an HTML page, perhaps a failed download';
  if (/^\s*[{[]/.test(text)) return ': it looks like JSON';
  if (text.startsWith('PK\x03\x04')) return ': it is a ZIP archive';
  if (text.startsWith('\x1f\x8b')) return ': it is gzip-compressed';
  if (['tjgg', 'lmgg', 'fmgg', 'ggjt', 'ggml', 'ggmf'].includes(text.slice(0, 4))) return ': it is an old GGML/GGJT model, convert it to GGUF';
  return '';
}

// ---------------------------------------------------------------------------------------------
// Chunked reader

const CHUNK = 1 << 20;

class ChunkReader {
  private buf: Buffer = Buffer.allocUnsafe(CHUNK);
  /** File offset of buf[0]. */
  private bufStart = 0;
  /** Read position within buf. */
  pos = 0;
  /** Valid bytes in buf. */
  private end = 0;

  constructor(
    private readonly fh: FileHandle,
    readonly fileSize: number,
    private readonly onTruncated: (needUpTo: number) => never,
  ) {}

  get offset(): number {
    return this.bufStart + this.pos;
  }

  has(n: number): boolean {
    return this.pos + n <= this.end;
  }

  /** Make n bytes available at pos, or throw via onTruncated. */
  async ensure(n: number): Promise<void> {
    if (this.pos + n <= this.end) return;
    const offset = this.offset;
    if (offset + n > this.fileSize) this.onTruncated(offset + n);
    const remain = this.end - this.pos;
    if (n > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(n, this.buf.length * 2));
      this.buf.copy(bigger, 0, this.pos, this.end);
      this.buf = bigger;
    } else if (remain > 0) {
      this.buf.copy(this.buf, 0, this.pos, this.end);
    }
    this.bufStart = offset;
    this.pos = 0;
    this.end = remain;
    while (this.end < n) {
      const fileOff = this.bufStart + this.end;
      const want = Math.min(this.buf.length - this.end, this.fileSize - fileOff);
      const { bytesRead } = await this.fh.read(this.buf, this.end, want, fileOff);
      if (bytesRead <= 0) this.onTruncated(offset + n); // file shrank under us
      this.end += bytesRead;
    }
  }

  u8(): number {
    return this.buf[this.pos++]!;
  }
  i8(): number {
    const v = this.buf.readInt8(this.pos);
    this.pos += 1;
    return v;
  }
  u16(): number {
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  i16(): number {
    const v = this.buf.readInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number {
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  i32(): number {
    const v = this.buf.readInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  f32(): number {
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }
  f64(): number {
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  /** u64 as a number, or -1 when it exceeds Number.MAX_SAFE_INTEGER. */
  u64Safe(): number {
    const lo = this.buf.readUInt32LE(this.pos);
    const hi = this.buf.readUInt32LE(this.pos + 4);
    this.pos += 8;
    if (hi > 0x1fffff) return -1;
    return hi * 0x100000000 + lo;
  }
  u64(): number | bigint {
    const lo = this.buf.readUInt32LE(this.pos);
    const hi = this.buf.readUInt32LE(this.pos + 4);
    if (hi <= 0x1fffff) {
      this.pos += 8;
      return hi * 0x100000000 + lo;
    }
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  i64(): number | bigint {
    const v = this.buf.readBigInt64LE(this.pos);
    this.pos += 8;
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }
  str(len: number): string {
    const s = this.buf.toString('utf8', this.pos, this.pos + len);
    this.pos += len;
    return s;
  }
  bytes(n: number): Buffer {
    const b = Buffer.from(this.buf.subarray(this.pos, this.pos + n));
    this.pos += n;
    return b;
  }
}

const SCALAR_SIZE: Record<number, number> = {
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

// ---------------------------------------------------------------------------------------------
// The reader

/** Stat the path and classify problems as ModelFileErrors. Returns the file size. */
export async function statModelFile(filePath: string): Promise<number> {
  let st: Awaited<ReturnType<typeof stat>>;
  try {
    st = await stat(filePath);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new ModelFileError('not_found', filePath, `Model file not found: ${filePath}`, { cause: e });
    throw new ModelFileError('unreadable', filePath, `Cannot read model file ${filePath}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (st.isDirectory()) throw new ModelFileError('not_a_file', filePath, `${filePath} is a directory, not a model file`);
  if (!st.isFile()) throw new ModelFileError('not_a_file', filePath, `${filePath} is not a regular file`);
  return st.size;
}

/**
 * Read the GGUF header of filePath: version, metadata and tensor infos. Does not validate the
 * model beyond the container format; see inspectModelFile for that.
 */
export async function readGgufMetadata(filePath: string, limits: Partial<GgufReadLimits> = {}): Promise<GgufMetadata> {
  const lim: GgufReadLimits = { ...DEFAULT_GGUF_LIMITS, ...limits };
  const fileSize = await statModelFile(filePath);
  const base = path.basename(filePath);

  let fh: FileHandle;
  try {
    fh = await open(filePath, 'r');
  } catch (e) {
    throw new ModelFileError('unreadable', filePath, `Cannot open model file ${filePath}: ${(e as Error).message}`, {
      cause: e,
    });
  }

  // What is being read, for truncation messages.
  let context = 'the GGUF header';
  const truncated = (needUpTo: number): never => {
    throw new ModelFileError(
      'truncated',
      filePath,
      `${base} is truncated: the file ends inside ${context} (needs bytes up to ${formatBytes(needUpTo)} ` + `but the file has ${formatBytes(fileSize)})`,
    );
  };
  const invalid = (what: string): never => {
    throw new ModelFileError('invalid', filePath, `${base} is not a valid GGUF file: ${what}`);
  };

  try {
    const r = new ChunkReader(fh, fileSize, truncated);

    // ---- magic and version
    if (fileSize < 4) {
      const head = Buffer.alloc(fileSize);
      if (fileSize > 0) await fh.read(head, 0, fileSize, 0);
      throw new ModelFileError(
        'not_gguf',
        filePath,
        fileSize === 0 ? `${base} is not a GGUF model file (the file is empty)` : `${base} is not a GGUF model file (it is only ${fileSize} bytes long, starting with "${describeMagic(head)}")`,
      );
    }
    await r.ensure(4);
    const magic = r.bytes(4);
    if (magic.toString('latin1') !== 'GGUF') {
      const head = Buffer.alloc(Math.min(64, fileSize));
      await fh.read(head, 0, head.length, 0);
      throw new ModelFileError('not_gguf', filePath, `${base} is not a GGUF model file (starts with "${describeMagic(magic)}", expected "GGUF")${magicHint(head)}`);
    }
    context = 'the GGUF header';
    await r.ensure(4);
    const version = r.u32();
    if (version !== 2 && version !== 3) {
      let why: string;
      if (version === 1) why = 'GGUF version 1 is no longer supported by llama.cpp; re-convert the model';
      else if (version === 0 || (version & 0xffff) === 0) why = `version ${version} looks byte-swapped (a big-endian GGUF?); only little-endian versions 2 and 3 are supported`;
      else why = `GGUF version ${version} is not supported (supported: 2 and 3)`;
      throw new ModelFileError('unsupported_version', filePath, `${base} uses an unsupported GGUF version: ${why}`);
    }

    await r.ensure(16);
    const tensorCount = r.u64Safe();
    const kvCount = r.u64Safe();
    if (tensorCount < 0 || tensorCount > lim.maxTensors) invalid(`the header claims ${tensorCount < 0 ? 'more than 2^53' : formatBytes(tensorCount)} tensors (limit ${formatBytes(lim.maxTensors)})`);
    if (kvCount < 0 || kvCount > lim.maxKvs) invalid(`the header claims ${kvCount < 0 ? 'more than 2^53' : formatBytes(kvCount)} metadata keys (limit ${formatBytes(lim.maxKvs)})`);

    // ---- strings
    const readString = async (what: string): Promise<string> => {
      if (!r.has(8)) await r.ensure(8);
      const len = r.u64Safe();
      if (len < 0 || len > lim.maxStringBytes) invalid(`${what} has a length of ${len < 0 ? 'more than 2^53' : formatBytes(len)} bytes (limit ${formatBytes(lim.maxStringBytes)})`);
      if (r.offset + len > fileSize) truncated(r.offset + len);
      if (!r.has(len)) await r.ensure(len);
      return r.str(len);
    };

    const readScalar = (type: number): GgufValue => {
      switch (type) {
        case GgufValueType.UINT8:
          return r.u8();
        case GgufValueType.INT8:
          return r.i8();
        case GgufValueType.UINT16:
          return r.u16();
        case GgufValueType.INT16:
          return r.i16();
        case GgufValueType.UINT32:
          return r.u32();
        case GgufValueType.INT32:
          return r.i32();
        case GgufValueType.FLOAT32:
          return r.f32();
        case GgufValueType.BOOL:
          return r.u8() !== 0;
        case GgufValueType.UINT64:
          return r.u64();
        case GgufValueType.INT64:
          return r.i64();
        case GgufValueType.FLOAT64:
          return r.f64();
      }
      throw new Error(`unreachable scalar type ${type}`);
    };

    const readValue = async (type: number, what: string, depth: number): Promise<{ value: GgufValue; elementType?: GgufValueType }> => {
      if (type === GgufValueType.STRING) return { value: await readString(what) };
      const size = SCALAR_SIZE[type];
      if (size !== undefined) {
        if (!r.has(size)) await r.ensure(size);
        return { value: readScalar(type) };
      }
      if (type !== GgufValueType.ARRAY) invalid(`${what} has unknown value type ${type}`);
      if (depth >= lim.maxArrayDepth) invalid(`${what} nests arrays deeper than ${lim.maxArrayDepth} levels`);
      if (!r.has(12)) await r.ensure(12);
      const elType = r.u32();
      const n = r.u64Safe();
      if (elType > GgufValueType.FLOAT64) invalid(`${what} is an array of unknown value type ${elType}`);
      if (n < 0 || n > lim.maxArrayElements) invalid(`${what} claims ${n < 0 ? 'more than 2^53' : formatBytes(n)} array elements (limit ${formatBytes(lim.maxArrayElements)})`);
      // Each element needs at least this many bytes: reject a count the file cannot hold
      // before allocating anything for it.
      const minEl = SCALAR_SIZE[elType] ?? (elType === GgufValueType.STRING ? 8 : 12);
      if (r.offset + n * minEl > fileSize) truncated(r.offset + n * minEl);
      const out: GgufValue[] = new Array(n);
      if (elType === GgufValueType.STRING) {
        for (let i = 0; i < n; i++) {
          // inline fast path of readString
          if (r.has(8)) {
            const save = r.pos;
            const len = r.u64Safe();
            if (len >= 0 && r.has(len) && len <= lim.maxStringBytes) {
              out[i] = r.str(len);
              continue;
            }
            r.pos = save;
          }
          out[i] = await readString(`${what}[${i}]`);
        }
      } else if (elType === GgufValueType.ARRAY) {
        for (let i = 0; i < n; i++) out[i] = (await readValue(elType, `${what}[${i}]`, depth + 1)).value;
      } else {
        const sz = minEl;
        for (let i = 0; i < n; i++) {
          if (!r.has(sz)) await r.ensure(Math.min(sz * (n - i), CHUNK - (CHUNK % sz)));
          out[i] = readScalar(elType);
        }
      }
      return { value: out, elementType: elType as GgufValueType };
    };

    // ---- key/values
    const kv = new Map<string, GgufKv>();
    for (let i = 0; i < kvCount; i++) {
      context = `metadata key #${i}`;
      const key = await readString(`the name of metadata key #${i}`);
      if (key.length === 0) invalid(`metadata key #${i} has an empty name`);
      const shownKey = printableName(key);
      if (kv.has(key)) invalid(`metadata key ${shownKey} appears twice`);
      context = `metadata key ${shownKey}`;
      if (!r.has(4)) await r.ensure(4);
      const type = r.u32();
      if (type > GgufValueType.FLOAT64) invalid(`metadata key ${shownKey} has unknown value type ${type}`);
      const { value, elementType } = await readValue(type, `metadata key ${shownKey}`, 0);
      const entry: GgufKv = { key, type: type as GgufValueType, value };
      if (elementType !== undefined) entry.elementType = elementType;
      kv.set(key, entry);
    }

    // ---- alignment
    let alignment = 32;
    const al = kv.get('general.alignment');
    if (al) {
      if (al.type !== GgufValueType.UINT32) invalid(`general.alignment must be a u32 but is a ${ggufValueTypeName(al.type)}`);
      alignment = al.value as number;
      if (alignment === 0 || (alignment & (alignment - 1)) !== 0) invalid(`general.alignment ${alignment} is not a power of 2`);
    }

    // ---- tensor infos
    const tensors: GgufTensorInfo[] = [];
    const names = new Set<string>();
    for (let i = 0; i < tensorCount; i++) {
      context = `the info of tensor #${i}`;
      const name = await readString(`the name of tensor #${i}`);
      const shownName = printableName(name);
      context = `the info of tensor ${shownName}`;
      if (names.has(name)) invalid(`tensor ${shownName} appears twice`);
      names.add(name);
      if (!r.has(4)) await r.ensure(4);
      const nDims = r.u32();
      if (nDims > 4) invalid(`tensor ${shownName} has ${nDims} dimensions (at most 4)`);
      await r.ensure(nDims * 8 + 12);
      const dims: number[] = [];
      let elements = 1;
      for (let d = 0; d < nDims; d++) {
        const ne = r.u64Safe();
        if (ne < 0) invalid(`tensor ${shownName} has an absurd dimension`);
        dims.push(ne);
        elements *= ne;
      }
      if (!Number.isSafeInteger(elements)) invalid(`tensor ${shownName} has too many elements (${dims.join(' x ')})`);
      const type = r.u32();
      const offset = r.u64Safe();
      if (offset < 0) invalid(`tensor ${shownName} has an absurd data offset`);
      const layout = GGML_TYPE_LAYOUT[type];
      let byteSize: number | null = null;
      if (layout) {
        const [blockSize, typeSize] = layout;
        if ((dims[0] ?? 1) % blockSize !== 0) invalid(`tensor ${shownName} of type ${ggmlTypeName(type)} has ${dims[0]} elements per row, ` + `not a multiple of the block size ${blockSize}`);
        byteSize = (elements / blockSize) * typeSize;
      }
      tensors.push({ name, dims, type, typeName: ggmlTypeName(type), offset, byteSize, elements });
    }

    const headerSize = r.offset;
    const dataOffset = Math.ceil(headerSize / alignment) * alignment;
    return { path: filePath, fileSize, version, tensorCount, kvCount, alignment, kv, tensors, headerSize, dataOffset };
  } finally {
    await fh.close().catch(() => undefined);
  }
}
