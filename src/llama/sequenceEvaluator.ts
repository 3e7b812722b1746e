import type { RankedNext, GreedyEvaluator } from '../speculation/greedyEvaluator';
import type { Token } from '../shared/decoding';
import type { EvaluatorPath } from './evaluatorPaths';

/**
 * What the session decodes a KV sequence with: LlamaSequenceEvaluator on node-llama-cpp's context, or
 * UnifiedSequenceEvaluator on a context of Draftline's own with one KV stream (where the target
 * verifies token trees: llama/unifiedContext.ts). Both give the same greedy tokens; a prompt state
 * saves and loads its cells through either.
 */
export interface SequenceEvaluator extends GreedyEvaluator {
  appendRanked(input: readonly Token[], outputs: number, top: number, withProbabilities?: boolean): Promise<RankedNext[]>;
  /** Forgets everything (after an error left the cache unknown). */
  reset(): Promise<void>;
  saveState(file: string): Promise<number>;
  loadState(file: string): Promise<void>;
  dispose(): Promise<void>;
  /** How its greedy tokens are read (evaluatorPaths.ts). */
  readonly path: EvaluatorPath;
  /** Tokens it evaluated (prompts and steps), and its evaluations. */
  readonly evaluatedTokens: number;
  readonly evaluations: number;
}
