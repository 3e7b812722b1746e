/** Model file problems, each with a code a caller can act on and a message that names the file. */

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
