/**
 * A bounded, incremental GGUF header reader (node:fs only).
 *
 * It reads the magic, version, metadata key/values and tensor infos of a GGUF file through a
 * file handle, a chunk at a time (chunkReader.ts), so a multi-GB model costs only its header (a few
 * MB, mostly the token array). Every count and length read from the file is checked against hard
 * limits and against the bytes the file actually has before anything is allocated (ggufValues.ts),
 * so a corrupt or hostile file produces a {@link ModelFileError} instead of a huge allocation or a
 * crash. The format itself is described in ggufFormat.ts.
 *
 * Why not @huggingface/gguf: on a local file it zero-fills each 2 MB chunk past the end of the
 * file, so a truncated header parses "successfully" into empty names and zero offsets instead of
 * failing; its limits are fixed constants, its errors plain Errors without a file name or a code,
 * and it would bundle @huggingface/tasks into the extension. Its checks would all be needed again
 * here, so this reader stays.
 */
import { open, stat } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import * as path from 'node:path';
import { ChunkReader } from './chunkReader';
import { describeMagic, formatBytes, magicHint, printableName } from './fileDescriptions';
import { GGML_TYPE_LAYOUT, ggmlTypeName } from './ggmlTypes';
import { DEFAULT_GGUF_LIMITS, type GgufKv, type GgufMetadata, type GgufReadLimits, type GgufTensorInfo, GgufValueType, ggufValueTypeName } from './ggufFormat';
import { type GgufProblems, GgufValueReader } from './ggufValues';
import { ModelFileError } from './modelFileError';

export { ModelFileError, type ModelFileErrorCode } from './modelFileError';
export { GgmlType, ggmlTypeLayout, ggmlTypeName } from './ggmlTypes';
export {
  DEFAULT_GGUF_LIMITS,
  type GgufKv,
  type GgufMetadata,
  type GgufReadLimits,
  type GgufTensorInfo,
  type GgufValue,
  GgufValueType,
  getGgufValue,
  ggufValueTypeName,
} from './ggufFormat';
export { formatBytes, printableName } from './fileDescriptions';

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

/** The errors of one read, naming the file and what was being read when it ended. */
class HeaderProblems implements GgufProblems {
  /** What is being read, for truncation messages. */
  context = 'the GGUF header';
  private readonly base: string;

  constructor(
    private readonly filePath: string,
    private readonly fileSize: number,
  ) {
    this.base = path.basename(filePath);
  }

  truncated(needUpTo: number): never {
    throw new ModelFileError(
      'truncated',
      this.filePath,
      `${this.base} is truncated: the file ends inside ${this.context} (needs bytes up to ${formatBytes(needUpTo)} ` + `but the file has ${formatBytes(this.fileSize)})`,
    );
  }

  invalid(what: string): never {
    throw new ModelFileError('invalid', this.filePath, `${this.base} is not a valid GGUF file: ${what}`);
  }
}

/**
 * Read the GGUF header of filePath: version, metadata and tensor infos. Does not validate the
 * model beyond the container format; see inspectModelFile for that.
 */
