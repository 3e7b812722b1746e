// One window of the two-window storm of `npm run soak` (longSoak.ts), in a process of its own as a
// VS Code window's extension host is: connects to the shared worker at the address it is given,
// loads the pair, types for the time asked and sends its figures back to its parent.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_SPECULATION } from '../../src/inference/inferenceSession';
import type { ModelSettings } from '../../src/shared/settings';
import type { SharedWorkerAddress } from '../../src/worker/sharedWorker';
import { WorkerClient } from '../../src/worker/workerClient';
import { typingStorm } from '../support/typingStorm';

export interface StormWindowTask {
  workerPath: string;
  address: SharedWorkerAddress;
  models: ModelSettings;
  /** A source file typed character by character, and two more open in the window. */
  typedFile: string;
  openFiles: string[];
  durationMs: number;
  warmupMs: number;
}

process.once('message', async (task: StormWindowTask) => {
  const unhandled: unknown[] = [];
  process.on('unhandledRejection', (reason) => unhandled.push(reason));
  const client = new WorkerClient({ workerPath: task.workerPath, shared: task.address, env: { DRAFTLINE_SHARED_IDLE_MS: '0' } });
  try {
    const info = await client.request('load', { models: task.models, speculation: DEFAULT_SPECULATION });
    // Both windows wait for each other here, so that the storms overlap from their first keystroke.
    process.send!({ kind: 'loaded', sharedWith: info.sharedWith ?? null, pid: client.pid });
    await new Promise<void>((resolve) => process.once('message', () => resolve()));
    const openDocuments = Object.fromEntries(task.openFiles.map((f) => [`file:///soak/${path.basename(f, '.txt')}`, fs.readFileSync(f, 'utf8')]));
    const figures = await typingStorm({ client, text: fs.readFileSync(task.typedFile, 'utf8'), durationMs: task.durationMs, keyIntervalMs: 50, warmupMs: task.warmupMs, openDocuments });
    process.send!({ kind: 'figures', figures, unhandled: unhandled.length });
  } catch (error) {
    process.send!({ kind: 'error', message: (error as Error).message });
  } finally {
    client.dispose();
    process.disconnect();
  }
});
