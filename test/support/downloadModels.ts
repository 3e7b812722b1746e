import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeNotGguf } from '../../testbed/ggufWriter';
import { type ServedFile, sha256Of, startModelServer } from './modelServer';
import { ensureTestModel } from '../../testbed/models';

export interface DownloadFiles {
  model: string;
  draft: string;
  /** A bigger model, for slow and dropped transfers. */
  big: string;
  /** A text file named .gguf. */
  text: string;
  /** The target with other bytes of the same size (sha256 check). */
  tampered: string;
}

/**
 * A fresh `outDir` and a local server of the files the download tests fetch (the models cached in
 * test-output/models): a target and a draft, a slow big one, a text file posing as a model, and a
 * hub path (hf:user/repo/file.gguf resolves to <endpoint>/user/repo/resolve/main/file.gguf; its
 * redirect announces the sha256) and one serving other bytes than it announces, plus the routes a
 * test adds.
 */
export async function startDownloadServer(outDir: string, extraRoutes: (files: DownloadFiles) => Record<string, ServedFile> = () => ({})) {
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  const files: DownloadFiles = {
    model: await ensureTestModel('download-target', { seed: 61, dModel: 64, nLayers: 2, nHeads: 4, ffn: 128 }),
    draft: await ensureTestModel('download-draft', { seed: 62, dModel: 32, nLayers: 1, nHeads: 2, ffn: 64 }),
    big: await ensureTestModel('download-big', { seed: 63, dModel: 256, nLayers: 4, nHeads: 4, ffn: 512 }),
    text: path.join(outDir, 'text.gguf'),
    tampered: path.join(outDir, 'tampered.gguf'),
  };
  tamperedCopy(files.model, files.tampered);
  await writeNotGguf(files.text, 'this is not a model\n'.repeat(100));
  const server = await startModelServer({
    '/m/target.gguf': { file: files.model },
    '/m/draft.gguf': { file: files.draft },
    '/m/slow.gguf': { file: files.big, rate: 2_000_000 },
    '/m/text.gguf': { file: files.text },
    // As the hub answers: a redirect carrying the file's sha256.
    '/tester/tiny-repo/resolve/main/tiny-target.gguf': { file: files.model, hub: true },
    // A hub (or mirror) serving other bytes than the hash it announces.
    '/tester/tampered-repo/resolve/main/tiny-target.gguf': { file: files.tampered, hub: sha256Of(files.model) },
    ...extraRoutes(files),
  });
  return { server, ...files };
}

/** A copy of `file` with one byte in every 64 KiB changed: the same size, other bytes everywhere. */
export function tamperedCopy(file: string, out: string): string {
  const bytes = fs.readFileSync(file);
  // Past the GGUF header and metadata (the first 64 KiB): still a model file, only its tensors differ.
  for (let i = 65_536 + 1000; i < bytes.length; i += 65_536) bytes[i] ^= 0xff;
  fs.writeFileSync(out, bytes);
  return out;
}
