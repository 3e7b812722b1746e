import type { FileHandle } from 'node:fs/promises';

/** Bytes read from the file at a time (a buffer grows past it only for a longer single value). */
export const CHUNK = 1 << 20;

/**
 * Little-endian reads from a file handle through a buffer refilled a chunk at a time, so a
 * multi-GB model costs only the bytes read. Callers `ensure` bytes before reading them; the reads
 * themselves do not check.
 */
export class ChunkReader {
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
