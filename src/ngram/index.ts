export type { NgramMatch, NgramSizes } from './types';
export { findInSequence, type SequenceSearchOptions } from './findInSequence';
export { NgramIndex, type NgramIndexOptions, type NgramIndexStats, type LookupOptions, type TextEdit } from './ngramIndex';
export { HISTORY_INSPECTED, HistoryIndex, type IndexOccurrence, indexOccurrences, type SuffixMatches, type SuffixMatchOptions, suffixMatches } from './suffixMatches';
