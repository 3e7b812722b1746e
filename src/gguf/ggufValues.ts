import { CHUNK, type ChunkReader } from './chunkReader';
import { formatBytes } from './fileDescriptions';
import { type GgufReadLimits, type GgufValue, GgufValueType, SCALAR_SIZE } from './ggufFormat';

/** How a value reader reports a problem: both throw (a ModelFileError naming the file). */
export interface GgufProblems {
  /** The file ends before byte `needUpTo`. */
  truncated(needUpTo: number): never;
  /** The bytes are there but are not valid GGUF (`what` says how). */
  invalid(what: string): never;
}

/**
 * Reads GGUF metadata values (strings, scalars, arrays of either, nested arrays) off a ChunkReader.
 * Every length and count read from the file is checked against `limits` and against the bytes the
 * file has before anything is allocated for it, so a corrupt or hostile file ends in a clear error
 * instead of a huge allocation.
 */
export class GgufValueReader {
  constructor(
    private readonly r: ChunkReader,
    private readonly limits: GgufReadLimits,
    private readonly problems: GgufProblems,
  ) {}

  /** A u64 length and that many bytes of UTF-8; `what` names it in messages. */
  async readString(what: string): Promise<string> {
    const { r, limits } = this;
    if (!r.has(8)) await r.ensure(8);
    const len = r.u64Safe();
    if (len < 0 || len > limits.maxStringBytes) this.problems.invalid(`${what} has a length of ${len < 0 ? 'more than 2^53' : formatBytes(len)} bytes (limit ${formatBytes(limits.maxStringBytes)})`);
    if (r.offset + len > r.fileSize) this.problems.truncated(r.offset + len);
    if (!r.has(len)) await r.ensure(len);
    return r.str(len);
  }

  /** A value of `type` (a gguf_type), `depth` arrays deep; for an array, its element type too. */
  async readValue(type: number, what: string, depth: number): Promise<{ value: GgufValue; elementType?: GgufValueType }> {
    if (type === GgufValueType.STRING) return { value: await this.readString(what) };
    const size = SCALAR_SIZE[type];
    if (size !== undefined) {
      if (!this.r.has(size)) await this.r.ensure(size);
      return { value: this.readScalar(type) };
    }
    if (type !== GgufValueType.ARRAY) this.problems.invalid(`${what} has unknown value type ${type}`);
    return this.readArray(what, depth);
  }

  private async readArray(what: string, depth: number): Promise<{ value: GgufValue[]; elementType: GgufValueType }> {
    const { r, limits, problems } = this;
    if (depth >= limits.maxArrayDepth) problems.invalid(`${what} nests arrays deeper than ${limits.maxArrayDepth} levels`);
    if (!r.has(12)) await r.ensure(12);
    const elType = r.u32();
    const n = r.u64Safe();
    if (elType > GgufValueType.FLOAT64) problems.invalid(`${what} is an array of unknown value type ${elType}`);
    if (n < 0 || n > limits.maxArrayElements) problems.invalid(`${what} claims ${n < 0 ? 'more than 2^53' : formatBytes(n)} array elements (limit ${formatBytes(limits.maxArrayElements)})`);
    // Each element needs at least this many bytes: reject a count the file cannot hold
    // before allocating anything for it.
    const minEl = SCALAR_SIZE[elType] ?? (elType === GgufValueType.STRING ? 8 : 12);
    if (r.offset + n * minEl > r.fileSize) problems.truncated(r.offset + n * minEl);
    const out: GgufValue[] = new Array(n);
    if (elType === GgufValueType.STRING) await this.readStrings(out, what);
    else if (elType === GgufValueType.ARRAY) {
      for (let i = 0; i < n; i++) out[i] = (await this.readValue(elType, `${what}[${i}]`, depth + 1)).value;
    } else {
      const sz = minEl;
      for (let i = 0; i < n; i++) {
        if (!r.has(sz)) await r.ensure(Math.min(sz * (n - i), CHUNK - (CHUNK % sz)));
        out[i] = this.readScalar(elType);
      }
    }
    return { value: out, elementType: elType as GgufValueType };
  }

  /** Fills `out` with strings: a vocabulary is hundreds of thousands of them, hence the inline path for those already buffered. */
  private async readStrings(out: GgufValue[], what: string): Promise<void> {
    const { r, limits } = this;
    for (let i = 0; i < out.length; i++) {
      if (r.has(8)) {
        const save = r.pos;
        const len = r.u64Safe();
        if (len >= 0 && r.has(len) && len <= limits.maxStringBytes) {
          out[i] = r.str(len);
          continue;
        }
        r.pos = save;
      }
      out[i] = await this.readString(`${what}[${i}]`);
    }
  }

  /** A fixed-size value whose bytes are buffered. */
  private readScalar(type: number): GgufValue {
    const r = this.r;
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
  }
}
