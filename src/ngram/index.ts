export type { NgramMatch, NgramSizes } from './types';
export { findInSequence, type SequenceSearchOptions } from './findInSequence';
export { NgramIndex, type NgramIndexOptions, type NgramIndexStats, type LookupOptions, type TextEdit } from './ngramIndex';
