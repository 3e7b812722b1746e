// node-llama-cpp's types for this CommonJS code (the library is ESM-only, loaded with import() at
// run time): type imports with resolution-mode "import", in the import-type form the linter parses.
export type Llama = import('node-llama-cpp', { with: { 'resolution-mode': 'import' }}).Llama;
export type LlamaContext = import('node-llama-cpp', { with: { 'resolution-mode': 'import' }}).LlamaContext;
export type LlamaContextSequence = import('node-llama-cpp', { with: { 'resolution-mode': 'import' }}).LlamaContextSequence;
export type LlamaModel = import('node-llama-cpp', { with: { 'resolution-mode': 'import' }}).LlamaModel;
export type LlamaGpuType = import('node-llama-cpp', { with: { 'resolution-mode': 'import' }}).LlamaGpuType;
export type LlamaToken = import('node-llama-cpp', { with: { 'resolution-mode': 'import' }}).Token;
