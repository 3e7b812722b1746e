// What the worker tells a window about itself (its `diagnostics` method, Show Stats): its memory, its
// generations, the n-gram index, its clients and loaded models, and that window's KV sequences and
// next-edit model as the window sees them (its own prompt states named, other windows' not).
import type { InferenceSession } from '../inference/inferenceSession';
import type { KvSequencesReport } from '../shared/backendInfo';
import type { WorkerDiagnostics } from './protocol';
import { type Connection, type GenerationFigures, ownerPrefix } from './scheduler';

/** What the worker process knows that its diagnostics report. */
export interface WorkerFigures {
  /** Every loaded pair's session. */
  sessions: InferenceSession[];
  generations: GenerationFigures;
  clients: number;
}

export async function diagnosticsFor(connection: Connection, worker: WorkerFigures): Promise<WorkerDiagnostics> {
  const memory = process.memoryUsage();
  const stats = worker.sessions.map((s) => s.documents.stats());
  return {
    rssBytes: memory.rss,
    heapUsedBytes: memory.heapUsed,
    completions: worker.generations.completed,
    maxConcurrentGenerations: worker.generations.maxConcurrent,
    index:
      stats.length === 0
        ? null
        : {
            documents: stats.reduce((n, s) => n + s.documents, 0),
            chars: stats.reduce((n, s) => n + s.indexedChars, 0),
            pending: stats.reduce((n, s) => n + s.pendingDocuments, 0),
            tokenizedChars: stats.reduce((n, s) => n + s.tokenizedChars, 0),
          },
    clients: worker.clients,
    loadedModels: worker.sessions.length,
    kvSequences: kvSequencesSeenBy(connection),
    nextEditModel: await nextEditModelSeenBy(connection),
  };
}

/** The KV sequences of a window's models as that window sees them: its own prompt states named, other windows' not. */
function kvSequencesSeenBy(connection: Connection, of?: KvSequencesReport): WorkerDiagnostics['kvSequences'] {
  const session = connection.models?.session;
  if (!session) return null;
  const { sequences, evictions, saved } = of ?? session.sequences();
  const mine = ownerPrefix(connection);
  return {
    evictions,
    saved,
    sequences: sequences.map(({ owner, tokens, bytes }) => ({
      owner: owner === null ? null : owner.startsWith(mine) ? `this window · ${owner.slice(mine.length)}` : owner.startsWith('window ') ? 'another window' : owner,
      tokens,
      bytes,
    })),
  };
}

/** The next-edit model of a window's models, its KV sequences' owners named as kvSequencesSeenBy names them. */
async function nextEditModelSeenBy(connection: Connection): Promise<WorkerDiagnostics['nextEditModel']> {
  const report = await connection.models?.session?.nextEdits.models.report();
  if (!report?.sequences) return report ?? null;
  return { ...report, sequences: kvSequencesSeenBy(connection, { evictions: 0, sequences: report.sequences })!.sequences };
}
