// What llama-server tells of the model it serves, so that its prompts use the template the local
// path would choose (prompt/templates.ts chooseTemplate, from the model's vocabulary) instead of a
// guess from the model's name (llama-server's is a file path, e.g. draftline-code-target.gguf).
//
// In this llama.cpp version (tools/server/server-context.cpp) GET /props names the model (path,
// alias), its chat template, its BOS and EOS texts and the build, but not its fill-in-the-middle
// tokens, and /v1/models adds only sizes. The server shows them elsewhere:
// - POST /infill answers 501 when the model has no FIM tokens (llama.cpp's fim_pre/suf/mid ids,
//   from the GGUF metadata or its known token texts); otherwise its answer's `prompt` is the prompt
//   it built, special tokens written as text: [BOS][repo-level header]<pre><suf><mid> for an empty
//   prefix and suffix, so its last three tokens are the FIM tokens (in the server's default PSM order).
// - POST /tokenize with `parse_special` and `with_pieces` turns a special token's text into that one
//   token: it says which of the known families' special tokens (repo and file tokens too) the
//   vocabulary has, with their ids.
// Those texts and ids are the vocabulary chooseTemplate reads locally.
import { chooseTemplate, TEMPLATE_SPECS, type TemplateSpec, templateSpec } from '../prompt/templates';
import { ServerError } from './http';
import type { ServerHttp, TemplateChoice } from './serverApi';

interface Piece {
  id: number;
  /** Bytes that are not valid UTF-8 come as an array of numbers. */
  piece: string | number[];
}

/** Said in Show Stats when the template came from the server. */
export const FROM_VOCABULARY = "chosen from the model's vocabulary as llama-server reports it: its FIM tokens in /infill's prompt, the others through /tokenize";

/**
 * The template for the model llama-server serves, or null when the server does not say (not a
 * llama-server, a proxy that forwards only some routes). `at` places a route (the server's root,
 * which is not always the endpoint: an OpenAI endpoint setting may end with /v1). A server that
 * cannot be reached now throws, so that the load tries again.
 */
export async function llamaServerTemplate(http: ServerHttp, at: (route: string) => string | URL): Promise<TemplateChoice | null> {
  let check: { prompt?: unknown };
  try {
    check = (await http.post(at('/infill'), { input_prefix: '', input_suffix: '', n_predict: 0, cache_prompt: false }, 'fill-in-the-middle check')) as typeof check;
  } catch (error) {
    if (!(error instanceof ServerError) || error.transient) throw error;
    // 501: "Infill is not supported by this model": no FIM tokens, the text before the cursor alone (as locally).
    if (error.status === 501) return { spec: templateSpec('prefix-only'), why: "llama-server's /infill says the model has no fill-in-the-middle tokens" };
    return null;
  }
  if (typeof check?.prompt !== 'string') return null;
  const tokenize = async (content: string): Promise<Piece[] | null> => {
    try {
      const answer = (await http.post(at('/tokenize'), { content, add_special: false, parse_special: true, with_pieces: true }, 'tokenizer check')) as { tokens?: unknown };
      const tokens = Array.isArray(answer?.tokens) ? (answer.tokens as Piece[]) : null;
      return tokens?.every((t) => typeof t?.id === 'number') ? tokens : null;
    } catch (error) {
      if (!(error instanceof ServerError) || error.transient) throw error;
      return null;
    }
  };
  const built = await tokenize(check.prompt);
  if (!built || built.length < 3) return null;
  const [pre, suf, mid] = built.slice(-3) as [Piece, Piece, Piece];
  const known = await tokenize(SPECIAL_TEXTS.join('\n'));
  if (!known) return null;
  // The vocabulary as far as it matters here: the special tokens' texts at their ids.
  const tokens: string[] = [];
  for (const t of [...known, ...built]) if (typeof t.piece === 'string' && tokens[t.id] === undefined) tokens[t.id] = t.piece;
  const template = chooseTemplate({ tokens, fim: { prefix: pre.id, suffix: suf.id, middle: mid.id } });
  let spec: TemplateSpec = template.spec;
  if (template.family === 'generic-fim') {
    // No known family: the model's own FIM tokens, spelled as the server writes them.
    if (typeof pre.piece !== 'string' || typeof suf.piece !== 'string' || typeof mid.piece !== 'string') return null;
    spec = { ...spec, prefix: pre.piece, suffix: suf.piece, middle: mid.piece };
  }
  return { spec, why: FROM_VOCABULARY };
}

/** Every special token text a known family's template names (one /tokenize call checks them all). */
const SPECIAL_TEXTS = [...new Set(TEMPLATE_SPECS.flatMap((s) => [s.prefix, s.suffix, s.middle, s.repoName, s.fileSep].flatMap((t) => (t === undefined ? [] : typeof t === 'string' ? [t] : [...t]))))];
