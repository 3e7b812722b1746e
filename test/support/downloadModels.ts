import * as path from 'node:path';
import { writeNotGguf } from './ggufWriter';
import { ensureTestModel } from './models';

/**
 * The files the download tests serve from a local server: a target and a draft, a bigger model for
 * slow and dropped transfers (all cached in test-output/models), and a text file named .gguf.
 */
export async function downloadTestModels(outDir: string): Promise<{ model: string; draft: string; big: string; text: string }> {
  const model = await ensureTestModel('download-target', { seed: 61, dModel: 64, nLayers: 2, nHeads: 4, ffn: 128 });
  const draft = await ensureTestModel('download-draft', { seed: 62, dModel: 32, nLayers: 1, nHeads: 2, ffn: 64 });
  const big = await ensureTestModel('download-big', { seed: 63, dModel: 256, nLayers: 4, nHeads: 4, ffn: 512 });
  const text = path.join(outDir, 'text.gguf');
  await writeNotGguf(text, 'this is not a model\n'.repeat(100));
  return { model, draft, big, text };
}