export async function readGgufMetadata(filePath: string, limits: Partial<GgufReadLimits> = {}): Promise<GgufMetadata> {
  const lim: GgufReadLimits = { ...DEFAULT_GGUF_LIMITS, ...limits };
  const fileSize = await statModelFile(filePath);

  let fh: FileHandle;
  try {
    fh = await open(filePath, 'r');
  } catch (e) {
    throw new ModelFileError('unreadable', filePath, `Cannot open model file ${filePath}: ${(e as Error).message}`, {
      cause: e,
    });
  }

  const problems = new HeaderProblems(filePath, fileSize);
  try {
    const r = new ChunkReader(fh, fileSize, (needUpTo) => problems.truncated(needUpTo));
    const version = await readMagicAndVersion(fh, r, filePath);
    await r.ensure(16);
    const tensorCount = r.u64Safe();
    const kvCount = r.u64Safe();
    if (tensorCount < 0 || tensorCount > lim.maxTensors)
      problems.invalid(`the header claims ${tensorCount < 0 ? 'more than 2^53' : formatBytes(tensorCount)} tensors (limit ${formatBytes(lim.maxTensors)})`);
    if (kvCount < 0 || kvCount > lim.maxKvs) problems.invalid(`the header claims ${kvCount < 0 ? 'more than 2^53' : formatBytes(kvCount)} metadata keys (limit ${formatBytes(lim.maxKvs)})`);

    const values = new GgufValueReader(r, lim, problems);
    const kv = await readKeyValues(r, values, problems, kvCount);
    const alignment = alignmentOf(kv, problems);
    const tensors = await readTensorInfos(r, values, problems, tensorCount);

    const headerSize = r.offset;
    const dataOffset = Math.ceil(headerSize / alignment) * alignment;
    return { path: filePath, fileSize, version, tensorCount, kvCount, alignment, kv, tensors, headerSize, dataOffset };
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** Checks the magic and returns the version (2 or 3); anything else says what the file seems to be instead. */
async function readMagicAndVersion(fh: FileHandle, r: ChunkReader, filePath: string): Promise<number> {
  const base = path.basename(filePath);
  const fileSize = r.fileSize;
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
  await r.ensure(4);
  const version = r.u32();
  if (version !== 2 && version !== 3) {
    let why: string;
    if (version === 1) why = 'GGUF version 1 is no longer supported by llama.cpp; re-convert the model';
    else if (version === 0 || (version & 0xffff) === 0) why = `version ${version} looks byte-swapped (a big-endian GGUF?); only little-endian versions 2 and 3 are supported`;
    else why = `GGUF version ${version} is not supported (supported: 2 and 3)`;
    throw new ModelFileError('unsupported_version', filePath, `${base} uses an unsupported GGUF version: ${why}`);
  }
  return version;
}

/** The `count` metadata key/values, in file order; a key may appear once and must have a name. */
async function readKeyValues(r: ChunkReader, values: GgufValueReader, problems: HeaderProblems, count: number): Promise<Map<string, GgufKv>> {
  const kv = new Map<string, GgufKv>();
  for (let i = 0; i < count; i++) {
    problems.context = `metadata key #${i}`;
    const key = await values.readString(`the name of metadata key #${i}`);
    if (key.length === 0) problems.invalid(`metadata key #${i} has an empty name`);
    const shownKey = printableName(key);
    if (kv.has(key)) problems.invalid(`metadata key ${shownKey} appears twice`);
    problems.context = `metadata key ${shownKey}`;
    if (!r.has(4)) await r.ensure(4);
    const type = r.u32();
    if (type > GgufValueType.FLOAT64) problems.invalid(`metadata key ${shownKey} has unknown value type ${type}`);
    const { value, elementType } = await values.readValue(type, `metadata key ${shownKey}`, 0);
    const entry: GgufKv = { key, type: type as GgufValueType, value };
    if (elementType !== undefined) entry.elementType = elementType;
    kv.set(key, entry);
  }
  return kv;
}

/** general.alignment (a u32 power of two), 32 when absent. */
function alignmentOf(kv: Map<string, GgufKv>, problems: HeaderProblems): number {
  const al = kv.get('general.alignment');
  if (!al) return 32;
  if (al.type !== GgufValueType.UINT32) problems.invalid(`general.alignment must be a u32 but is a ${ggufValueTypeName(al.type)}`);
  const alignment = al.value as number;
  if (alignment === 0 || (alignment & (alignment - 1)) !== 0) problems.invalid(`general.alignment ${alignment} is not a power of 2`);
  return alignment;
}

/** The `count` tensor infos: unique names, at most 4 dimensions, rows whole blocks of their type. */
async function readTensorInfos(r: ChunkReader, values: GgufValueReader, problems: HeaderProblems, count: number): Promise<GgufTensorInfo[]> {
  const tensors: GgufTensorInfo[] = [];
  const names = new Set<string>();
  for (let i = 0; i < count; i++) {
    problems.context = `the info of tensor #${i}`;
    const name = await values.readString(`the name of tensor #${i}`);
    const shownName = printableName(name);
    problems.context = `the info of tensor ${shownName}`;
    if (names.has(name)) problems.invalid(`tensor ${shownName} appears twice`);
    names.add(name);
    if (!r.has(4)) await r.ensure(4);
    const nDims = r.u32();
    if (nDims > 4) problems.invalid(`tensor ${shownName} has ${nDims} dimensions (at most 4)`);
    await r.ensure(nDims * 8 + 12);
    const dims: number[] = [];
    let elements = 1;
    for (let d = 0; d < nDims; d++) {
      const ne = r.u64Safe();
      if (ne < 0) problems.invalid(`tensor ${shownName} has an absurd dimension`);
      dims.push(ne);
      elements *= ne;
    }
    if (!Number.isSafeInteger(elements)) problems.invalid(`tensor ${shownName} has too many elements (${dims.join(' x ')})`);
    const type = r.u32();
    const offset = r.u64Safe();
    if (offset < 0) problems.invalid(`tensor ${shownName} has an absurd data offset`);
    const layout = GGML_TYPE_LAYOUT[type];
    let byteSize: number | null = null;
    if (layout) {
      const [blockSize, typeSize] = layout;
      if ((dims[0] ?? 1) % blockSize !== 0) problems.invalid(`tensor ${shownName} of type ${ggmlTypeName(type)} has ${dims[0]} elements per row, ` + `not a multiple of the block size ${blockSize}`);
      byteSize = (elements / blockSize) * typeSize;
    }
    tensors.push({ name, dims, type, typeName: ggmlTypeName(type), offset, byteSize, elements });
  }
  return tensors;
}
