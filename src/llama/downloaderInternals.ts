/**
 * The URL node-llama-cpp resolved an `hf:user/repo:quant` URI to (through the hub's manifest). The
 * downloader keeps it on an internal field (`_modelUrl` in 3.21.1 and 3.22.1); if a later version drops it,
 * such downloads go unverified rather than fail.
 */
export function resolvedUrlOf(downloader: unknown): string | null {
  const url = (downloader as { _modelUrl?: unknown })._modelUrl;
  return typeof url === 'string' && /^https?:\/\//i.test(url) ? url : null;
}
