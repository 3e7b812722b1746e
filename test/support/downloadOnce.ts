// One download in a process of its own (see downloads.test.ts): prints the outcome as JSON, then
// stays alive a while so that a stray unhandled rejection would show as a crash.
import type { DownloadError } from '../../src/models/downloadIndex';
import { downloadModels } from '../../src/inference/modelDownloader';

const [uri, dirPath] = process.argv.slice(2);
const started = Date.now();
downloadModels([uri], { dirPath }).then(
  (files) => finish({ files }),
  (error: DownloadError) => finish({ code: error.code, message: error.message }),
);

function finish(result: Record<string, unknown>): void {
  setTimeout(() => {
    console.log(JSON.stringify({ ...result, aliveAfterMs: 2500, elapsedMs: Date.now() - started }));
  }, 2500);
}
