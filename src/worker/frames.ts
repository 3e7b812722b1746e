// Messages over a byte stream (the shared worker's socket): each one v8-serialized (what Node's IPC
// does with `serialization: 'advanced'`) behind its length as 4 bytes.
import type { Duplex } from 'node:stream';
import * as v8 from 'node:v8';

/** Larger than any message we send (a document of the index's 4 M-character cap is ~8 MB). */
const MAX_FRAME_BYTES = 256 * 1024 * 1024;

export function writeFrame(stream: Duplex, message: unknown): void {
  const body = v8.serialize(message);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32LE(body.length, 0);
  stream.write(Buffer.concat([head, body]));
}

/** Calls onMessage for each whole message; onError (then nothing more) for a frame that is not one. */
export function readFrames(stream: Duplex, onMessage: (message: unknown) => void, onError: (error: Error) => void): void {
  let chunks: Buffer[] = [];
  let buffered = 0;
  let failed = false;
  stream.on('data', (chunk: Buffer) => {
    if (failed) return;
    chunks.push(chunk);
    buffered += chunk.length;
    while (buffered >= 4) {
      // One buffer only when a whole frame is there: a big message arrives in many chunks.
      if (chunks.length > 1 && chunks[0].length < 4) chunks = [Buffer.concat(chunks)];
      const length = chunks[0].readUInt32LE(0);
      if (length > MAX_FRAME_BYTES) return fail(new Error(`a frame of ${length} bytes`));
      if (buffered < 4 + length) return;
      const all = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      let message: unknown;
      try {
        message = v8.deserialize(all.subarray(4, 4 + length));
      } catch (error) {
        return fail(error as Error);
      }
      const rest = all.subarray(4 + length);
      chunks = rest.length > 0 ? [rest] : [];
      buffered = rest.length;
      onMessage(message);
    }
  });
  const fail = (error: Error) => {
    failed = true;
    chunks = [];
    onError(error);
  };
}
