// The FIM prompt of a completion on the session's target: prompt/fimPrompt.ts laid out within the
// room a KV sequence leaves, with the extra context of other files (prompt/contextBlock.ts), whose
// chunks are tokenized once (the same ones come with every keystroke) and indexed for n-gram
// speculation. InferenceSession decodes from it; its own file stays about the decode.
import type { NgramIndex } from '../ngram';
import { buildPromptContext } from '../prompt/contextBlock';
import { buildPrompt, type PromptLayout, type PromptVocabulary, splitTrailingBlank } from '../prompt/fimPrompt';
import type { PromptTemplate } from '../prompt/templates';
import type { CompletionRequest } from '../shared/completion';
import type { Token } from '../shared/decoding';
import type { GenerationStats } from '../shared/generationStats';
import { clampMaxTokens } from '../stopping/stopRules';
import type { LoadedModel } from './loadedPair';

/** N-gram index keys of extra-context chunks (documents are keyed by their uri). */
export const EXTRA_CONTEXT_KEY = 'extra-context:';

/** What a prompt is laid out from. */
export type PromptRequest = Pick<CompletionRequest, 'prefix' | 'prefixLine' | 'suffix' | 'maxTokens' | 'extraContext' | 'languageId'>;

export class CompletionPrompts {
  /** How the FIM prompt is split (see PromptLayout); the benchmark compares both. */
  layout: PromptLayout = 'lineAnchored';
  /** Tokens of extra-context text, cached: the same chunks come with every keystroke. */
  private readonly chunkTokens = new Map<string, Token[]>();

  constructor(
    private readonly target: LoadedModel,
    private readonly template: PromptTemplate,
    private readonly documents: NgramIndex,
  ) {}

  get vocabulary(): PromptVocabulary {
    const info = this.target.info;
    return {
      tokenize: (text) => this.target.model.tokenize(text, false),
      bos: info.addBos && info.bos !== null ? info.bos : null,
      fim: info.fim,
      template: this.template,
    };
  }

  /** The prompt's tokens and what its extra context showed (for the completion's stats), with room for the output and a proposal of `maxProposal`. */
  tokens(request: PromptRequest, maxProposal: number): { tokens: Token[]; extraContext: GenerationStats['extraContext'] } {
    const maxTokens = clampMaxTokens(request.maxTokens);
    // Every sequence holds the same number of cells.
    const capacity = this.target.evaluator.capacity;
    const budget = capacity - maxTokens - maxProposal - 2;
    if (budget < 8) throw new Error(`context size ${capacity} is too small for ${maxTokens} new tokens`);
    const extra = request.extraContext;
    // The file's own text matters most: other files get at most a third of the prompt.
    const context = extra ? buildPromptContext(this.template, this.tokenizeChunk, extra, Math.min(extra.maxTokens, Math.floor(budget / 3)), request.languageId) : undefined;
    const tokens = buildPrompt(this.vocabulary, splitTrailingBlank(request.prefix).prefix, request.suffix, budget, { layout: this.layout, context, prefixLine: request.prefixLine }).tokens;
    const extraContext = context?.files ? { files: context.files, tokens: context.beforePrompt.length + context.afterPrefixToken.length, repoLevel: context.beforePrompt.length > 0 } : undefined;
    return { tokens, extraContext };
  }

  /**
   * The extra context's chunks go into the n-gram index too (as llama.vscode's do), under their own
   * keys: they stay there after their files are closed, as long as the ring keeps them. Indexed only
   * when a chunk's text changed since the last request.
   */
  indexExtraContext(request: CompletionRequest): void {
    for (const file of request.extraContext?.files ?? []) {
      const key = `${EXTRA_CONTEXT_KEY}${file.path}`;
      if (this.documents.documentText(key) !== file.text) this.documents.setDocument(key, file.text);
    }
  }

  private readonly tokenizeChunk = (text: string): Token[] => {
    let tokens = this.chunkTokens.get(text);
    if (!tokens) {
      tokens = this.target.model.tokenize(text, false) as Token[];
      if (this.chunkTokens.size >= 128) this.chunkTokens.delete(this.chunkTokens.keys().next().value!);
      this.chunkTokens.set(text, tokens);
    }
    return tokens;
  };
}
