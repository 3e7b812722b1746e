// Types of llamaSource.mjs (plain JavaScript, so that build-native.mjs runs with node alone) for the tests.
export function llamaSourceInfo(repo: string): { library: string; release: string; bundle: string };
export function extractFromLlamaBundle(repo: string, dir: string, paths: readonly string[], marker: string): string;
